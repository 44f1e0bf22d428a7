"""What an engine command changes in the model before any rule runs: vLLM ``--hf-overrides``
/ ``--rope-scaling`` / ``--rope-theta``, SGLang ``--json-model-override-args`` (the config the
engine builds the model from) and on-the-fly quantization (the weight bytes it holds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.engine_command import parse_engine_args
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word
from kvlint.model.overrides import (
    apply_config_overrides,
    canonical_overrides,
    on_the_fly_quantization,
)
from tests.helpers import CONFIGS

QWEN3 = json.loads((CONFIGS / "Qwen--Qwen3-8B.json").read_text(encoding="utf-8"))
LLAMA70 = CONFIGS / "meta-llama--Llama-3.3-70B-Instruct.json"
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def args(engine: str, *words: str) -> Any:
    return parse_engine_args(engine, [Word(w, 3) for w in words], Env({}))


# --- reading the options ----------------------------------------------------------------


def test_hf_overrides_json_object_is_read_canonically() -> None:
    parsed = args("vllm", "--hf-overrides", json.dumps({"rope_scaling": YARN,
                                                        "max_position_embeddings": 131072}))
    assert isinstance(parsed.config_overrides, Located)
    assert json.loads(parsed.config_overrides.value) == {
        "rope_scaling": YARN, "max_position_embeddings": 131072}
    assert parsed.config_overrides.value == canonical_overrides(
        {"max_position_embeddings": 131072, "rope_scaling": YARN})
    assert "--hf-overrides (overrides max_position_embeddings, rope_scaling)" in \
        parsed.config_overrides.source
    assert any("kvlint applies them before any check" in n for n in parsed.notes)


def test_dotted_hf_overrides_build_one_object() -> None:
    parsed = args("vllm", "--hf-overrides.max_position_embeddings", "131072",
                  "--hf-overrides.rope_scaling.rope_type", "yarn",
                  "--hf_overrides.rope_scaling.factor", "4.0")
    assert isinstance(parsed.config_overrides, Located)
    assert json.loads(parsed.config_overrides.value) == {
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}


def test_legacy_rope_options_and_sglang_override_args() -> None:
    parsed = args("vllm", "--rope-scaling", json.dumps(YARN), "--rope-theta", "1e6")
    assert isinstance(parsed.config_overrides, Located)
    assert json.loads(parsed.config_overrides.value) == {"rope_scaling": YARN,
                                                         "rope_theta": 1e6}
    sglang = args("sglang", "--model-path", "Qwen/Qwen3-8B", "--json-model-override-args",
                  json.dumps({"rope_scaling": YARN}))
    assert isinstance(sglang.config_overrides, Located)
    assert json.loads(sglang.config_overrides.value) == {"rope_scaling": YARN}
    # another engine's option changes nothing here (SGLang has no --hf-overrides)
    assert args("sglang", "--model-path", "x/y").config_overrides is None


@pytest.mark.parametrize("words", [
    ("--hf-overrides", "{not json"),
    ("--hf-overrides", "[1, 2]"),
    ("--rope-theta", "fast"),
    ("--rope-theta", "nan"),
])
def test_unreadable_overrides_are_unresolved(words: tuple[str, ...]) -> None:
    parsed = args("vllm", *words)
    assert isinstance(parsed.config_overrides, Unresolved)
    assert parsed.config_overrides.line == 3


def test_quantization_options_per_engine() -> None:
    assert args("vllm", "--quantization", "fp8").quantization == \
        Located("fp8", 3, source="--quantization")
    assert args("vllm", "-q", "bitsandbytes").quantization.value == "bitsandbytes"
    assert args("sglang", "--quantization", "fp8").quantization.value == "fp8"
    assert args("tgi", "--quantize", "bitsandbytes-nf4").quantization.value == \
        "bitsandbytes-nf4"
    tgi_env = parse_engine_args("tgi", [], Env({"QUANTIZE": "eetq"}))
    assert tgi_env.quantization is not None
    assert tgi_env.quantization.value == "eetq"


# --- applying them ----------------------------------------------------------------------


def test_fields_are_set_whole_and_sub_configs_merged_as_each_engine_does() -> None:
    config = {"rope_scaling": {"rope_type": "yarn", "factor": 2.0, "beta_fast": 32},
              "max_position_embeddings": 4096,
              "text_config": {"max_position_embeddings": 4096, "hidden_size": 8}}
    rope = canonical_overrides({"rope_scaling": {"factor": 4.0}})
    # vLLM (config.update): a plain field, rope_scaling included, is replaced whole
    assert apply_config_overrides(config, rope, "vllm")["rope_scaling"] == {"factor": 4.0}
    # SGLang 0.5.5 replaces it too; 0.5.23 merges rope_scaling shallowly
    assert apply_config_overrides(config, rope, "sglang", "0.5.5.post3")["rope_scaling"] == \
        {"factor": 4.0}
    assert apply_config_overrides(config, rope, "sglang", "0.5.23")["rope_scaling"] == \
        {"rope_type": "yarn", "factor": 4.0, "beta_fast": 32}
    # a sub-config is merged into (vLLM's _apply_dict_overrides), not replaced
    text = canonical_overrides({"text_config": {"max_position_embeddings": 65536}})
    out = apply_config_overrides(config, text, "vllm", "0.34.0")
    assert out["text_config"] == {"max_position_embeddings": 65536, "hidden_size": 8}
    # a top-level field does not reach the text part the engine reads limits from
    top = apply_config_overrides(
        config, canonical_overrides({"max_position_embeddings": 65536}), "vllm")
    assert (top["max_position_embeddings"], top["text_config"]["max_position_embeddings"]) \
        == (65536, 4096)
    assert config["rope_scaling"]["factor"] == 2.0  # the loaded config is not changed


def test_on_the_fly_quantization_only_for_unquantized_checkpoints() -> None:
    fp8 = on_the_fly_quantization("vllm", "fp8", QWEN3)
    assert fp8 is not None and fp8.config == {"quant_method": "fp8"}
    nf4 = on_the_fly_quantization("tgi", "bitsandbytes-nf4", QWEN3)
    assert nf4 is not None and nf4.config["load_in_4bit"] is True
    tgi_int8 = on_the_fly_quantization("tgi", "bitsandbytes", QWEN3)
    assert tgi_int8 is not None and tgi_int8.config["load_in_8bit"] is True
    quantized = {**QWEN3, "quantization_config": {"quant_method": "awq", "bits": 4}}
    assert on_the_fly_quantization("vllm", "fp8", quantized) is None
    assert on_the_fly_quantization("vllm", "awq", quantized) is None  # its own format wins
    assert on_the_fly_quantization(None, "fp8", QWEN3) is None
    assert not fp8.assumed and not nf4.assumed


def test_a_method_that_needs_a_quantized_checkpoint_sizes_its_usual_form() -> None:
    """``--quantization awq`` on a config that names no quantization is a what-if (the AWQ
    build of this model): sized as that checkpoint's usual form and said to be assumed; a
    format with no usual form (compressed-tensors) stays unsized."""
    for engine, method in (("vllm", "awq"), ("vllm", "awq_marlin"), ("sglang", "awq"),
                           ("lmdeploy", "awq")):
        awq = on_the_fly_quantization(engine, method, QWEN3)
        assert awq is not None and awq.assumed
        assert awq.config == {"quant_method": "awq", "bits": 4, "group_size": 128}
    gptq = on_the_fly_quantization("vllm", "gptq_marlin", QWEN3)
    assert gptq is not None and gptq.config["quant_method"] == "gptq"
    assert on_the_fly_quantization("vllm", "compressed-tensors", QWEN3) is None
    assert on_the_fly_quantization("vllm", "bogus", QWEN3) is None


def test_a_modelopt_what_if_keeps_what_any_recipe_keeps() -> None:
    """ModelOpt recipes differ in what they keep 16-bit; the what-if keeps attention and the
    LM head (the most a recipe keeps), so its weights are an upper bound: never fewer bytes
    than a checkpoint whose recipe also quantized attention."""
    from kvlint.loaders.shape import resolve_shape, resolve_weight_format
    from kvlint.model.weight_formats import NVFP4_BYTES, weight_bytes
    from kvlint.model.weights import Part, estimate_parameters

    fp4 = on_the_fly_quantization("sglang", "modelopt_fp4", QWEN3)
    assert fp4 is not None and fp4.assumed
    what_if = resolve_weight_format({**QWEN3, "quantization_config": fp4.config})
    all_linear = resolve_weight_format({**QWEN3, "quantization_config": {
        "quant_method": "modelopt", "quant_algo": "NVFP4"}})
    assert what_if.bytes_per_param(Part.DENSE_MLP) == NVFP4_BYTES
    assert what_if.bytes_per_param(Part.ATTENTION) == 2.0
    assert all_linear.bytes_per_param(Part.ATTENTION) == NVFP4_BYTES
    params = estimate_parameters(resolve_shape(QWEN3))
    assert weight_bytes(params, what_if).total > weight_bytes(params, all_linear).total
    # Qwen3-8B: the MLPs in 4.5 bits (9/16 B), everything else 16-bit, ceil per part
    parts = weight_bytes(params, what_if).by_part
    assert parts[Part.DENSE_MLP] == -(-params.dense_mlp * 9 // 16)
    assert parts[Part.ATTENTION] == 2 * params.attention
    assert parts[Part.EMBEDDINGS] == 2 * params.embeddings
    fp8 = on_the_fly_quantization("vllm", "modelopt", QWEN3)
    assert fp8 is not None and fp8.assumed and fp8.config["quant_algo"] == "FP8"


# --- end to end: the findings the override decides --------------------------------------

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:{version}
          args:
            - --model
            - Qwen/Qwen3-8B
            - --max-model-len
            - "{length}"
{extra}          resources:
            limits:
              nvidia.com/gpu: 1
"""


