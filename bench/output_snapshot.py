"""Every fixture through kvlint's commands, outputs kept: a refactor must leave them
byte-identical.

    python bench/output_snapshot.py write /tmp/before.json    # before the change
    python bench/output_snapshot.py compare /tmp/before.json  # after: lists what differs

Paths of the checkout are written as ``<ROOT>``, so two checkouts compare. Runs in-process
(click's test runner) with the network off (``HF_HUB_OFFLINE=1``, an empty
Hugging Face cache, the result caches off), over: each config of ``fixtures/configs``
through ``check`` (vLLM at tp 1 and 8 with an H100, SGLang at tp 4; json and text), every
manifest folder of ``fixtures/`` through ``lint`` (json, text, sarif), ``fixtures/sources``
through ``scan`` and each log of ``fixtures/vllm_logs`` through ``probe --vllm-log``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def commands() -> list[list[str]]:
    out: list[list[str]] = []
    for config in sorted((FIXTURES / "configs").glob("*.json")):
        rel = str(config.relative_to(ROOT))
        for fmt in ("json", "text"):
            out.append(["check", rel, "--tp", "1", "--gpu", "H100", "--format", fmt])
            out.append(["check", rel, "--tp", "8", "--format", fmt])
            out.append(["check", rel, "--engine", "sglang", "--tp", "4", "--format", fmt])
    for folder in ("manifests", "operators", "cases"):
        for fmt in ("json", "text", "sarif"):
            out.append(["lint", f"fixtures/{folder}", "--isolated", "--no-plugins",
                        "--no-cache", "--format", fmt])
    out.append(["scan", "fixtures/sources", "--isolated", "--no-plugins", "--no-cache",
                "--format", "json"])
    for log in sorted((FIXTURES / "vllm_logs").glob("*.log")):
        out.append(["probe", "--vllm-log", str(log.relative_to(ROOT)), "--format", "json"])
    return out


def run_all() -> dict[str, list[object]]:
    from click.testing import CliRunner

    from kvlint.cli import main

    results: dict[str, list[object]] = {}
    for args in commands():
        result = CliRunner().invoke(main, args)
        stdout = result.stdout.replace(ROOT.as_uri(), "<ROOT>").replace(str(ROOT), "<ROOT>")
        results[" ".join(args)] = [result.exit_code, stdout,
                                   type(result.exception).__name__
                                   if result.exception and not isinstance(
                                       result.exception, SystemExit) else None]
    return results


def main() -> int:
    mode, file = sys.argv[1], Path(sys.argv[2])
    os.chdir(ROOT)
    hf = Path(tempfile.gettempdir()) / "kvlint-snapshot-hf"  # a fixed name: it is printed
    shutil.rmtree(hf, ignore_errors=True)
    hf.mkdir()
    os.environ.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(hf), HF_HOME=str(hf),
                      KVLINT_NO_CACHE="1")
    results = run_all()
    shutil.rmtree(hf, ignore_errors=True)
    if mode == "write":
        file.write_text(json.dumps(results, indent=0, sort_keys=True))
        print(f"{len(results)} outputs written to {file}")
        return 0
    before = json.loads(file.read_text())
    differ = sorted(k for k in set(before) | set(results) if before.get(k) != results.get(k))
    for key in differ:
        print(f"DIFFERS: {key}")
    print(f"{len(results) - len(differ)}/{len(results)} outputs byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
