"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One run; ``tool.driver.rules`` describes every active rule (help and ``helpUri`` to its page
under ``rules/``), and each finding is one result located in the repository: the manifest
line it is about, the ``config.json`` a ``check`` read, or, for a Hub model without a file,
a logical location naming the model.

``partialFingerprints["kvlint/v1"]`` is the SHA-256 (hex) of ``code``, the repository-relative
path (empty without a file), the target's ``ref`` and the rule name, joined by NUL bytes: it
leaves out the line and the numbers in the message, so an alert survives edits that move it
or change its cost. Two results of one run that would share a fingerprint get ``:2``,
``:3``... appended in output order.

This module also holds the location helpers the other CI reporters (github, markdown,
junit) share: paths relative to the repository root (the nearest ancestor of the working
directory holding ``.git``, else the working directory), with forward slashes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvlint import __version__
from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.reporters.base import Reporter
from kvlint.reporters.json_text import indented_json

if TYPE_CHECKING:
    from kvlint.linter import LintRun, ModelResult
    from kvlint.rules.base import Rule

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/kvlint/kvlint"
RULES_BASE_URL = "https://github.com/kvlint/kvlint/blob/main/rules/"
"""``helpUri`` of a built-in rule is ``RULES_BASE_URL + CODE + ".md"`` (the generated page)."""
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "kvlint/v1"
LEVELS: Mapping[Severity, str] = {
    Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
DESCRIPTION_SECTIONS = ("What it does", "Why is this bad?")


# ----------------------------------------------------------------- shared location helpers
def repository_root(cwd: Path | None = None) -> Path:
    """The nearest ancestor of ``cwd`` (default: the working directory) that holds a
    ``.git`` (directory, or file for worktrees and submodules); else ``cwd`` itself."""
    start = Path(os.path.abspath(cwd if cwd is not None else Path.cwd()))
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def relative_path(path: str, root: Path) -> str | None:
    """``path`` (relative to the working directory, or absolute) relative to ``root`` with
    forward slashes; ``None`` when it lies outside ``root``."""
    absolute = Path(os.path.abspath(path))
    for candidate, base in ((absolute, root), (absolute.resolve(), root.resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    return None


def display_path(path: str, root: Path) -> str:
    """The repository-relative path, or ``path`` as given when it lies outside the root."""
    rel = relative_path(path, root)
    return rel if rel is not None else Path(path).as_posix()


@dataclass(frozen=True)
class Where:
    """Where a finding points: a file (``path`` as reported) and a line, or neither (a
    Hub model checked without a file)."""

    path: str | None
    line: int | None
    column: int | None


def locate(result: ModelResult, finding: Finding) -> Where:
    """The finding's own location, else its target's file (a manifest's model line, or the
    ``config.json`` that ``check`` read), else nowhere."""
    if finding.path:
        return Where(finding.path, finding.line, finding.column)
    target = result.target
    if target.path:
        return Where(target.path, target.line, None)
    return Where(None, None, None)


def target_label(result: ModelResult) -> str:
    """``ref`` with ``@revision`` for Hub models; a manifest's ref as it stands."""
    t = result.target
    return t.ref + (f"@{t.revision}" if t.revision and t.kind == "model" and not t.path else "")


def names_model(result: ModelResult) -> bool:
    """Whether the target's ref says something its file path does not (a model id)."""
    t = result.target
    return t.path is None or Path(t.ref) != Path(t.path)


# ----------------------------------------------------------------- rule metadata
def _sections(doc: str) -> dict[str, str]:
    """``## Heading`` -> body text of a ruff-style rule docstring."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.splitlines():
        if line.startswith("## "):
            current = out.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def _prose(text: str) -> str:
    """Paragraphs with their line breaks joined (docstrings wrap at 100 columns)."""
    return "\n\n".join(" ".join(p.split()) for p in text.split("\n\n") if p.strip())


def full_description(rule: type[Rule]) -> str:
    sections = _sections(rule.documentation())
    parts = [_prose(sections[s]) for s in DESCRIPTION_SECTIONS if sections.get(s)]
    return "\n\n".join(parts) or rule.summary() or rule.name


def help_uri(rule: type[Rule]) -> str | None:
    """The rule's page in kvlint's repository; ``None`` for third-party rules (their pages
    are not there)."""
    if rule.__module__ == "kvlint" or rule.__module__.startswith("kvlint."):
        return f"{RULES_BASE_URL}{rule.code}.md"
    return None


def _rule_descriptor(rule: type[Rule]) -> dict[str, Any]:
    doc = rule.documentation()
    uri = help_uri(rule)
    markdown = f"# {rule.code} {rule.name}\n\n{doc}"
    if uri:
        markdown += f"\n\n[{rule.code} on GitHub]({uri})"
    descriptor: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary() or rule.name},
        "fullDescription": {"text": full_description(rule)},
        "help": {"text": doc or rule.name, "markdown": markdown},
    }
    if uri:
        descriptor["helpUri"] = uri
    descriptor["defaultConfiguration"] = {"level": LEVELS[rule.severity]}
    descriptor["properties"] = {"tags": ["kvlint"]}
    return descriptor


def _adhoc_descriptor(finding: Finding) -> dict[str, Any]:
    """A finding whose rule is not in ``run.rules`` (not expected; kept valid anyway)."""
    return {"id": finding.code, "name": finding.name,
            "shortDescription": {"text": finding.name},
            "defaultConfiguration": {"level": LEVELS[finding.severity]}}


# ----------------------------------------------------------------- results
def _jsonable(value: Any) -> Any:
    """``data`` as plain JSON (tuples -> lists, non-finite floats and objects -> strings)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(v) for v in items]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def fingerprint(code: str, rel_path: str, ref: str, name: str) -> str:
    """``partialFingerprints["kvlint/v1"]``: see the module docstring."""
    import hashlib

    joined = "\0".join((code, rel_path, ref, name))  # a non-UTF-8 file name: its own bytes
    return hashlib.sha256(joined.encode("utf-8", "surrogateescape")).hexdigest()


def _location(result: ModelResult, finding: Finding, root: Path) -> tuple[dict[str, Any], str]:
    """The SARIF location object and the path that goes into the fingerprint."""
    where = locate(result, finding)
    location: dict[str, Any] = {}
    rel = ""
    if where.path:
        found = relative_path(where.path, root)
        artifact: dict[str, Any]
        if found is not None:
            rel = found
            artifact = {"uri": uri_reference(found), "uriBaseId": SRCROOT}
        else:  # outside the repository: an absolute URI (viewers show it; GitHub skips it)
            rel = Path(os.path.abspath(where.path)).as_posix()
            artifact = {"uri": Path(os.path.abspath(where.path)).as_uri()}
        location["physicalLocation"] = {
            "artifactLocation": artifact,
            # A finding about a whole config.json has no line: GitHub needs a region.
            "region": {"startLine": max(where.line or 1, 1),
                       "startColumn": max(where.column or 1, 1),
                       **({"endLine": finding.end_line} if finding.end_line and where.line
                          and finding.end_line > where.line else {})},
        }
    if names_model(result):
        location["logicalLocations"] = [{
            "name": result.target.ref,
            "fullyQualifiedName": target_label(result),
            "kind": "resource",
        }]
    return location, rel


def _result(result: ModelResult, finding: Finding, root: Path,
            rule_index: Mapping[str, int], seen: dict[str, int]) -> dict[str, Any]:
    location, rel = _location(result, finding, root)
    key = fingerprint(finding.code, rel, result.target.ref, finding.name)
    seen[key] = seen.get(key, 0) + 1
    return {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": LEVELS[finding.severity],
        "message": {"text": finding.message},
        "locations": [location],
        "partialFingerprints": {
            FINGERPRINT_KEY: key if seen[key] == 1 else f"{key}:{seen[key]}"},
        "properties": {
            "target": {"kind": result.target.kind, "ref": result.target.ref,
                       "revision": result.target.revision},
            "data": _jsonable(finding.data),
            **({"suggestion": _jsonable(finding.suggestion.as_dict())}
               if finding.suggestion else {}),
        },
    }


def sarif_log(run: LintRun, root: Path | None = None) -> dict[str, Any]:
    """The SARIF log as plain JSON-ready data (``root``: the repository root, found from
    the working directory by default)."""
    root = root or repository_root()
    rules: list[dict[str, Any]] = []
    rule_index: dict[str, int] = {}
    for rule in sorted(run.rules, key=lambda r: r.code):
        if rule.code not in rule_index:
            rule_index[rule.code] = len(rules)
            rules.append(_rule_descriptor(rule))
    results: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for model_result in run.results:
        for finding in model_result.findings:
            if finding.code not in rule_index:
                rule_index[finding.code] = len(rules)
                rules.append(_adhoc_descriptor(finding))
            results.append(_result(model_result, finding, root, rule_index, seen))
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "kvlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }},
            "invocations": [{"executionSuccessful": not run.has_config_errors,
                             "exitCode": run.exit_code}],
            "originalUriBaseIds": {SRCROOT: {"uri": root_uri(root)}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def uri_reference(rel_path: str) -> str:
    """A repository-relative path as an RFC 3986 relative reference: every byte but
    unreserved characters and ``/`` percent-encoded (spaces, ``%``, ``:``, ``#``, ``?``,
    line breaks, non-ASCII as UTF-8; an undecodable file name byte as itself)."""
    from urllib.parse import quote

    return quote(os.fsencode(rel_path), safe="/")


def root_uri(root: Path) -> str:
    """``file:///…/`` of the repository root (a base URI must end with a slash)."""
    uri = Path(os.path.abspath(root)).as_uri()
    return uri if uri.endswith("/") else uri + "/"


class SarifReporter(Reporter):
    name = "sarif"
    description = "SARIF 2.1.0 for GitHub code scanning (paths relative to the repository root)"

    def render(self, run: LintRun) -> str:
        return indented_json(sarif_log(run)) + "\n"


@hookimpl
def kvlint_reporters() -> Sequence[type[Reporter]]:
    return [SarifReporter]