def lint_json(path: Path, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, [
        "lint", str(path), "--no-plugins", "--format", "json", "--offline",
        "--model-map", f"Qwen/Qwen3-8B={CONFIGS / 'Qwen--Qwen3-8B.json'}",
        "--model-map", f"meta-llama/Llama-3.3-70B-Instruct={LLAMA70}", *extra])
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def codes(data: dict[str, Any]) -> list[tuple[str, int | None]]:
    return sorted((f["code"], f["line"]) for r in data["results"] for f in r["findings"])


@pytest.mark.parametrize("extra", [
    '            - --hf-overrides\n            - \'{"rope_scaling": ' + json.dumps(YARN) + "}'\n",
    "            - --hf-overrides.rope_scaling.rope_type=yarn\n"
    "            - --hf-overrides.rope_scaling.factor=4.0\n"
    "            - --hf-overrides.rope_scaling.original_max_position_embeddings=32768\n",
    "            - --rope-scaling\n            - '" + json.dumps(YARN) + "'\n",
])
def test_qwen3_at_128k_through_yarn_is_not_over_the_limit(tmp_path: Path, extra: str) -> None:
    """Qwen3's documented 128K set-up: YaRN x4 over 32,768 positions = 131,072 tokens (vLLM
    0.11.0 derives YaRN's limit from original_max_position_embeddings x factor)."""
    path = tmp_path / "qwen3.yaml"
    path.write_text(DEPLOYMENT.format(version="v0.11.0", length=131072, extra=extra),
                    encoding="utf-8")
    assert codes(lint_json(path)) == []
    path.write_text(DEPLOYMENT.format(version="v0.11.0", length=131073, extra=extra),
                    encoding="utf-8")
    data = lint_json(path)
    assert codes(data) == [("KV703", 14)]
    message = data["results"][0]["findings"][0]["message"]
    assert "model's own limit of 131,072 tokens" in message
    assert "x rope factor 4 (yarn) = 131072" in message


