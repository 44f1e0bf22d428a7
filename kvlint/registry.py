"""Rules and reporters gathered from the plugin hooks, validated, and looked up by users."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

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
        from kvlint.plugins import describe

        rules: list[type[Rule]] = []
        seen: dict[str, type[Rule]] = {}  # code and name -> rule, of the batches validated
        for impl in pm.hook.kvlint_rules.get_hookimpls():
            try:
                batch: list[type[Rule]] = list(cast("Iterable[type[Rule]]", impl.function()))
                _validate_rules(batch, seen)
            except PluginError as err:
                raise PluginError(f"{describe(impl.plugin_name)}: {err}") from None
            rules.extend(batch)
        reporters: list[type[Reporter]] = []
        for impl in pm.hook.kvlint_reporters.get_hookimpls():
            try:
                batch_r: list[type[Reporter]] = list(
                    cast("Iterable[type[Reporter]]", impl.function()))
                _validate_reporters([*reporters, *batch_r])
            except PluginError as err:
                raise PluginError(f"{describe(impl.plugin_name)}: {err}") from None
            reporters.extend(batch_r)
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

    def _check_selector(self, selector: str) -> str:
        s = selector.strip()
        if s.upper() == "ALL" or any(
                r.code.startswith(s.upper()) or r.name == s.lower() for r in self.rules):
            return s
        raise UsageError(f"unknown rule or prefix {selector!r}; 'kvlint rules' lists them")

    @staticmethod
    def _specificity(rule: type[Rule], selector: str) -> int:
        """How specifically ``selector`` names ``rule``: the matched prefix length (a name
        or a full code is the most specific; ``ALL`` the least); -1 when it does not."""
        s = selector.strip()
        if s.lower() == rule.name:
            return 100
        if s.upper() == "ALL":
            return 0
        return len(s) if rule.code.startswith(s.upper()) else -1

    def select(self, select: Sequence[str] | None = None,
               ignore: Iterable[str] = (), extend_select: Iterable[str] = ()
               ) -> tuple[type[Rule], ...]:
        """The active rules, ruff-style: every rule is decided by the most specific selector
        that matches it (``--select KV2 --ignore KV201`` drops KV201, ``--select KV201
        --ignore KV2`` keeps it); on a tie, ignore wins. ``select`` None means ALL."""
        chosen = [self._check_selector(s) for s in (select if select is not None else ["ALL"])]
        chosen += [self._check_selector(s) for s in extend_select]
        dropped = [self._check_selector(s) for s in ignore]
        active = []
        for rule in self.rules:
            keep = max((self._specificity(rule, s) for s in chosen), default=-1)
            drop = max((self._specificity(rule, s) for s in dropped), default=-1)
            if keep >= 0 and keep > drop:
                active.append(rule)
        return tuple(active)


def _validate_rules(rules: Sequence[type[Rule]], seen: dict[str, type[Rule]]) -> None:
    """Check ``rules`` (one plugin's batch) and add them to ``seen`` (the rules of the
    batches before, by code and name): each rule is checked once, not once per later batch."""
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
