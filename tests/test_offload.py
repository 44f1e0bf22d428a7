"""CPU offload of weights (--cpu-offload-gb, kvlint/model/offload.py): the GiB each GPU moves
to CPU memory come off the weights the capacity counts, the embeddings and LM head stay, and
a manifest's option is read as the engine reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.shell_scripts import script_models
from kvlint.model.offload import GIB, offloaded_bytes, resident_bytes
from kvlint.model.weights import WeightSplit
from tests.helpers import CONFIGS

QWEN7 = str(CONFIGS / "Qwen--Qwen2.5-7B.json")


def test_the_layers_go_and_the_tables_stay() -> None:
    # Qwen2.5-7B: 152,064 x 3,584 bf16, untied: two tables of 1.02 GiB (the split's edges)
    table = 152_064 * 3_584 * 2
    split = WeightSplit(15 * GIB, 0, "bfloat16", 2, layers=28, first_stage_bytes=table,
                        last_stage_bytes=table)
    tables = resident_bytes(split, 1)
    assert tables == 2 * 152_064 * 3_584 * 2
    tied = WeightSplit(15 * GIB, 0, "bfloat16", 2, layers=28, first_stage_bytes=table,
                       last_stage_bytes=table, tied=True)
    assert resident_bytes(tied, 2) == 152_064 * 3_584 * 2 // 2
    assert resident_bytes(None, 1) == 0  # a checkpoint sized by its files alone
    weights = 15 * GIB
    assert offloaded_bytes(4, weights, tables) == 4 * GIB
    assert offloaded_bytes(100, weights, tables) == weights - tables  # never the tables
    assert offloaded_bytes(0.5, 0, 0) == 0


def check(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["check", QWEN7, "--gpu", "RTX-4090", "--format",
                                       "json", "--no-plugins", "--isolated", "--offline",
                                       "--engine-version", "0.11.0", *args])
    assert result.exit_code in (0, 1), result.output
    first: dict[str, Any] = json.loads(result.stdout)["results"][0]
    return first


def test_check_counts_the_offloaded_gib_off_each_gpu() -> None:
    plain = check("--max-model-len", "8192")["capacity"]
    offloaded = check("--max-model-len", "8192", "--cpu-offload-gb", "6")["capacity"]
    assert plain["weight_bytes_per_gpu"] - offloaded["weight_bytes_per_gpu"] == 6 * GIB
    assert offloaded["kv_budget_bytes_per_gpu"] - plain["kv_budget_bytes_per_gpu"] == 6 * GIB
    # SGLang offloads the same way (sglang/srt/utils.py maybe_offload_to_cpu)
    sglang = check("--engine", "sglang", "--engine-version", "0.5.5.post3",
                   "--cpu-offload-gb", "6")["capacity"]
    assert plain["weight_bytes_per_gpu"] - sglang["weight_bytes_per_gpu"] == 6 * GIB
    # with pipeline parallelism each stage offloads its own layers: not counted
    staged = check("--pp", "2", "--cpu-offload-gb", "6")
    assert staged["capacity"]["weight_bytes_per_gpu"] == check("--pp", "2")["capacity"][
        "weight_bytes_per_gpu"]


def test_a_manifests_option_is_read(tmp_path: Path) -> None:
    (served,) = script_models("#!/bin/bash\nvllm serve Qwen/Qwen2.5-7B --cpu-offload-gb 10\n",
                              "serve.sh")
    assert served.cpu_offload is not None and served.cpu_offload.value == 10.0
    (sglang,) = script_models("python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B "
                              "--cpu-offload-gb=4.5\n", "serve.sh")
    assert sglang.cpu_offload is not None and sglang.cpu_offload.value == 4.5
