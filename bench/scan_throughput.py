"""Time ``kvlint scan --package transformers`` against ``ruff check --select E --no-cache``.

Both run, as fresh processes, on the same installed package (every .py file of it), in
interleaved rounds (kvlint, ruff; then ruff, kvlint; ...) so that a busy machine slows both
alike. Reports the median wall time of each and their ratio (issue 17's target: kvlint at
most 4x ruff), the ratio of the fastest runs (less hurt by other load on a shared machine),
the CPU time of each (children's user + system: all its processes or threads) and the
findings: count and a digest of code, path, line, column and message.

    python bench/scan_throughput.py [--runs 5] [--package transformers] [--baseline DIR]
                                    [--one-process] [--cached]

``--baseline DIR`` also runs ``python -m kvlint`` from another checkout (e.g. main) in each
round and checks that it reports the same findings. ``--one-process`` also times
``scan_files`` without worker processes (``kvlint-1p``, ``baseline-1p``): the CPU cost.
``kvlint`` runs without its result cache (``KVLINT_NO_CACHE=1``); ``--cached`` also times a
scan of the unchanged package with a warm result cache (``kvlint-cached``, its own cache
directory, filled before the rounds) against ruff with its cache (``ruff-cached``) and checks
that the cached scan reports the same findings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ONE_PROCESS = """
import inspect, sys
from kvlint.plugins import get_plugin_manager
from kvlint.registry import Registry
from kvlint.scan.scanner import package_files, scan_files
rules = Registry.from_plugins(get_plugin_manager(load_entry_points=False)).select()
jobs = {"jobs": 1} if "jobs" in inspect.signature(scan_files).parameters else {}
scan_files(package_files(sys.argv[1]), rules, **jobs)
"""
"""``scan_files`` of the package in this one process (``jobs=1`` where there are workers)."""


def _digest(report: str) -> tuple[int, int, str]:
    """(findings, files with findings, sha256 prefix of code/path/line/column/message)."""
    data = json.loads(report)
    rows = [(f["code"], f["path"], f["line"], f["column"], f["message"])
            for r in data["results"] for f in r["findings"]]
    return len(rows), len(data["results"]), hashlib.sha256(
        json.dumps(rows).encode()).hexdigest()[:16]


def _timed(cmd: list[str], env: dict[str, str], cwd: str, ok: tuple[int, ...]
           ) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({proc.returncode}): "
                         f"{proc.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--package", default="transformers")
    parser.add_argument("--baseline", metavar="DIR",
                        help="also time python -m kvlint from this checkout (PYTHONPATH)")
    parser.add_argument("--one-process", action="store_true",
                        help="also time scan_files in one process (no workers): *-1p")
    parser.add_argument("--cached", action="store_true",
                        help="also time kvlint and ruff with a warm cache: *-cached")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as caches:
        _run(args, Path(caches))


def _run(args: argparse.Namespace, caches: Path) -> None:
    from kvlint.scan.scanner import locate_package, package_files

    files = len(package_files(args.package))
    roots = locate_package(args.package)
    ruff = shutil.which("ruff")
    if not roots or ruff is None:
        raise SystemExit(f"needs the {args.package} package and ruff installed")
    scan = ["scan", "--package", args.package, "--format", "json", "--isolated",
            "--fail-on", "never"]
    here = str(Path(__file__).resolve().parents[1])
    base_env = {**os.environ, "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1", "KVLINT_NO_CACHE": "1"}
    # ``python -m`` puts the working directory first on sys.path: run each kvlint in its
    # own checkout so that it imports that checkout's code
    commands: dict[str, tuple[list[str], dict[str, str], str, tuple[int, ...]]] = {
        "kvlint": ([sys.executable, "-m", "kvlint", *scan],
                   {**base_env, "PYTHONPATH": here}, here, (0,)),
        "ruff": ([ruff, "check", "--select", "E", "--no-cache", "--quiet", *roots],
                 base_env, here, (0, 1)),
    }
    if args.baseline:
        baseline = str(Path(args.baseline).resolve())
        commands["baseline"] = ([sys.executable, "-m", "kvlint", *scan],
                                {**base_env, "PYTHONPATH": baseline}, baseline, (0,))
    if args.cached:
        cached_env = {**base_env, "KVLINT_CACHE_DIR": str(caches / "kvlint")}
        del cached_env["KVLINT_NO_CACHE"]
        commands["kvlint-cached"] = ([sys.executable, "-m", "kvlint", *scan],
                                     {**cached_env, "PYTHONPATH": here}, here, (0,))
        commands["ruff-cached"] = ([ruff, "check", "--select", "E", "--cache-dir",
                                    str(caches / "ruff"), "--quiet", *roots],
                                   base_env, here, (0, 1))
        for name in ("kvlint-cached", "ruff-cached"):  # fill the caches
            _timed(*commands[name])
    if args.one_process:
        for name, tree in (("kvlint", here), ("baseline", args.baseline)):
            if tree:
                tree = str(Path(tree).resolve())
                commands[f"{name}-1p"] = ([sys.executable, "-c", ONE_PROCESS, args.package],
                                          {**base_env, "PYTHONPATH": tree}, tree, (0,))
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    digests: dict[str, tuple[int, int, str]] = {}
    order = list(commands)
    for round_ in range(args.runs):
        for name in order if round_ % 2 == 0 else order[::-1]:
            cmd, env, cwd, ok = commands[name]
            wall, cpu, out = _timed(cmd, env, cwd, ok)
            walls[name].append(wall)
            cpus[name].append(cpu)
            if name in ("kvlint", "baseline", "kvlint-cached"):
                digests[name] = _digest(out)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}; "
          f"{args.package}: {files} files; {args.runs} interleaved rounds")
    for name in commands:
        print(f"  {name:11} median wall {statistics.median(walls[name]):6.2f} s "
              f"(min {min(walls[name]):.2f}, max {max(walls[name]):.2f}); "
              f"median CPU {statistics.median(cpus[name]):6.2f} s")
    ratio = statistics.median(walls["kvlint"]) / statistics.median(walls["ruff"])
    rounds = statistics.median(k / r for k, r in zip(walls["kvlint"], walls["ruff"], strict=True))
    best = min(walls["kvlint"]) / min(walls["ruff"])
    print(f"  kvlint / ruff: {ratio:.2f}x (median walls), {rounds:.2f}x (median of per-round "
          f"ratios), {best:.2f}x (fastest runs); target <= 4x on median walls: "
          f"{'met' if ratio <= 4 else 'not met'}; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if "baseline" in walls:
        print(f"  baseline / kvlint: "
              f"{statistics.median(walls['baseline']) / statistics.median(walls['kvlint']):.2f}x")
    for name, (count, results, digest) in digests.items():
        print(f"  {name} findings: {count} in {results} files, digest {digest}")
    if "kvlint-cached" in walls:
        cached = statistics.median(walls["kvlint-cached"])
        print(f"  kvlint-cached / ruff-cached: "
              f"{cached / statistics.median(walls['ruff-cached']):.2f}x; kvlint / "
              f"kvlint-cached: {statistics.median(walls['kvlint']) / cached:.1f}x")
    for name in ("baseline", "kvlint-cached"):
        if name in digests and digests[name] != digests["kvlint"]:
            raise SystemExit(f"{name} reports different findings")


if __name__ == "__main__":
    main()
