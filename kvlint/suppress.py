"""Suppressions (docs/design.md §7): inline YAML comments, Kubernetes annotations, file-level
comments and ``per-file-ignores``; and severity overrides from the settings.

- ``# kvlint: ignore[KV201] reason`` on any line of the finding's span (a flag's line and
  its value's line when the value is written on the next line) or the line above one;
- in Python sources (``kvlint scan``), flake8's ``# noqa: KV401`` on the finding's line; it
  needs no reason, and only its KV codes count (a bare ``# noqa``, or one that lists only
  other tools' codes, is left to those tools: it suppresses nothing here and is never
  reported);
- ``# kvlint: ignore-file[KV201,KV206] reason`` anywhere in a file;
- ``ignore-check.kvlint.io/KV201: "reason"`` in an object's annotations (its YAML document);
- ``per-file-ignores = {"deploy/legacy/*.yaml" = ["KV101"]}`` in the settings.

A reason is required: a suppression without one suppresses nothing and is reported (KV901),
as is a suppression that matched no finding.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kvlint.diagnostics import Finding, Severity
from kvlint.linter import ModelResult, Target
from kvlint.model.serving import ServingPlan

_LINE = re.compile(r"#\s*kvlint:\s*ignore\[([^\]]*)\][ \t]*(.*?)\s*$")
_FILE = re.compile(r"#\s*kvlint:\s*ignore-file\[([^\]]*)\][ \t]*(.*?)\s*$")
_NOQA = re.compile(r"#\s*noqa\s*:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.IGNORECASE)
_ANNOTATION = re.compile(
    r"""^\s*["']?ignore-check\.kvlint\.io/([A-Za-z0-9-]+)["']?\s*:\s*(.*?)\s*$""")
_SEPARATOR = re.compile(r"^---(\s|$)")
MARKERS = ("kvlint:", "ignore-check.kvlint.io/", "noqa", "NOQA")
"""A file without any of these has no suppressions (a cheap test before parsing)."""
_KV_NOQA = re.compile(r"noqa[^\n]*kv", re.IGNORECASE)


def may_have_directives(text: str) -> bool:
    """``False`` when :func:`directives` of ``text`` is surely empty, without tokenizing it:
    every directive needs ``kvlint:`` or ``ignore-check.kvlint.io/`` in its line, or a
    ``noqa`` followed on its line by a KV code (``# noqa: E501`` is other tools')."""
    return ("kvlint:" in text or "ignore-check.kvlint.io/" in text
            or _KV_NOQA.search(text) is not None)


@dataclass
class Directive:
    path: str
    line: int
    codes: tuple[str, ...]
    reason: str
    scope: str
    """``line``, ``file``, ``object`` or ``noqa``."""
    span: tuple[int, int] = (0, 0)
    """Lines it covers (inclusive)."""
    used: set[str] = field(default_factory=set)

    def covers(self, finding: Finding) -> bool:
        first = finding.line or 0
        last = max(finding.end_line or first, first)
        return self.span[0] <= last and first <= self.span[1] and any(
            c in (finding.code, finding.name) for c in self.codes)

    @property
    def valid(self) -> bool:
        """Whether it suppresses: it gives a reason (``# noqa`` needs none)."""
        return bool(self.reason) or self.scope == "noqa"

    @property
    def text(self) -> str:
        return ",".join(self.codes)


def _codes(raw: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in raw.split(",") if c.strip())


def _reason(raw: str) -> str:
    return raw.strip().strip("\"'").strip()


def _python_comments(text: str) -> dict[int, str]:
    """Line -> comment text of a Python source (strings and docstrings are not comments)."""
    import io
    import tokenize

    comments: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return comments


def directives(path: str, text: str) -> list[Directive]:
    """Every suppression written in ``text`` (for Python sources, in comments only)."""
    lines = text.splitlines()
    if path.endswith(".py"):
        comments = _python_comments(text)
        lines = [comments.get(number, "") for number in range(1, len(lines) + 1)]
    found: list[Directive] = []
    doc_start, doc_ranges = 1, []
    for number, line in enumerate(lines, 1):
        if _SEPARATOR.match(line):
            doc_ranges.append((doc_start, number - 1))
            doc_start = number + 1
    doc_ranges.append((doc_start, max(len(lines), doc_start)))
    for number, line in enumerate(lines, 1):
        if m := _FILE.search(line):
            found.append(Directive(path, number, _codes(m[1]), _reason(m[2]), "file",
                                   (1, len(lines))))
        elif m := _LINE.search(line):
            found.append(Directive(path, number, _codes(m[1]), _reason(m[2]), "line",
                                   (number, number + 1)))
        elif m := _ANNOTATION.match(line):
            span = next((r for r in doc_ranges if r[0] <= number <= r[1]), (1, len(lines)))
            found.append(Directive(path, number, (m[1],), _reason(m[2]), "object", span))
        if path.endswith(".py") and (m := _NOQA.search(line)):
            codes = tuple(c.upper() for c in re.split(r"[\s,]+", m[1])
                          if c.upper().startswith("KV"))
            if codes:
                found.append(Directive(path, number, codes, "", "noqa", (number, number)))
    return found


def _matches_any(finding: Finding, selectors: Iterable[str]) -> bool:
    return any(finding.name == s.lower() or finding.code.startswith(s.upper())
               for s in selectors)


@dataclass(frozen=True)
class Policy:
    """Settings that change findings after the rules ran."""

    per_file_ignores: Mapping[str, Sequence[str]] = field(default_factory=dict)
    severity: Mapping[str, str] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)
    _paths: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    """Path -> its form relative to the root, resolved once per path for the run (a file
    has many findings)."""

    def _relative(self, path: str) -> str:
        known = self._paths.get(path)
        if known is None:
            known = self._paths[path] = self._resolve_relative(path)
        return known

    def _resolve_relative(self, path: str) -> str:
        root = self._paths.get("\0root")  # a key no path has (NUL is not in file names)
        try:
            if root is None:
                root = self._paths["\0root"] = str(self.root.resolve())
            return Path(path).resolve().relative_to(root).as_posix()
        except (ValueError, RuntimeError, OSError):  # outside the root; a link loop
            return Path(path).as_posix()

    def apply(self, finding: Finding) -> Finding | None:
        if finding.path and self.per_file_ignores:
            rel = self._relative(finding.path)
            for glob, selectors in self.per_file_ignores.items():
                if (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(finding.path, glob)) and \
                        _matches_any(finding, selectors):
                    return None
        level = self.severity.get(finding.code) or self.severity.get(finding.name)
        return replace(finding, severity=Severity(level)) if level else finding


