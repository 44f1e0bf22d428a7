"""Rules and reporters gathered from the plugin hooks, validated, and looked up by users."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pluggy

from kvlint.diagnostics import Severity
from kvlint.errors import PluginError, UsageError
from kvlint.reporters.base import Reporter
from kvlint.rules.base import DOC_SECTIONS, Rule

CODE_RE = re.compile(r"^[A-Z]{1,6}[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Registry:
    rules: tuple[type[Rule], ...]
    reporters: tuple[type[Reporter], ...]

    @classmethod
    def from_plugins(cls, pm: pluggy.PluginManager) -> Registry:
        rules = [rule for batch in pm.hook.kvlint_rules() for rule in batch]
        reporters = [rep for batch in pm.hook.kvlint_reporters() for rep in batch]
        _validate_rules(rules)
        _validate_reporters(reporters)
        return cls(tuple(sorted(rules, key=lambda r: r.code)),
                   tuple(sorted(reporters, key=lambda r: r.name)))

    def rule(self, key: str) -> type[Rule]:
        """A rule by code (``KV201``, any case) or name (``tp-replicates-kv-heads``)."""
        wanted = key.strip()
        for rule in self.rules:
            if wanted.upper() == rule.code or wanted.lower() == rule.name:
                return rule
        raise UsageError(f"unknown rule {key!r}; 'kvlint rules' lists them")

    def reporter(self, name: str) -> type[Reporter]:
        for reporter in self.reporters:
            if reporter.name == name:
                return reporter
        known = ", ".join(r.name for r in self.reporters)
        raise UsageError(f"unknown format {name!r}; expected one of {known}")

    def _matching(self, selector: str) -> list[type[Rule]]:
        """Rules matched by a code, a code prefix (``KV2``), a name, or ``ALL``."""
        s = selector.strip()
        if s.upper() == "ALL":
            return list(self.rules)
        hits = [r for r in self.rules if r.code.startswith(s.upper()) or r.name == s.lower()]
        if not hits:
            raise UsageError(f"unknown rule or prefix {selector!r}; 'kvlint rules' lists them")
        return hits

    def select(self, select: Sequence[str] | None = None,
               ignore: Iterable[str] = ()) -> tuple[type[Rule], ...]:
        """The active rules: ``select`` (all when None) minus ``ignore``."""
        chosen = set(self.rules) if select is None else {
            r for s in select for r in self._matching(s)}
        for s in ignore:
            chosen -= set(self._matching(s))
        return tuple(r for r in self.rules if r in chosen)


def _validate_rules(rules: Sequence[type[Rule]]) -> None:
    seen: dict[str, type[Rule]] = {}
    for rule in rules:
        where = f"{rule.__module__}.{rule.__qualname__}"
        if not (isinstance(rule, type) and issubclass(rule, Rule)):
            raise PluginError(f"{rule!r} is not a kvlint Rule subclass")
        code, name = getattr(rule, "code", None), getattr(rule, "name", None)
        if not isinstance(code, str) or not CODE_RE.match(code):
            raise PluginError(f"rule {where} has an invalid code {code!r} (like KV201)")
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise PluginError(f"rule {where} has an invalid name {name!r} (kebab-case)")
        if not isinstance(getattr(rule, "severity", None), Severity):
            raise PluginError(f"rule {where} has no Severity")
        doc = rule.documentation()
        missing = [s for s in DOC_SECTIONS if f"## {s}" not in doc]
        if missing:
            raise PluginError(f"rule {where} docstring lacks section(s): {', '.join(missing)}")
        for key in (code, name):
            if key in seen:
                other = seen[key]
                raise PluginError(
                    f"rule {key!r} is registered twice ({other.__module__}.{other.__qualname__} "
                    f"and {where})")
            seen[key] = rule


def _validate_reporters(reporters: Sequence[type[Reporter]]) -> None:
    names: set[str] = set()
    for rep in reporters:
        if not (isinstance(rep, type) and issubclass(rep, Reporter)):
            raise PluginError(f"{rep!r} is not a kvlint Reporter subclass")
        if rep.name in names:
            raise PluginError(f"output format {rep.name!r} is registered twice")
        names.add(rep.name)
