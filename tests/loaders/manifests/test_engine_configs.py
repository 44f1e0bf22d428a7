"""Engine config files (vLLM/SGLang --config, TensorRT-LLM, trtllm-serve disaggregated, Ray
Serve LLM) against the corpus (fixtures/manifests/SOURCES.md) and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import (
    DocumentContext,
    ManifestProblem,
    Unresolved,
)
from kvlint.manifests.yaml_marks import load_documents
from tests.loaders.manifests.support import (
    CORPUS,
    claims,
    extract,
    extract_text,
    line,
    one,
    v,
)

# --- vLLM / SGLang --config -----------------------------------------------------------------


def test_vllm_config_with_model_underscore_keys() -> None:
    m = one("vllm-config/vllm-test-config-with-model-tp2.yaml")
    assert m.format == "vllm-config" and v(m.engine) == "vllm"
    assert v(m.model) == "config-model" and line(m.model) == 2 and m.line == 2
    assert m.served_name == "mymodel"
    assert v(m.tp) == 2 and line(m.tp) == 5
    assert m.gpus is None and m.image is None and m.engine_version is None


def test_vllm_config_without_model_fp8_kv_negated_flag() -> None:
    m = one("vllm-config/recipes-llama4-hopper-fp8kv-nomodel.yaml")
    assert m.model is None and any("names no model" in n for n in m.notes)
    assert v(m.kv_cache_dtype) == "fp8" and line(m.kv_cache_dtype) == 1
    assert v(m.max_model_len) == 10240 and line(m.max_model_len) == 5
    assert m.tp is None and m.max_num_seqs is None


def test_a_triton_vllm_model_json_holds_keyword_arguments() -> None:
    """Triton's vLLM backend passes model.json to ``AsyncEngineArgs(**config)``: a switch
    given the string "true" (or "false", also true to Python) is on, not a stray word for
    vLLM's parser; the same keys in a ``--config`` file are the parser's."""
    text = ('{"model": "org/m", "disable_log_stats": "true", "enforce_eager": "false",\n'
            ' "gpu_memory_utilization": 0.5}\n')
    (m,) = extract_text(text, "repo/llama/1/model.json")
    assert m.engine_problems == () and v(m.gpu_memory_utilization) == 0.5
    assert any("keyword arguments" in n for n in m.notes)
    (cli,) = extract_text(text, "vllm-config.json")
    assert [p.option for p in cli.engine_problems] == ["true", "false"]


def test_sglang_config() -> None:
    text = """model-path: Qwen/Qwen3-235B-A22B-FP8
