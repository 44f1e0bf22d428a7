"""kvlint.loaders.weight_size: a model whose parameters kvlint cannot count from its config is
still sized when its checkpoint's size is known (a local index, the Hub's index), and is an
error naming why only when neither is there."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.errors import ConfigError
from kvlint.loaders.checkpoint import INDEX_NAME
from kvlint.loaders.weight_size import CheckpointRef, plan_weights
from tests.helpers import CONFIGS
from tests.hub_server import FakeHub

ZAMBA2 = json.loads((CONFIGS / "Zyphra--Zamba2-7B.json").read_text(encoding="utf-8"))
TOTAL = 14_834_114_560  # bytes, as an index's metadata.total_size states them
NEW_ARCH = {"model_type": "brand_new", "architectures": ["BrandNewForCausalLM"],
            "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 32, "vocab_size": 128256, "torch_dtype": "bfloat16"}
"""A config of a type no table knows, without the MLP width a parameter count needs."""


def index(total: int) -> str:
    return json.dumps({"metadata": {"total_size": total}, "weight_map": {}})


def model_dir(tmp_path: Path, config: dict[str, Any], total: int | None) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if total is not None:
        (directory / INDEX_NAME).write_text(index(total), encoding="utf-8")
    return directory / "config.json"


def sized(config: dict[str, Any], path: Path, tp: int = 1, pp: int = 1) -> Any:
    return plan_weights(config, CheckpointRef(str(path), str(path), offline=True), tp=tp,
                        pp=pp, batch=1, defaults=None)


@pytest.mark.parametrize(("config", "why"), [
    (ZAMBA2, "attention and MLP blocks are shared by many layers"),
    (NEW_ARCH, "missing field 'intermediate_size'"),
])
@pytest.mark.parametrize(("tp", "pp"), [(1, 1), (2, 1), (2, 2), (4, 2)])
def test_an_uncountable_model_is_sized_by_its_checkpoint(
        tmp_path: Path, config: dict[str, Any], why: str, tp: int, pp: int) -> None:
    path = model_dir(tmp_path, config, TOTAL)
    weights = sized(config, path, tp, pp)
    per_gpu = math.ceil(TOTAL / (tp * pp))
    assert (weights.total_bytes, weights.per_gpu_bytes, weights.decode_read_per_gpu_bytes) \
        == (TOTAL, per_gpu, per_gpu)
    assert not weights.estimated
    assert weights.source.startswith(f"checkpoint: {path.parent / INDEX_NAME} (split evenly "
                                     "over tp x pp: ")
    assert why in weights.source
    assert weights.split is not None and weights.split.per_gpu(tp, pp) == per_gpu


@pytest.mark.parametrize(("config", "why"), [
    (ZAMBA2, "counting the parameters of 'zamba2' models is not supported: their attention "
             "and MLP blocks are shared by many layers"),
    (NEW_ARCH, "missing field 'intermediate_size'"),
])
def test_without_a_checkpoint_it_is_an_error_naming_why(
        tmp_path: Path, config: dict[str, Any], why: str) -> None:
    path = model_dir(tmp_path, config, None)
    with pytest.raises(ConfigError) as raised:
        sized(config, path)
    assert why in str(raised.value)
    assert str(raised.value).endswith("; nor is its checkpoint's size known (no safetensors "
                                      "index or weights beside the config), so its weights "
                                      "cannot be sized")


def test_check_sizes_a_hub_zamba2_from_its_index(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("Zyphra/Zamba2-7B", {"config.json": json.dumps(ZAMBA2).encode(),
                                           INDEX_NAME: index(TOTAL).encode()})
    result = CliRunner().invoke(main, ["check", "Zyphra/Zamba2-7B", "--gpu", "H100",
                                       "--tp", "2", "--format", "json", "--isolated",
                                       "--no-plugins"])
    assert result.exit_code == 0, result.output
    [found] = json.loads(result.stdout)["results"]
    assert found["capacity"]["weight_bytes_per_gpu"] == TOTAL // 2
    assert found["capacity"]["kv_budget_bytes_per_gpu"] > 0
    text = CliRunner().invoke(main, ["check", "Zyphra/Zamba2-7B", "--gpu", "H100", "--tp", "2",
                                     "--format", "text", "--isolated", "--no-plugins"])
    assert "weights          6.9 GiB per GPU (checkpoint: Zyphra/Zamba2-7B@" in text.stdout
