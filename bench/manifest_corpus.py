"""Score kvlint on a held-out corpus of real deployment manifests (issue 28).

The corpus (``bench/manifest_corpus.md`` lists each file's repo@commit) is kept outside the
project: a folder with ``files/`` (the manifests, byte for byte) and ``expected.json`` (what
an expert expects of each file, written by hand before kvlint was run on it). For each file
this compares:

* **served models**: every expected model is found once, with its engine, engine version
  (``unknown`` = kvlint has none), tp, pp, dp, GPUs per replica and GPU type; an expected
  ``null`` is "the file does not say" and matches anything; a model kvlint reports that the
  file does not serve is a miss too;
* **the verdict**: the file gets an error-level finding exactly when an "error" is expected
  (KV902 for an unresolvable model and models the Hub could not be asked about offline do
  not count either way; configs of the fixture corpus are mapped so that the checks that
  need a config run where one is known).

A file is *fully right* when both agree. Run it against any checkout (``--kvlint PATH``
puts that checkout first on ``sys.path``, so a session's starting commit can be measured in
a worktree of its own):

    python bench/manifest_corpus.py --corpus /work/corpus28 [--kvlint /tmp/base] [--json]

Stdlib only, besides kvlint itself; nothing is downloaded (HF_HUB_OFFLINE=1 and an empty
Hub cache).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent / "fixtures" / "configs"


def _norm(text: object) -> str:
    return re.sub(r"[^a-z0-9]", "", str(text).lower())


def _value(v: Any) -> Any:
    """A ServedModel field as plain data: the value, ``None`` when unset, ``"?"`` when the
    manifest leaves it unresolved."""
    if v is None:
        return None
    if hasattr(v, "reason") and not hasattr(v, "value"):
        return "?"
    return getattr(v, "value", v)


def _model_text(v: Any) -> str | None:
    if v is None:
        return None
    if hasattr(v, "reason") and not hasattr(v, "value"):
        return str(getattr(v, "text", "") or "?")
    return str(getattr(v, "value", v))


def served(path: Path) -> list[dict[str, Any]]:
    from kvlint.lint.extraction import extract
    from kvlint.plugins import get_plugin_manager

    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract(path, pm, parsers)
    if not isinstance(found, list):
        return []
    out = []
    for s in found:
        out.append({
            "model": _model_text(s.model),
            "engine": _value(s.engine),
            "engine_version": _value(s.engine_version),
            "tp": _value(s.tp), "pp": _value(s.pp), "dp": _value(s.dp),
            "gpus": _value(s.gpus), "gpu_type": _value(s.gpu_type), "role": s.role,
        })
    return out


def _engine_default(key: str, value: Any) -> Any:
    return 1 if value is None and key in ("tp", "pp", "dp") else value


STRIP_NOTES = False
"""``--strip-notes``: an expected model or engine written with a note in parentheses
(``/model (${MODEL_PATH}; served as X)``) is compared without it, and an expected engine
version written as its tag's ``v0.17.0`` as the release ``0.17.0`` (a scoring rule for
expectations that broke the one-value convention; reported apart). Two naming conventions of
later batches are read the same way: the engine ``llama.cpp`` is kvlint's ``llamacpp``, and a
version ``unknown`` is also an undated tag kvlint reports as written (``latest``, ``main``,
``nightly``)."""
UNDATED = frozenset({"latest", "main", "nightly", "dev"})
_NOTE = re.compile(r"\s+\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$")


def _field_ok(key: str, want: Any, got: Any) -> bool:
    if want is None:
        return True
    if STRIP_NOTES and key in ("model", "engine") and isinstance(want, str):
        want = _NOTE.sub("", want) or want
    if key == "model":
        return got is not None and _norm(want).rstrip("/") == _norm(got).rstrip("/")
    if key == "engine" and STRIP_NOTES and isinstance(want, str):
        return _norm(want) == _norm(got)
    if key == "engine_version":
        if STRIP_NOTES and isinstance(want, str) and re.fullmatch(r"v\d+(\.\d+)+\S*", want):
            want = want[1:]
        if STRIP_NOTES and want == "unknown" and str(got).lower() in UNDATED:
            return True
        return (got in (None, "?")) if want == "unknown" else str(got) == str(want)
    if key == "gpu_type":
        first = _norm(re.split(r"[\s(]", str(want).strip())[0])
        return got is not None and (first in _norm(got) or _norm(got) in _norm(want)
                                    or _same_gpu(str(want), str(got)))
    return _engine_default(key, got) == want


def _same_gpu(want: str, got: str) -> bool:
    """Both name the same GPU of kvlint's table (a node label ``nvidia-2080ti`` and the
    expert's ``RTX 2080 Ti 11GB``)."""
    from kvlint.model.hardware import find_gpu

    names = []
    for text in (want, got):
        try:
            names.append(find_gpu(re.split(r"\s*[(,]", text.strip())[0]).name)
        except (KeyError, ValueError):
            return False
    return names[0] == names[1]


KEYS = ("model", "engine", "engine_version", "tp", "pp", "dp", "gpus", "gpu_type")