tp-size: 8
dp-size: 8
enable-dp-attention: true
context-length: 32768
max-running-requests: 256
kv-cache-dtype: fp8_e4m3
"""
    (m,) = extract_text(text)
    assert m.format == "sglang-config" and v(m.engine) == "sglang"
    assert v(m.model) == "Qwen/Qwen3-235B-A22B-FP8" and v(m.tp) == 8 and v(m.dp) == 8
    assert v(m.dp_attention) is True and v(m.max_model_len) == 32768
    assert v(m.max_num_seqs) == 256 and v(m.kv_cache_dtype) == "fp8_e4m3"


@pytest.mark.parametrize(("path", "engine"), [
    ("deploy/vllm/serve.yaml", "vllm-config"),
    ("deploy/sglang/serve.yaml", "sglang-config"),
    ("deploy/serve.yaml", None),
])
def test_path_breaks_ties_only(path: str, engine: str | None) -> None:
    text = "model: org/model\nport: 8000\ntrust-remote-code: true\n"
    docs = load_documents(text, path)
    assert isinstance(docs, list)
    assert claims(docs[0], DocumentContext(path, 0, tuple(docs))) == ([engine] if engine
                                                                        else [])
    # distinctive keys win whatever the path says
    docs = load_documents(text + "gpu-memory-utilization: 0.9\n", path)
    assert isinstance(docs, list)
    assert claims(docs[0], DocumentContext(path, 0, tuple(docs))) == ["vllm-config"]


# --- TensorRT-LLM ---------------------------------------------------------------------------


def test_trtllm_extra_options_attention_dp_fp8() -> None:
    m = one("tensorrt-llm/extra-llm-api-config-deepseek-r1-throughput-tp8-ep8.yaml")
    assert m.format == "trtllm-config" and v(m.engine) == "trtllm"
    assert m.model is None
    assert v(m.tp) == 8 and line(m.tp) == 4
    assert v(m.ep) == 8 and v(m.dp_attention) is True
    assert v(m.dp) == 8  # attention DP over the TP ranks
    assert v(m.kv_cache_dtype) == "fp8" and line(m.kv_cache_dtype) == 12
    assert v(m.max_num_seqs) == 1024  # not cuda_graph_config.max_batch_size
    assert m.max_model_len is None and m.pp is None


def test_trtllm_disaggregated_roles() -> None:
    context, generation = extract("tensorrt-llm/trtllm-serve-disagg-config-tinyllama.yaml")
    assert (context.role, generation.role) == ("prefill", "decode")
    for m in (context, generation):
        assert m.format == "trtllm-disagg" and v(m.engine) == "trtllm"
        assert v(m.model) == "TinyLlama/TinyLlama-1.1B-Chat-v1.0" and line(m.model) == 3
        assert v(m.tp) == 1 and v(m.pp) == 1 and v(m.gpus) == 1
        assert m.kv_cache_dtype is None
    assert line(context.tp) == 9 and line(generation.tp) == 19
    assert v(context.gpu_memory_utilization) == 0.2  # its kv_cache_config overrides
    assert v(generation.gpu_memory_utilization) == 0.25  # the top-level value


def test_trtllm_disagg_gpus_per_instance() -> None:
    text = """model: deepseek-ai/DeepSeek-V3
context_servers:
  num_instances: 2
  tensor_parallel_size: 4
  pipeline_parallel_size: 2
  urls: [a:1, b:2]
generation_servers:
  num_instances: 1
  tensor_parallel_size: 8
  enable_attention_dp: true
  kv_cache_config:
    dtype: fp8
"""
    context, generation = extract_text(text)
    assert v(context.gpus) == 8 and any("num_instances 2" in n for n in context.notes)
    assert v(generation.gpus) == 8 and v(generation.dp_attention) is True
    assert v(generation.kv_cache_dtype) == "fp8"


# --- Ray Serve LLM --------------------------------------------------------------------------


def test_ray_serve_inline_dp_gang() -> None:
    m = one("ray-serve/serve-config-phi-tiny-moe-dp4-gang.yaml")
    assert m.format == "ray-serve" and v(m.engine) == "vllm"
    assert v(m.model) == "microsoft/Phi-tiny-MoE-instruct" and line(m.model) == 6
    assert v(m.tp) == 1 and line(m.tp) == 10 and v(m.pp) == 1 and v(m.dp) == 4
    assert v(m.max_model_len) == 1024 and v(m.max_num_seqs) == 32
    assert v(m.gpus) == 4
    assert any("num_replicas 2" in n for n in m.notes)


def test_ray_serve_llm_configs_by_reference() -> None:
    m = one("ray-serve/serve-by-reference/serve_llama_3dot1_8b_tp2.yaml")
    referenced = (CORPUS / "ray-serve/serve-by-reference/configs/model_config" /
                  "llama_3dot1_8b_tp2.yaml")
    assert Path(m.path).resolve() == referenced.resolve()
    assert v(m.model) == "meta-llama/Llama-3.1-8B-Instruct" and line(m.model) == 2
    assert v(m.tp) == 2 and line(m.tp) == 8
    assert v(m.max_model_len) == 8192 and line(m.max_model_len) == 7
    assert v(m.gpu_type) == "A10G" and line(m.gpu_type) == 4
    assert v(m.gpus) == 2 and v(m.engine) == "vllm"


def test_ray_serve_llm_config_file_alone() -> None:
    m = one("ray-serve/serve-by-reference/configs/model_config/llama_3dot1_8b_tp2.yaml")
    assert v(m.model) == "meta-llama/Llama-3.1-8B-Instruct" and v(m.tp) == 2


def test_ray_serve_unreadable_references(tmp_path: Path) -> None:
    serve = tmp_path / "serve.yaml"
    serve.write_text("""applications:
