"""Time ``kvlint scan --package transformers`` (every .py file of the installed package).

    python bench/scan_throughput.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--package", default="transformers")
    args = parser.parse_args()
    from kvlint.source_scanner import package_files

    files = len(package_files(args.package))
    kvlint = shutil.which("kvlint")
    cmd = [kvlint] if kvlint else [sys.executable, "-m", "kvlint"]
    cmd += ["scan", "--package", args.package, "--format", "json", "--isolated",
            "--fail-on", "never"]
    env = {**os.environ, "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    times, findings = [], ""
    for _ in range(args.runs):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"kvlint scan failed: {proc.stderr[-500:]}")
        findings = proc.stdout
    import json

    data = json.loads(findings)
    count = sum(len(r["findings"]) for r in data["results"])
    median = statistics.median(times)
    print(f"{args.package}: {files} files, median {median:.1f} s ({files / median:.0f} files/s) "
          f"over {args.runs} runs; {count} findings in {len(data['results'])} files")


if __name__ == "__main__":
    main()
