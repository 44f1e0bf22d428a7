"""Start-up CPU time of kvlint commands as ratios to the bare interpreter and to ruff.

    python bench/startup_ratios.py [--runs 15] [--compare-root OTHER_CHECKOUT]

Each round runs every command once, in turn (interleaved, so load on a shared machine hits
all commands alike); a command's cost is its process's CPU time (user + system, from
``wait4``), the median over the rounds. The first round is a discarded warm-up.

Commands: ``python -c pass``; ``ruff --version`` (if installed); ``python -m kvlint --version``
and ``--help``; ``kvlint check`` of one local config; ``kvlint lint`` of one Kubernetes
manifest whose model (config and weight index) is in the Hugging Face cache (written in
huggingface_hub's cache layout in a temporary ``HF_HUB_CACHE``; ``HF_HUB_OFFLINE=1``).
Plugin autoload stays on (the default), so the entry-point discovery is measured too.
``--compare-root`` adds the same kvlint commands run from another checkout (an older commit,
``git archive``/``git worktree add``), in the same rounds.

By default the commands inherit the environment, so where ``PYTHONDONTWRITEBYTECODE`` is set
(as on the project's VM) every kvlint module is compiled from source on every run.
``--bytecode`` measures an installed package instead: bytecode written once (in the discarded
warm-up round) under a temporary ``PYTHONPYCACHEPREFIX`` and read back afterwards, as
``pip install`` leaves it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "fixtures" / "configs" / "meta-llama--Meta-Llama-3.1-8B.json"
REPO = "meta-llama/Llama-3.1-8B"
COMMIT = "0" * 39 + "1"
MANIFEST = f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command: ["vllm", "serve"]
          args: ["{REPO}", "--tensor-parallel-size", "2", "--max-model-len", "8192"]
          resources:
            limits:
              nvidia.com/gpu: 2
"""


def _env(base: dict[str, str], root: Path) -> dict[str, str]:
    return {**base, "PYTHONPATH": os.pathsep.join(filter(None, [str(root),
                                                               os.environ.get("PYTHONPATH")]))}


def cpu_seconds(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else b""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err.decode()[-500:]}")
    return usage.ru_utime + usage.ru_stime


def _cache(root: Path) -> Path:
    """A Hugging Face cache holding ``REPO``'s config.json, in huggingface_hub's layout."""
    repo = root / "hub" / f"models--{REPO.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    shutil.copy(CONFIG, repo / "snapshots" / COMMIT / "config.json")
    # the weight index a lint with GPUs reads (Llama 3.1 8B's total_size)
    (repo / "snapshots" / COMMIT / "model.safetensors.index.json").write_text(
        '{"metadata": {"total_size": 16060522496}, "weight_map": {}}')
    return root / "hub"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--compare-root", type=Path, default=None)
    parser.add_argument("--bytecode", action="store_true",
                        help="cache bytecode (a temporary PYTHONPYCACHEPREFIX) as an installed "
                             "package has it, instead of inheriting PYTHONDONTWRITEBYTECODE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        manifest = work / "deploy.yaml"
        manifest.write_text(MANIFEST)
        base = {**os.environ, "HF_HUB_CACHE": str(_cache(work)), "HF_HUB_OFFLINE": "1",
                "KVLINT_CACHE_DIR": str(work / "kvlint-cache")}
        if args.bytecode:
            base.pop("PYTHONDONTWRITEBYTECODE", None)
            base["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        env = _env(base, ROOT)
        kvlint = [sys.executable, "-m", "kvlint"]
        commands = {"python -c pass": ([sys.executable, "-c", "pass"], env)}
        ruff = shutil.which("ruff")
        if ruff:
            commands["ruff --version"] = ([ruff, "--version"], env)
        roots = [("", ROOT)] + ([(" [compare]", args.compare_root)] if args.compare_root else [])
        for tag, root in roots:
            run_env = _env(base, root)
            commands.update({
                f"kvlint --version{tag}": ([*kvlint, "--version"], run_env),
                f"kvlint --help{tag}": ([*kvlint, "--help"], run_env),
                f"kvlint check {CONFIG.name}{tag}":
                    ([*kvlint, "check", str(CONFIG), "--format", "json"], run_env),
                f"kvlint lint deploy.yaml (model cached, offline){tag}":
                    ([*kvlint, "lint", str(manifest), "--format", "json"], run_env),
                # a manifest edited in this commit: its result is not in the lint cache
                f"kvlint lint deploy.yaml --no-cache{tag}":
                    ([*kvlint, "lint", str(manifest), "--format", "json"],
                     {**run_env, "KVLINT_NO_CACHE": "1"}),
            })
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(args.runs + 1):
            for name, (cmd, cmd_env) in commands.items():
                seconds = cpu_seconds(cmd, cmd_env, work)
                if round_:
                    samples[name].append(seconds)
    base = statistics.median(samples["python -c pass"])
    ruff_base = statistics.median(samples["ruff --version"]) if ruff else None
    bytecode = "bytecode cached" if args.bytecode else (
        "no bytecode cache" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "bytecode as found")
    print(f"{args.runs} interleaved rounds, CPU time (user+sys) per process, Python "
          f"{sys.version.split()[0]}, {bytecode}\n")
    print("| command | median CPU ms | min | max | x `python -c pass` | x `ruff --version` |")
    print("|---|---|---|---|---|---|")
    for name, values in samples.items():
        median = statistics.median(values)
        vs_ruff = f"{median / ruff_base:.1f}" if ruff_base else "-"
        print(f"| `{name}` | {median * 1000:.0f} | {min(values) * 1000:.0f} | "
              f"{max(values) * 1000:.0f} | {median / base:.2f} | {vs_ruff} |")


if __name__ == "__main__":
    main()