- import_path: ray.serve.llm:build_openai_app
  args:
    llm_configs:
      - ./missing.yaml
      - /etc/passwd
      - model_loading_config:
          model_id: Qwen/Qwen3-8B
        engine_kwargs:
          tensor_parallel_size: 4
""", encoding="utf-8")
    missing, absolute, inline = extract_text(serve.read_text(), str(serve))
    assert isinstance(missing.model, Unresolved) and line(missing.model) == 5
    assert isinstance(absolute.model, Unresolved) and "not a relative path" in \
        absolute.model.reason
    assert v(inline.model) == "Qwen/Qwen3-8B" and v(inline.tp) == 4 and v(inline.gpus) == 4


def test_ray_serve_runtime_env_pin_and_non_yaml_reference() -> None:
    text = """applications:
- import_path: ray.serve.llm:build_openai_app
  runtime_env:
    pip: ["vllm==0.8.5", "boto3"]
  args:
    llm_configs:
      - ./secrets.txt
      - model_loading_config: {model_id: Qwen/Qwen3-8B}
"""
    refused, inline = extract_text(text)
    assert isinstance(refused.model, Unresolved) and "not a YAML" in refused.model.reason
    assert v(inline.engine_version) == "0.8.5" and line(inline.engine_version) == 4


def test_ray_serve_prefill_decode() -> None:
    text = """applications:
- import_path: ray.serve.llm:build_pd_openai_app
  args:
    prefill_config:
      model_loading_config: {model_id: m, model_source: deepseek-ai/DeepSeek-V2-Lite}
      engine_kwargs: {tensor_parallel_size: 2, kv_cache_dtype: fp8}
    decode_config:
      model_loading_config: {model_id: m, model_source: deepseek-ai/DeepSeek-V2-Lite}
      engine_kwargs: {tensor_parallel_size: 4}
"""
    prefill, decode = extract_text(text)
    assert (prefill.role, decode.role) == ("prefill", "decode")
    assert v(prefill.model) == "deepseek-ai/DeepSeek-V2-Lite" and prefill.served_name == "m"
    assert v(prefill.kv_cache_dtype) == "fp8" and v(decode.tp) == 4


# --- negatives ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "repos:\n- repo: https://github.com/astral-sh/ruff-pre-commit\n  rev: v0.6.0\n"
    "  hooks:\n  - id: ruff\n",
    "name: CI\non:\n  push:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
    "    - uses: actions/checkout@v4\n    - run: pytest\n",
    "host: 0.0.0.0\nport: 8080\ndebug: true\nlog_level: info\n",
    "model: gpt-4\ntemperature: 0.2\nmax_tokens: 512\n",
    "applications:\n- name: web\n  import_path: app:main\n  route_prefix: /\n",
    "max_batch_size: 8\n",
])
def test_other_yaml_is_not_an_engine_config(text: str) -> None:
    assert extract_text(text, "vllm/config.yaml") == []


def test_no_kubernetes_document_is_claimed() -> None:
    for path in sorted(CORPUS.rglob("*.y*ml")):
        docs = load_documents(path.read_text(encoding="utf-8"), str(path))
        if isinstance(docs, ManifestProblem):
            continue
        for index, doc in enumerate(docs):
            if isinstance(doc, dict) and ("kind" in doc or "apiVersion" in doc):
                assert claims(doc, DocumentContext(str(path), index, tuple(docs))) == [], path