def match_models(expected: list[dict[str, Any]], got: list[dict[str, Any]]
                 ) -> tuple[bool, list[str]]:
    """Whether every expected model is found once (greedy on the fields that agree), and
    what differs."""
    left = list(got)
    problems: list[str] = []
    for want in expected:
        scored = sorted(((sum(_field_ok(k, want.get(k), g.get(k)) for k in KEYS), i)
                         for i, g in enumerate(left)), reverse=True)
        if not scored:
            problems.append(f"missed {want.get('model')} ({want.get('engine')})")
            continue
        _, i = scored[0]
        g = left.pop(i)
        bad = [f"{k}: want {want.get(k)!r} got {g.get(k)!r}" for k in KEYS
               if not _field_ok(k, want.get(k), g.get(k))]
        if bad:
            problems.append(f"{want.get('model')}: " + "; ".join(bad))
    problems += [f"extra model {g.get('model')} ({g.get('engine')})" for g in left]
    return not problems, problems


def model_map(expected: list[dict[str, Any]]) -> list[str]:
    args: list[str] = []
    for want in expected:
        name = want.get("model")
        if isinstance(name, str) and (CONFIGS / (name.replace("/", "--") + ".json")).is_file():
            args += ["--model-map", f"{name}={CONFIGS / (name.replace('/', '--') + '.json')}"]
    return args


def verdict(path: Path, expected: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(error codes, warning codes) kvlint reports for ``path``."""
    from click.testing import CliRunner

    from kvlint.cli import main

    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--offline", "--no-cache", "--format", "json",
                                       *model_map(expected)])
    try:
        data = json.loads(result.stdout)
    except ValueError:
        return [f"exit {result.exit_code}: {result.output.strip()[:120]}"], []
    findings = [f for r in data["results"] for f in r["findings"]]
    return ([f["code"] for f in findings if f["severity"] == "error"],
            [f["code"] for f in findings if f["severity"] == "warning"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--kvlint", type=Path, help="a kvlint checkout to measure")
    parser.add_argument("--json", type=Path, help="write per-file results here")
    parser.add_argument("--seen", default="",
                        help="comma-separated file prefixes used while building (reported "
                             "apart from the held-out ones)")
    parser.add_argument("--strip-notes", action="store_true",
                        help="compare expected models and engines without a trailing note in "
                             "parentheses, and a v-prefixed expected version as the release")
    args = parser.parse_args()
    global STRIP_NOTES
    STRIP_NOTES = args.strip_notes
    if args.kvlint:
        sys.path.insert(0, str(args.kvlint.resolve()))
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="kvlint-corpus-hub-")
    os.environ["KVLINT_NO_CACHE"] = "1"
    import kvlint

    expected = json.loads((args.corpus / "expected.json").read_text(encoding="utf-8"))
    seen = tuple(p for p in args.seen.split(",") if p)
    rows = []
    named = Path(tempfile.mkdtemp(prefix="kvlint-corpus-files-"))
    for index, entry in enumerate(expected):
        path = args.corpus / "files" / entry["file"]
        # each file alone in a folder of its own, under the name its repository gives it:
        # formats are told apart by name (Dockerfile.tgi), and the files of other
        # repositories must not be read as its siblings (a Service named vllm beside it)
        original = str(entry.get("path") or "").replace("\\", "/").rsplit("/", 1)[-1]
        (named / str(index)).mkdir()
        copy = named / str(index) / (original or path.name)
        copy.write_bytes(path.read_bytes())
        path = copy
        got = served(path)
        models_ok, problems = match_models(entry["models"], got)
        errors, warnings = verdict(path, entry["models"])
        want_error = any(f.lower().startswith("error") for f in entry["expect_findings"])
        counted = [c for c in errors if c not in ("KV902",)]
        verdict_ok = bool(counted) == want_error
        if not verdict_ok:
            problems.append(f"errors: want {'some' if want_error else 'none'}, got {counted}")
        rows.append({"file": entry["file"], "seen": entry["file"].startswith(seen) if seen
                     else False, "models_ok": models_ok, "verdict_ok": verdict_ok,
                     "false_error": bool(counted) and not want_error,
                     "right": models_ok and verdict_ok, "errors": errors,
                     "warnings": warnings, "problems": problems})
    print(f"kvlint from {Path(kvlint.__file__).parent.parent}")
    for group, members in (("held out", [r for r in rows if not r["seen"]]),
                           ("seen while building", [r for r in rows if r["seen"]])):
        if not members:
            continue
        n = len(members)
        print(f"{group}: {n} files · fully right {sum(r['right'] for r in members)} "
              f"({100 * sum(r['right'] for r in members) / n:.0f} %) · models right "
              f"{sum(r['models_ok'] for r in members)} · verdict right "
              f"{sum(r['verdict_ok'] for r in members)} · false errors "
              f"{sum(r['false_error'] for r in members)}")
    for r in rows:
        if not r["right"]:
            print(f"  {r['file']}: " + " | ".join(r["problems"])[:400])
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
