"""Throughput of ``kvlint lint`` on ~2,000 manifests (copies of the fixture corpus) with a warm
Hub cache: without the result cache (``--no-cache``: every file parsed and checked) and
with it (every file unchanged since the previous run).

    python bench/lint_throughput.py [--copies 40] [--runs 5] [--all-models] [--format json]
                                    [--compare CHECKOUT] [--bytecode]

The Hub cache is warmed from a loopback fake Hub (tests/hub_server.py) that serves the
fixture configs under the model ids the corpus names; the lint then runs ``--offline`` as a
pre-commit hook would. Ids without a fixture config stay unresolved (KV902) or uncached (the
run exits 2), as they would for a user without network; their files are never put in the
result cache. ``--all-models``: the fake Hub also serves a stand-in config (Llama-3.1-8B's)
for every id the corpus names without a fixture, so every file can be cached. Rounds are
interleaved (a start-up run on an empty tree, a --no-cache run, a cached run); prints the
median of each, files/s of the whole process and net of the start-up median.
``--compare CHECKOUT``: the rounds also run the kvlint of another checkout (its directory
first on PYTHONPATH; e.g. main before a change) on the same tree, cached and ``--no-cache``.
kvlint is run through the ``kvlint`` script beside this interpreter, as a pre-commit or CI
environment runs it (not through a version manager's shim on ``PATH``).
``--bytecode``: kvlint's bytecode is written once (a temporary ``PYTHONPYCACHEPREFIX``) and
read back, as a pip-installed package (a pre-commit environment) has it; by default the
environment is inherited, and where ``PYTHONDONTWRITEBYTECODE`` is set every run compiles
kvlint from source. Each figure is the median wall time; CPU time (user + system of the
process and its workers) is printed beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hub_server import FakeHub  # noqa: E402

CORPUS = ROOT / "fixtures" / "manifests"
CONFIGS = ROOT / "fixtures" / "configs"
HUB_MODELS = {
    "meta-llama/Llama-3.1-405B-Instruct": "meta-llama--Meta-Llama-3.1-405B.json",
    "meta-llama/Llama-3.3-70B-Instruct": "meta-llama--Llama-3.3-70B-Instruct.json",
    "meta-llama/Meta-Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B.json",
    "meta-llama/Llama-3.1-8B-Instruct": "meta-llama--Meta-Llama-3.1-8B.json",
    "meta-llama/Meta-Llama-3-8B-Instruct": "meta-llama--Meta-Llama-3-8B.json",
    "meta-llama/Llama-3.2-1B-Instruct": "meta-llama--Llama-3.2-1B-Instruct.json",
    "meta-llama/Llama-2-7b-chat-hf": "meta-llama--Llama-2-7b-hf.json",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct":
        "meta-llama--Llama-4-Scout-17B-16E-Instruct.json",
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8":
        "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json",
    "deepseek-ai/DeepSeek-R1": "deepseek-ai--DeepSeek-R1.json",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-ai--DeepSeek-R1.json",
    "google/gemma-7b-it": "google--gemma-7b.json",
    "facebook/opt-125m": "facebook--opt-125m.json",
    "openai/gpt-oss-20b": "openai--gpt-oss-20b.json",
}


STAND_IN = "meta-llama--Meta-Llama-3.1-8B.json"


def warm_cache(cache: Path, extra: tuple[str, ...] = ()) -> None:
    """Download every mapped config (and ``extra`` ids, with a stand-in config) once
    through huggingface_hub from the loopback Hub."""
    from kvlint.loaders.hub import download_config

    models = {**HUB_MODELS, **dict.fromkeys(extra, STAND_IN)}
    with FakeHub() as hub:
        for repo, file in models.items():
            hub.add_repo(repo, {"config.json": (CONFIGS / file).read_bytes()})
        os.environ.update({"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache)})
        for repo in models:
            download_config(repo)


def missing_models(stderr: str) -> tuple[str, ...]:
    """The ids a run's one error line names as not fetched (not in the offline cache)."""
    marker = "could not be fetched from the Hugging Face Hub: "
    if marker not in stderr:
        return ()
    names = stderr.split(marker, 1)[1].split("; first error", 1)[0]
    return tuple(n.strip() for n in names.split(",") if n.strip())


CPU: dict[str, list[float]] = {}
"""CPU seconds of each timed command line, by its label."""


