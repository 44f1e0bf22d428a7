"""vLLM's LoRA buffers (kvlint.model.lora), counted by hand from the module's formulas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvlint.loaders.shape import resolve_shape
from kvlint.model.lora import LoraSlots, lora_bytes
from kvlint.model.weights import ModelShape

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"


def _shape(name: str) -> ModelShape:
    return resolve_shape(json.loads((CONFIGS / f"{name}.json").read_text()))


LLAMA = "meta-llama--Meta-Llama-3.1-8B"
# Llama-3.1-8B: h 4096, 32 heads of 128, 8 KV heads, MLP 14336, 32 layers, vocab 128256


def _llama_layer(m: int, r: int, tp: int = 1) -> int:
    """Elements of one layer's buffers: qkv (3 slices), o, gate_up (2 slices), down."""
    h, q, kv, width = 4096, 4096 // tp, max(1, 8 // tp) * 128, 14336 // tp
    qkv = 3 * m * r * h + m * r * (q + 2 * kv)
    o = m * r * (4096 // tp) + m * r * h
    gate_up = 2 * m * r * h + m * r * 2 * width
    down = m * r * width + m * r * h
    return qkv + o + gate_up + down


def test_llama_at_0_8_2_counts_layers_embeddings_and_the_extra_vocabulary() -> None:
    m, r, h, vocab, extra = 2, 16, 4096, 128256, 256
    layers = 32 * _llama_layer(m, r)
    embed = m * (vocab + extra) * r + m * h * r + m * extra * h + extra * m * h
    rows = vocab + extra * m  # 128,768: a multiple of 256 already
    head = m * r * h + m * rows * r + m * extra * h + extra * m * h
    got = lora_bytes(_shape(LLAMA), "LlamaForCausalLM", LoraSlots(m, r), tp=1, pp=1,
                     version="0.8.2", model_dtype_bytes=2)
    assert got.per_stage == (2 * (layers + embed + head),)
    assert got.per_stage == (201_539_584,)  # 0.1877 GiB; the 0.8.2 log (bench batch 15,
    # 1010) loads 15.1749 GiB against 14.9888 without LoRA: 0.1861 GiB


def test_no_extra_vocabulary_from_0_12() -> None:
    m, r, h, vocab = 2, 16, 4096, 128256
    embed = m * vocab * r + m * h * r
    head = m * r * h + m * vocab * r
    got = lora_bytes(_shape(LLAMA), "LlamaForCausalLM", LoraSlots(m, r), tp=1, pp=1,
                     version="0.14.0", model_dtype_bytes=2)
    assert got.per_stage == (2 * (32 * _llama_layer(m, r) + embed + head),)


def test_a_class_without_embedding_modules_wraps_only_linear_layers() -> None:
    got = lora_bytes(_shape(LLAMA), "SomeOtherForCausalLM", LoraSlots(1, 8), tp=2, pp=1,
                     version="0.10.1", model_dtype_bytes=2)
    assert got.per_stage == (2 * 32 * _llama_layer(1, 8, tp=2),)


def test_fully_sharded_splits_the_column_a_and_row_b_matrices() -> None:
    m, r, h, tp = 4, 64, 4096, 4
    q, kv, width = 4096 // tp, 2 * 128, 14336 // tp
    layer = (3 * m * (r // tp) * h + m * r * (q + 2 * kv)
             + m * r * q + m * r * (h // tp)
             + 2 * m * (r // tp) * h + m * r * 2 * width
             + m * r * width + m * r * (h // tp))
    got = lora_bytes(_shape(LLAMA), None, LoraSlots(m, r, fully_sharded=True), tp=tp, pp=1,
                     version="0.10.1", model_dtype_bytes=2)
    assert got.per_stage == (2 * 32 * layer,)


def test_pipeline_stages_split_layers_as_vllm_does() -> None:
    whole = lora_bytes(_shape(LLAMA), None, LoraSlots(), tp=1, pp=1, version="0.10.1",
                       model_dtype_bytes=2)
    staged = lora_bytes(_shape(LLAMA), None, LoraSlots(), tp=1, pp=3, version="0.10.1",
                        model_dtype_bytes=2)
    per_layer = whole.per_stage[0] // 32
    assert staged.per_stage == (11 * per_layer, 11 * per_layer, 10 * per_layer)


def test_routed_experts_take_lora_from_0_12() -> None:
    shape = _shape("Qwen--Qwen3-30B-A3B")
    old = lora_bytes(shape, "Qwen3MoeForCausalLM", LoraSlots(4, 16), tp=2, pp=1,
                     version="0.11.0", model_dtype_bytes=2)
    new = lora_bytes(shape, "Qwen3MoeForCausalLM", LoraSlots(4, 16), tp=2, pp=1,
                     version="0.14.0", model_dtype_bytes=2)
    m, r, h, experts, width = 4, 16, shape.hidden_size, shape.num_experts, \
        shape.expert_intermediate_size // 2
    per_layer = 2 * m * experts * r * h + 2 * m * experts * width * r \
        + m * experts * r * width + m * experts * h * r
    assert new.per_stage[0] - old.per_stage[0] == 2 * shape.num_moe_layers * per_layer
    assert "routed experts take no LoRA before vLLM 0.12.0" in old.notes
    assert new.notes == ()


def test_qwen3_embeddings_from_0_16() -> None:
    shape = _shape("Qwen--Qwen3-8B")
    before = lora_bytes(shape, "Qwen3ForCausalLM", LoraSlots(), tp=1, pp=1, version="0.15.1",
                        model_dtype_bytes=2)
    after = lora_bytes(shape, "Qwen3ForCausalLM", LoraSlots(), tp=1, pp=1, version="0.16.0",
                       model_dtype_bytes=2)
    m, r, h, vocab = 1, 16, shape.hidden_size, shape.vocab_size
    embed, head = m * vocab * r + m * h * r, m * r * h + m * vocab * r
    assert after.per_stage[0] - before.per_stage[0] == 2 * (embed + head)


def _check(*extra: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-m", "kvlint", "check", str(CONFIGS / f"{LLAMA}.json"),
         "--gpu", "A100-40GB", "--engine-version", "0.8.2", "--format", "json",
         "--offline", "--isolated", "--no-plugins", *extra],
        capture_output=True, text=True, timeout=120, check=False)
    result: dict[str, Any] = json.loads(run.stdout)["results"][0]
    return result


def test_check_counts_lora_with_the_weights() -> None:
    plain = _check()["capacity"]
    lora = _check("--enable-lora", "--max-loras", "2")["capacity"]
    assert lora["memory_profile"]["lora_bytes"] == 201_539_584
    weights = plain["memory_profile"]["weight_bytes"]
    assert lora["memory_profile"]["weight_bytes"] == weights + 201_539_584
    assert lora["kv_budget_bytes_per_gpu"] == plain["kv_budget_bytes_per_gpu"] - 201_539_584
    ignored = _check("--max-loras", "2")["capacity"]  # vLLM ignores it without --enable-lora
    assert ignored["memory_profile"]["lora_bytes"] == 0


def test_a_manifest_with_enable_lora_counts_the_buffers(tmp_path: Path) -> None:
    """A Deployment's vLLM command with --enable-lora (0.33: no extra vocabulary; default
    max_loras 1, --max-lora-rank 32 given) adds the buffers to the weights; --max-loras
    without --enable-lora changes nothing, as vLLM ignores it."""
    from click.testing import CliRunner

    from kvlint.cli import main

    def lint(*args: str) -> dict[str, Any]:
        path = tmp_path / "dep.yaml"
        path.write_text("\n".join([
            "apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: llm", "spec:",
            "  template:", "    spec:", "      containers:", "        - name: engine",
            "          image: vllm/vllm-openai:v0.33.0", "          args:",
            "            - --model=org/llama", "            - --max-model-len=8192",
            *[f"            - {a}" for a in args],
            "          resources:", "            limits:", '              nvidia.com/gpu: "1"',
        ]) + "\n", encoding="utf-8")
        out = CliRunner().invoke(main, [
            "lint", str(path), "--gpu", "H100-80GB", "--model-map",
            f"org/llama={CONFIGS / f'{LLAMA}.json'}", "--format", "json", "--no-plugins",
            "--isolated"])
        assert out.exit_code in (0, 1), out.output
        result: dict[str, Any] = json.loads(out.stdout)["results"][0]["capacity"]
        return result

    m, r, h, vocab = 1, 32, 4096, 128256
    expected = 2 * (32 * _llama_layer(m, r) + m * vocab * r + m * h * r
                    + m * r * h + m * vocab * r)
    plain = lint()
    lora = lint("--enable-lora", "--max-lora-rank=32")
    assert lora["memory_profile"]["lora_bytes"] == expected
    assert lora["weight_bytes_per_gpu"] == plain["weight_bytes_per_gpu"] + expected
    assert lint("--max-loras=4")["memory_profile"]["lora_bytes"] == 0


def test_slots_are_bounded() -> None:
    with pytest.raises(ValueError, match=r"max_loras must be in 1\.\.4,096"):
        LoraSlots(max_loras=10**24)
    with pytest.raises(ValueError, match=r"max_lora_rank must be in 1\.\.4,096, got 0"):
        LoraSlots(max_lora_rank=0)


def test_kv503_advises_no_layout_the_lora_buffers_would_not_fit() -> None:
    """4,096 adapters of rank 4,096 on Llama-3.1-8B take terabytes per GPU at any layout the
    advice weighs (it keeps the plan's own LoRA buffers on every GPU): no "tp=N holds them";
    without LoRA the same GPU is advised a layout."""
    base = ("--gpu", "L4", "--format", "json")

    def kv503(*extra: str) -> str:
        run = subprocess.run(
            [sys.executable, "-m", "kvlint", "check", str(CONFIGS / f"{LLAMA}.json"),
             "--engine-version", "0.8.2", "--offline", "--isolated", "--no-plugins",
             "--max-model-len", "8192", "--gpu-memory-utilization", "0.5", *base, *extra],
            capture_output=True, text=True, timeout=120, check=False)
        result = json.loads(run.stdout)["results"][0]
        (message,) = [f["message"] for f in result["findings"] if f["code"] == "KV503"]
        return str(message)

    assert "holds them" in kv503()
    assert "holds them" not in kv503("--enable-lora", "--max-loras", "4096",
                                     "--max-lora-rank", "4096")
