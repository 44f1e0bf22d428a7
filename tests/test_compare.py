"""`kvlint compare` through the CLI on real configs: the ranking basis (bytes of one sequence
per GPU, or sequences counted as `check` counts them) and models it cannot size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS
from tests.hub_server import FakeHub

LLAMA_70B = str(CONFIGS / "meta-llama--Meta-Llama-3.1-70B.json")
LLAMA_8B = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
GEMMA2_9B = str(CONFIGS / "google--gemma-2-9b.json")
DSV2_LITE = str(CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.json")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["compare", *args])


def as_json(*args: str, code: int = 0) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code == code, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def names(data: dict[str, Any]) -> list[tuple[int, str]]:
    return [(r["rank"], Path(r["ref"]).name) for r in data["rows"]]


def test_ranks_by_bytes_per_sequence_with_windows() -> None:
    # gemma-2-9b: 42 layers x 8 KV heads x 256 x 2 (K,V) x 2 B = 344,064 B/token, more than
    # Llama-3.1-70B's 80 x 8 x 128 x 2 x 2 = 327,680; but its 21 sliding layers hold 4,096
    # tokens, so an 8,192-token sequence is 21 x 8,192 x (8,192 + 4,096) = 2,113,929,216 B
    # against Llama's 327,680 x 8,192 = 2,684,354,560 B.
    data = as_json(LLAMA_70B, GEMMA2_9B, DSV2_LITE)
    assert data["schema_version"] == 2 and data["ranked_by"] == "bytes_per_sequence_per_gpu"
    assert names(data) == [(1, "deepseek-ai--DeepSeek-V2-Lite.json"),
                           (2, "google--gemma-2-9b.json"),
                           (3, "meta-llama--Meta-Llama-3.1-70B.json")]
    rows = data["rows"]
    # DeepSeek-V2-Lite: 27 layers x (512 + 64) x 2 B = 31,104 B/token
    assert [r["bytes_per_token"] for r in rows] == [31_104, 344_064, 327_680]
    assert [r["bytes_per_sequence_per_gpu"] for r in rows] == [
        31_104 * 8192, 21 * 8192 * (8192 + 4096), 327_680 * 8192]
    assert [r["factor"] for r in rows] == [
        1.0, 2_113_929_216 / 254_803_968, 2_684_354_560 / 254_803_968]
    assert data["unranked"] == []
    text = run(LLAMA_70B, GEMMA2_9B, DSV2_LITE).stdout
    assert text.splitlines()[0] == (
        "Ranked by KV bytes of one 8,192-token sequence on the fullest GPU at tp=1 (windowed "
        "layers hold their window; recurrent state included); x best = bytes / best bytes.")
    assert "per 8,192-token seq " in text
    assert [line.split()[-1] for line in text.splitlines()[3:]] == ["1.0", "8.3", "10.5"]


def test_per_gpu_bytes_at_tp() -> None:
    # tp=8: Llama's 8 KV heads split (40,960 B/token per GPU); the MLA latent is replicated.
    data = as_json(LLAMA_70B, DSV2_LITE, "--tp", "8", "--context", "4096")
    assert names(data) == [(1, "deepseek-ai--DeepSeek-V2-Lite.json"),
                           (2, "meta-llama--Meta-Llama-3.1-70B.json")]
    assert [r["bytes_per_sequence_per_gpu"] for r in data["rows"]] == [
        31_104 * 4096, 40_960 * 4096]
    assert [r["bytes_per_sequence"] for r in data["rows"]] == [31_104 * 4096, 327_680 * 4096]
    assert "per 4,096-token seq/GPU" in run(LLAMA_70B, DSV2_LITE, "--tp", "8",
                                            "--context", "4096").stdout


def test_gpu_sequences_are_counted_as_check_counts_them() -> None:
    data = as_json(LLAMA_8B, GEMMA2_9B, DSV2_LITE, "--gpu", "H100")
    assert data["ranked_by"] == "max_sequences"
    assert names(data) == [(1, "deepseek-ai--DeepSeek-V2-Lite.json"),
                           (2, "meta-llama--Meta-Llama-3.1-8B.json"),
                           (3, "google--gemma-2-9b.json")]
    rows = data["rows"]
    # vLLM 0.34's profile (1.0, margin); DeepSeek-V2-Lite's peak holds the fused-MoE
    # workspace under the sampler: 8,192 x 6 x (2,048 + 2,816) x 2 B = 478,150,656 B
    assert [r["max_sequences"] for r in rows] == [192, 60, 27]
    assert [r["max_model_len"] for r in rows] == [8192] * 3
    for row in rows:
        checked = CliRunner().invoke(main, ["check", row["ref"], "--gpu", "H100",
                                            "--max-model-len", "8192", "--format", "json",
                                            "--no-plugins"])
        capacity = json.loads(checked.stdout)["results"][0]["capacity"]
        assert capacity["max_sequences"] == row["max_sequences"]
    # --max-model-len moves the count, as it does for check; the context stays the column's.
    longer = as_json(LLAMA_8B, GEMMA2_9B, "--gpu", "H100", "--max-model-len", "8000",
                     "--context", "4096")
    assert [(r["max_model_len"], r["context"]) for r in longer["rows"]] == [(8000, 4096)] * 2
    text = run(LLAMA_8B, "--gpu", "H100", "--max-model-len", "8000").stdout
    assert "concurrent 8,000-token sequences (max_model_len)" in text
    assert "`kvlint check --max-model-len 8000` counts them" in text
    assert "sequences of 8,000" in text


def test_unresolved_config_is_listed_and_exits_2(tmp_path: Path) -> None:
    broken = tmp_path / "config.json"
    broken.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": "many"}))
    result = run(LLAMA_8B, str(broken), "--format", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert names(data) == [(1, "meta-llama--Meta-Llama-3.1-8B.json")]
    [entry] = data["unranked"]
    assert entry["ref"] == str(broken) and entry["reason"] == "unresolved-config"
    assert "num_hidden_layers" in entry["message"]
    assert result.stderr == f"kvlint: error: {entry['message']}\n"
    text = run(LLAMA_8B, str(broken)).stdout
    [line] = [line for line in text.splitlines() if line.startswith("-")]
    assert line.split() == ["-", str(broken), "-", "-", "-", "-", "unresolved", "config"]


def test_hub_model_not_found_and_hub_unavailable(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.add_repo("meta-llama/Llama-3.1-8B", {"config.json": Path(LLAMA_8B).read_bytes()})
    result = run("meta-llama/Llama-3.1-8B", "nosuch/model", GEMMA2_9B, "--format", "json")
    assert result.exit_code == 2, result.output
    data = json.loads(result.stdout)
    assert names(data) == [(1, "Llama-3.1-8B"), (2, "google--gemma-2-9b.json")]
    [entry] = data["unranked"]
    assert entry["ref"] == "nosuch/model" and entry["reason"] == "unresolved-config"
    assert "'nosuch/model' not found" in entry["message"]
    fake_hub.close()  # nothing answers now: the Hub cannot be asked
    offline = run("nosuch/model", GEMMA2_9B, "--offline", "--format", "json")
    assert offline.exit_code == 2
    data = json.loads(offline.stdout)
    assert names(data) == [(1, "google--gemma-2-9b.json")]
    assert [(u["ref"], u["reason"]) for u in data["unranked"]] == [
        ("nosuch/model", "hub-unavailable")]
    assert offline.stderr.startswith("kvlint: error: 1 model could not be fetched from the "
                                     "Hugging Face Hub: nosuch/model; first error: ")
    assert offline.stderr.count("\n") == 1
    text = run("nosuch/model", GEMMA2_9B, "--offline").stdout
    assert text.splitlines()[-1].split()[-2:] == ["Hub", "unavailable"]


def test_tp_the_engine_refuses_is_not_ranked() -> None:
    # 8 KV heads do not split over 3 GPUs; the MLA latent is replicated, so it still sizes.
    data = as_json(LLAMA_8B, DSV2_LITE, "--tp", "3", code=0)
    assert names(data) == [(1, "deepseek-ai--DeepSeek-V2-Lite.json")]
    assert [(Path(u["ref"]).name, u["reason"]) for u in data["unranked"]] == [
        ("meta-llama--Meta-Llama-3.1-8B.json", "tp-refused")]


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_basis_leads_every_table(fmt: str) -> None:
    out = run(GEMMA2_9B, "--gpu", "H200", "--format", fmt).stdout
    assert out.startswith("Ranked by sequences: concurrent 8,192-token sequences "
                          "(max_model_len) in the KV budget of one H200 beside the weights "
                          "at tp=1")
