"""The default ``gpu_memory_utilization`` ``kvlint check`` sizes with, for every version range
of the engine table (``gpu_memory_utilization_by_version``): read through the same lookup
``check`` uses, from the JSON report of a real run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from packaging.version import Version

from kvlint.cli import main
from kvlint.engines import load_engines
from tests.helpers import CONFIGS

QWEN3 = str(CONFIGS / "Qwen--Qwen3-8B.json")


def _inside(spec: object, latest: Version) -> str:
    """A release inside a version range of the table (its lower bound, or one below its
    upper bound)."""
    bounds = [s for s in spec]  # type: ignore[attr-defined]
    low = [Version(s.version) for s in bounds if s.operator == ">="]
    if low:
        return str(low[0])
    high = [Version(s.version) for s in bounds if s.operator == "<"]
    assert high, spec
    return f"{high[0].major}.{high[0].minor - 1}.0"


CASES = [(key, _inside(f.versions, engine.latest), float(f.values["value"]))
         for key, engine in load_engines().items()
         for f in engine.utilization_by_version]


def test_the_table_has_the_vllm_ranges() -> None:
    assert [(v, u) for k, v, u in CASES if k == "vllm"] == [
        ("0.34.0", 1.0), ("0.20.0", 0.92), ("0.19.0", 0.9)]


@pytest.mark.parametrize(("engine", "version", "expected"), CASES)
def test_check_sizes_with_the_versions_default(engine: str, version: str,
                                                expected: float) -> None:
    result = CliRunner().invoke(main, ["check", QWEN3, "--gpu", "H100", "--engine", engine,
                                       "--engine-version", version, "--format", "json",
                                       "--no-plugins", "--isolated"])
    assert result.exit_code in (0, 1), result.output
    capacity = json.loads(result.stdout)["results"][0]["capacity"]
    assert capacity["gpu_memory_utilization"] == expected
    assert load_engines()[engine].gpu_memory_utilization_at(version) == expected


def test_vllm_0_34_without_the_extensible_cache_is_0_92(tmp_path: object) -> None:
    """0.34's 1.0 is the extensible KV cache's; switched off, the fixed default is 0.92
    (vllm/config/cache.py@v0.34.0 DEFAULT_GPU_MEMORY_UTILIZATION)."""
    from pathlib import Path

    path = Path(str(tmp_path)) / "deploy.yaml"
    for flag, expected in (("", 1.0), (', "--no-enable-extensible-kv-cache"', 0.92)):
        path.write_text(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: q\nspec:\n"
            "  template:\n    spec:\n      containers:\n        - name: v\n"
            "          image: vllm/vllm-openai:v0.34.0\n"
            f'          args: ["--model", "Qwen/Qwen3-8B"{flag}]\n', encoding="utf-8")
        result = CliRunner().invoke(main, [
            "lint", str(path), "--gpu", "H100", "--format", "json", "--no-plugins",
            "--isolated", "--offline", "--no-cache", "--model-map", f"Qwen/Qwen3-8B={QWEN3}"])
        assert result.exit_code in (0, 1), result.output
        capacity = json.loads(result.stdout)["results"][0]["capacity"]
        assert capacity["gpu_memory_utilization"] == expected, flag
