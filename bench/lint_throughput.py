"""Throughput of ``kvlint lint`` on 1,000 manifests (copies of the fixture corpus) with a warm
Hub cache.

    python bench/lint_throughput.py [--copies 20] [--runs 3]

The Hub cache is warmed from a loopback fake Hub (tests/hub_server.py) that serves the
fixture configs under the model ids the corpus names; the lint then runs ``--offline`` as a
pre-commit hook would. Ids without a fixture config stay unresolved (KV902), as they would
for a user without network. Prints files/s of the whole process (start-up included).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
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


def warm_cache(cache: Path) -> None:
    """Download every mapped config once through huggingface_hub from the loopback Hub."""
    from kvlint.loaders.hub import download_config

    with FakeHub() as hub:
        for repo, file in HUB_MODELS.items():
            hub.add_repo(repo, {"config.json": (CONFIGS / file).read_bytes()})
        os.environ.update({"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache)})
        for repo in HUB_MODELS:
            download_config(repo)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cache = work / "hf-cache"
        warm_cache(cache)
        tree = work / "manifests"
        for i in range(args.copies):
            shutil.copytree(CORPUS, tree / f"copy{i:03d}")
        files = sum(1 for p in tree.rglob("*") if p.suffix in (".yaml", ".yml", ".json"))
        env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1",
               "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1", "KVLINT_CACHE_DIR": str(work / "kv")}
        kvlint = shutil.which("kvlint")
        cmd = [kvlint] if kvlint else [sys.executable, "-m", "kvlint"]
        cmd += ["lint", str(tree), "--offline", "--format", "json", "--output",
                str(work / "out.json")]
        subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm-up
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - start)
            # exit 2 with one "could not be fetched" line: the models without a fixture
            uncached = proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and \
                "could not be fetched from the Hugging Face Hub" in proc.stderr
            if proc.returncode not in (0, 1) and not uncached:
                raise SystemExit(f"kvlint lint failed ({proc.returncode}): {proc.stderr[-800:]}")
        best, median = min(times), statistics.median(times)
        print(f"{files} files, {args.runs} runs: median {median:.2f} s = {files / median:.0f} "
              f"files/s (best {files / best:.0f} files/s); python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