def apply(
    results: Sequence[ModelResult],
    texts: Mapping[str, str],
    *,
    policy: Policy | None = None,
    unused: Finding | None = None,
    read: Mapping[str, list[Directive]] | None = None,
) -> list[ModelResult]:
    """``results`` with suppressed findings removed and severities overridden; KV901
    findings (``unused`` is its template, ``None`` when KV901 is not selected) added for
    suppressions without a reason or that matched nothing. ``texts`` maps each linted file
    (that contains a suppression marker) to its text; ``read`` maps files whose
    :func:`directives` were already read (by ``scan``'s worker processes) to them."""
    policy = policy or Policy()
    by_path = {path: directives(path, text) for path, text in texts.items()}
    by_path.update(read or {})
    out: list[ModelResult] = []
    for result in results:
        kept: list[Finding] = []
        for finding in result.findings:
            changed = policy.apply(finding)
            if changed is None:
                continue
            hits = [d for d in by_path.get(finding.path or "", []) if d.covers(changed)]
            valid = [d for d in hits if d.valid]
            for d in valid:
                d.used.add(changed.code)
            if not valid:
                kept.append(changed)
        same = len(kept) == len(result.findings) and \
            all(a is b for a, b in zip(kept, result.findings, strict=True))
        out.append(result if same else replace(result, findings=tuple(kept)))
    if unused is None:
        return out
    for path, found in by_path.items():
        extra = [_report(unused, d) for d in found if not d.valid or not d.used]
        if not extra:
            continue
        index = next((i for i, r in enumerate(out) if r.target.path == path), None)
        if index is None:
            out.append(ModelResult(Target(path, "manifest", None, path, None), ServingPlan(),
                                   None, tuple(extra)))
        else:
            out[index] = replace(out[index], findings=(*out[index].findings, *extra))
    return out


def _report(template: Finding, d: Directive) -> Finding:
    if not d.valid:
        message = (f"suppression of {d.text} has no reason, so it suppresses nothing: write "
                   f"the reason after the brackets (# kvlint: ignore[{d.text}] why)")
    else:
        message = f"suppression of {d.text} matched no finding: remove it"
    return replace(template, message=message, path=d.path, line=d.line,
                   data={"codes": list(d.codes), "scope": d.scope, "reason": d.reason})