def test_vllm_0_8_5_refuses_dotted_override_words(tmp_path: Path) -> None:
    """vLLM reads ``--hf-overrides.key VALUE`` from 0.9.2 on; 0.8.5's argparse refuses it."""
    path = tmp_path / "qwen3.yaml"
    extra = "            - --hf-overrides.max_position_embeddings=131072\n"
    path.write_text(DEPLOYMENT.format(version="v0.8.5", length=32768, extra=extra),
                    encoding="utf-8")
    data = lint_json(path)
    assert codes(data) == [("KV701", 16)]
    assert "0.8.5 has no option --hf-overrides.max_position_embeddings" in \
        data["results"][0]["findings"][0]["message"]


def test_without_the_override_128k_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "qwen3.yaml"
    path.write_text(DEPLOYMENT.format(version="v0.8.5", length=131072, extra=""),
                    encoding="utf-8")
    data = lint_json(path)
    assert codes(data) == [("KV703", 14)]
    assert "own limit of 40,960 tokens" in data["results"][0]["findings"][0]["message"]


TGI = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: tgi
spec:
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-l4
      containers:
        - name: tgi
          image: ghcr.io/huggingface/text-generation-inference:2.4.1
          args: ["--model-id", "meta-llama/Llama-3.3-70B-Instruct", "--num-shard", "2"{q}]
          resources:
            limits:
              nvidia.com/gpu: 2