def timed(cmd: list[str], env: dict[str, str], label: str = "") -> float:
    """Seconds ``cmd`` took (it must succeed, or exit 2 only for models not cached); its CPU
    time goes to ``CPU[label]``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.setdefault(label, []).append(after.ru_utime + after.ru_stime - before.ru_utime
                                     - before.ru_stime)
    # exit 2 with one "could not be fetched" line: the models without a fixture
    uncached = proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and \
        "could not be fetched from the Hugging Face Hub" in proc.stderr
    if proc.returncode not in (0, 1) and not uncached and "no manifest files" not in \
            proc.stderr:
        raise SystemExit(f"kvlint lint failed ({proc.returncode}): {proc.stderr[-800:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--all-models", action="store_true",
                        help="serve a stand-in config for ids without a fixture")
    parser.add_argument("--compare", metavar="CHECKOUT", default=None,
                        help="also time the kvlint of this checkout (PYTHONPATH=CHECKOUT)")
    parser.add_argument("--format", default="json",
                        help="the report's format (written to a file) [default: json]")
    parser.add_argument("--bytecode", action="store_true",
                        help="cache bytecode (a temporary PYTHONPYCACHEPREFIX) as an installed "
                             "package has it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = work / "hf-cache"
        tree = work / "manifests"
        for i in range(args.copies):
            shutil.copytree(CORPUS, tree / f"copy{i:03d}")
        (work / "empty").mkdir()
        files = sum(1 for p in tree.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
        env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1",
               "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1", "KVLINT_CACHE_DIR": str(work / "kv")}
        env.pop("KVLINT_NO_CACHE", None)
        if args.bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        prefix = _kvlint_command()
        lint_args = ["lint", "--offline", "--format", args.format, "--output", str(work / "out")]
        base = [*prefix, *lint_args]
        warm_cache(cache)
        if args.all_models:
            probe = subprocess.run([*base, str(CORPUS / "."), "--no-cache"], env=env,
                                   capture_output=True, text=True, check=False)
            warm_cache(cache, missing_models(probe.stderr))
        uncached = [*base, str(tree), "--no-cache"]
        cached = [*base, str(tree)]
        empty = [*base, str(work / "empty")]
        first = timed(cached, env)  # warm-up; fills the result cache
        cached_files = _cached_entries(work / "kv")
        times: dict[str, list[float]] = {"start-up": [], "no-cache": [], "cached": []}
        other = {**env, "PYTHONPATH": str(Path(args.compare).resolve())} \
            if args.compare else None
        compared = [*prefix, *lint_args, str(tree)]
        if other is not None:
            times[f"compare {args.compare}"] = []
            times[f"compare {args.compare} --no-cache"] = []
            timed(compared, other)  # its warm-up
        for _ in range(args.runs):
            times["start-up"].append(timed(empty, env, "start-up"))
            times["no-cache"].append(timed(uncached, env, "no-cache"))
            times["cached"].append(timed(cached, env, "cached"))
            if other is not None:
                name = f"compare {args.compare}"
                times[name].append(timed(compared, other, name))
                name = f"{name} --no-cache"
                times[name].append(timed([*compared, "--no-cache"], other, name))
        startup = statistics.median(times["start-up"])
        startup_cpu = statistics.median(CPU["start-up"])
        bytecode = "bytecode cached" if args.bytecode else (
            "no bytecode cache" if env.get("PYTHONDONTWRITEBYTECODE") else "bytecode as found")
        print(f"{files} files ({cached_files} in the result cache), {args.runs} interleaved "
              f"rounds, --format {args.format}, python {sys.version.split()[0]}, "
              f"{os.cpu_count()} cores, {bytecode}"
              f"{', all models served' if args.all_models else ''}")
        print(f"  first run, filling the cache: {first:.2f} s")
        print(f"  start-up (empty tree): median {startup:.3f} s (CPU {startup_cpu:.3f} s)")
        for name in [n for n in times if n != "start-up"]:
            median = statistics.median(times[name])
            cpu = statistics.median(CPU[name])
            net = median - startup
            print(f"  {name}: median {median:.3f} s (CPU {cpu:.3f} s) = {files / median:,.0f} "
                  f"files/s (best {files / min(times[name]):,.0f}); net of start-up "
                  f"{net:.3f} s = {files / net if net > 0 else float('inf'):,.0f} files/s")


def _kvlint_command() -> list[str]:
    """The ``kvlint`` script installed beside this interpreter (as a pre-commit or CI
    environment runs it; a version manager's shim on ``PATH`` would add its own start-up),
    else ``python -m kvlint``."""
    script = Path(sysconfig.get_path("scripts")) / "kvlint"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "kvlint"]


def _cached_entries(directory: Path) -> int:
    """Entries in the result cache (0 when it holds none)."""
    import pickle

    total = 0
    for file in (directory / "lint").glob("*.pickle"):
        data = file.read_bytes().split(b"\n", 1)[1]
        total += len(pickle.loads(data)[2])  # our own file, written by this run
    return total


if __name__ == "__main__":
    main()
