"""Cold start of ``kvlint check`` as a whole process, against the bare interpreter and the
transformers import it must avoid.

    python bench/cold_start.py [--runs 21] [--fixture fixtures/configs/...json]

Prints a Markdown table of medians (and min/max) in milliseconds. Each run is a fresh process;
the first run of each command is a discarded warm-up (page cache, .pyc files).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FIXTURE = ROOT / "fixtures" / "configs" / "deepseek-ai--DeepSeek-V2.5.json"


def timed(cmd: list[str], runs: int, env: dict[str, str]) -> list[float]:
    subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, check=False)
        samples.append((time.perf_counter() - start) * 1000)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE)
    args = parser.parse_args()
    env = {**os.environ, "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1", "TRANSFORMERS_VERBOSITY": "error"}
    kvlint = shutil.which("kvlint")
    check = [kvlint] if kvlint else [sys.executable, "-m", "kvlint"]
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import transformers'": [sys.executable, "-c", "import transformers"],
        f"kvlint check {args.fixture.name} --format json":
            [*check, "check", str(args.fixture), "--tp", "16", "--format", "json"],
        f"kvlint check {args.fixture.name} (text)":
            [*check, "check", str(args.fixture), "--tp", "16"],
    }
    medians: dict[str, float] = {}
    print(f"runs per command: {args.runs}; python {sys.version.split()[0]}\n")
    print("| command | median ms | min | max |\n|---|---|---|---|")
    for label, cmd in commands.items():
        samples = timed(cmd, args.runs, env)
        medians[label] = statistics.median(samples)
        print(f"| `{label}` | {medians[label]:.0f} | {min(samples):.0f} | {max(samples):.0f} |")
    bare, heavy = list(medians.values())[:2]
    json_run = list(medians.values())[2]
    print(f"\nkvlint --format json: +{json_run - bare:.0f} ms over the bare interpreter "
          f"(target <= 250), {json_run / heavy:.0%} of the transformers import (target < 25%)")


if __name__ == "__main__":
    main()