"""


def test_tgi_nf4_weights_fit_where_16_bit_ones_do_not(tmp_path: Path) -> None:
    path = tmp_path / "tgi.yaml"
    path.write_text(TGI.format(q=""), encoding="utf-8")
    data = lint_json(path)
    assert ("KV503", 16) in codes(data)
    kv503 = next(f for r in data["results"] for f in r["findings"] if f["code"] == "KV503")
    # TGI has no pipeline parallelism: the proposed layout is tp only
    assert "pp=" not in kv503["message"]
    assert "tp=8 (8 such GPUs" in kv503["message"]
    path.write_text(TGI.format(q=', "--quantize", "bitsandbytes-nf4"'), encoding="utf-8")
    data = lint_json(path)
    assert "KV503" not in {c for c, _ in codes(data)}
    # bitsandbytes 4-bit: 0.5 B + one fp32 absmax per 64 values (0.5625 B) for the 80
    # layers' 68,451,041,280 projection parameters; embeddings and LM head (2 x 128,256 x
    # 8,192) 16-bit and split over tp=2; the 1,318,912 norm parameters 16-bit on each GPU:
    # 38,503,710,720 / 2 + 4,202,692,608 / 2 + 2,637,824 = 21,355,839,488 bytes per GPU
    assert data["results"][0]["capacity"]["weight_bytes_per_gpu"] == 21_355_839_488


def test_quantization_awq_on_a_16_bit_config_sizes_the_awq_checkpoint(tmp_path: Path) -> None:
    """``check --quantization awq`` on Qwen3-8B's own config gives the weight bytes of the
    same config carrying an AWQ 4-bit group-128 ``quantization_config``, to the byte."""
    config = json.loads((CONFIGS / "Qwen--Qwen3-8B.json").read_text(encoding="utf-8"))
    awq = tmp_path / "awq.json"
    awq.write_text(json.dumps({**config, "quantization_config": {
        "quant_method": "awq", "bits": 4, "group_size": 128}}), encoding="utf-8")

    def weights(path: Path, *extra: str) -> int:
        out = CliRunner().invoke(main, ["check", str(path), "--gpu", "T4", "--format", "json",
                                        "--offline", "--isolated", "--no-plugins", *extra])
        value = json.loads(out.stdout)["results"][0]["capacity"]["weight_bytes_per_gpu"]
        assert isinstance(value, int)
        return value

    assumed = weights(CONFIGS / "Qwen--Qwen3-8B.json", "--quantization", "awq")
    assert assumed == weights(awq) == weights(awq, "--quantization", "awq")
    assert assumed < weights(CONFIGS / "Qwen--Qwen3-8B.json") / 2.5  # embeddings stay 16-bit


def test_tensorrt_llm_fp8_sizes_the_checkpoint_quantized_beforehand(tmp_path: Path) -> None:
    """TensorRT-LLM converts nothing while loading: ``--quantization fp8`` on a 16-bit config
    is the FP8 checkpoint (or engine) built beforehand, the bytes of vLLM's per-tensor fp8,
    and assumed; vLLM's own fp8 stays a conversion while loading."""
    trt = on_the_fly_quantization("trtllm", "fp8", QWEN3)
    assert trt is not None and trt.assumed and trt.config == {"quant_method": "fp8"}
    vllm = on_the_fly_quantization("vllm", "fp8", QWEN3)
    assert vllm is not None and not vllm.assumed

    def weights(engine: str) -> int:
        out = CliRunner().invoke(main, [
            "check", str(CONFIGS / "Qwen--Qwen3-8B.json"), "--engine", engine, "--gpu", "L4",
            "--quantization", "fp8", "--format", "json", "--offline", "--isolated",
            "--no-plugins"])
        value = json.loads(out.stdout)["results"][0]["capacity"]["weight_bytes_per_gpu"]
        assert isinstance(value, int)
        return value

    assert weights("trtllm") == weights("vllm")


def _check(*extra: str) -> Any:
    return CliRunner().invoke(main, ["check", str(CONFIGS / "Qwen--Qwen3-8B.json"),
                                     "--engine", "vllm", "--engine-version", "0.11.0",
                                     "--max-model-len", "131072", "--no-plugins",
                                     "--isolated", "--format", "json", *extra])


def test_check_applies_hf_overrides_before_the_length_check() -> None:
    """``kvlint check --hf-overrides`` sizes the config the engine builds, as a manifest's
    ``--hf-overrides`` does: YaRN x4 over 32,768 positions admits 131,072 tokens."""
    refused = _check()
    assert refused.exit_code == 1
    assert [f["code"] for r in json.loads(refused.stdout)["results"]
            for f in r["findings"]] == ["KV703"]
    result = _check("--hf-overrides", json.dumps({"rope_scaling": YARN}))
    assert result.exit_code == 0, result.output
    (entry,) = json.loads(result.stdout)["results"]
    assert entry["findings"] == []
    assert "config as the engine builds it: --hf-overrides (overrides rope_scaling)" in \
        json.dumps(entry)
    # SGLang's spelling is the same option
    same = _check("--json-model-override-args", json.dumps({"rope_scaling": YARN}))
    assert same.exit_code == 0, same.output


@pytest.mark.parametrize(("text", "says"), [
    ("{bad", "is not JSON"), ("[1, 2]", "got list"), ('"yarn"', "got str")])
def test_check_hf_overrides_must_be_a_json_object(text: str, says: str) -> None:
    result = _check("--hf-overrides", text)
    assert result.exit_code == 2
    assert says in result.output and "Traceback" not in result.output
