"""Triton model configurations (config.pbtxt) of the TensorRT-LLM backend
(:mod:`kvlint.manifests.triton_configs`), written here in the shape of
tensorrtllm_backend's all_models/inflight_batcher_llm/tensorrt_llm/config.pbtxt."""

from __future__ import annotations

from pathlib import Path

from kvlint.lint.extraction import extract_text
from kvlint.manifests.base import Located, ManifestProblem, Unresolved
from kvlint.manifests.triton_configs import is_triton_config, triton_config_models
from kvlint.plugins import get_plugin_manager


def parameter(key: str, value: str, prefix: str = "") -> str:
    return (f"{prefix}parameters: {{\n{prefix}  key: \"{key}\"\n{prefix}  value: {{\n"
            f"{prefix}    string_value: \"{value}\"\n{prefix}  }}\n{prefix}}}\n")


CONFIG = ('# Copyright\n#\nname: "tensorrt_llm"\nbackend: "tensorrtllm"\nmax_batch_size: 4\n'
          "model_transaction_policy {\n  decoupled: True\n}\n"
          "input [\n  {\n    name: \"input_ids\"\n    dims: [ -1 ]\n  }\n]\n"
          + parameter("gpt_model_path", "/data/llama-8b-engine")
          + parameter("max_tokens_in_paged_kv_cache", "131072")
          + parameter("kv_cache_free_gpu_mem_fraction", "${kv_cache_free_gpu_mem_fraction}")
          + parameter("gpt_model_path", "/commented/out", prefix="# ")
          + parameter("gpu_device_ids", "0,1"))


def test_a_tensorrtllm_config_serves_its_engine_directory() -> None:
    (m,) = triton_config_models(CONFIG, "repo/tensorrt_llm/config.pbtxt")
    assert m.engine is not None and m.engine.value == "trtllm" and m.engine.line == 4
    assert isinstance(m.model, Located) and m.model.value == "/data/llama-8b-engine"
    assert m.model.line == 18  # the string_value line of the first gpt_model_path
    assert isinstance(m.kv_tokens_cap, Located) and m.kv_tokens_cap.value == 131072
    assert isinstance(m.gpu_memory_utilization, Unresolved)  # a placeholder left unfilled
    assert isinstance(m.gpus, Located) and m.gpus.value == 2
    assert any("placeholders" in n for n in m.notes)


def test_other_backends_serve_nothing_and_no_config_is_yaml() -> None:
    """A python backend's config (pre/postprocessing) serves no model; read through the
    extraction it is never "invalid YAML"."""
    python = CONFIG.replace('backend: "tensorrtllm"', 'backend: "python"')
    assert triton_config_models(python, "config.pbtxt") == []
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    for text, count in ((CONFIG, 1), (python, 0)):
        found = extract_text(text, Path("config.pbtxt"), pm, parsers)
        assert not isinstance(found, ManifestProblem)
        assert len(found) == count
        assert not any(p.kind == "invalid-yaml" for p in getattr(found, "problems", ()))
    assert is_triton_config("a/b/config.pbtxt") and not is_triton_config("config.yaml")


def test_many_parameters_are_read_within_bounds() -> None:
    """A generated config of 20,000 parameter blocks (hostile input): its parameters are
    capped, the first ones kept."""
    text = CONFIG + "".join(parameter(f"p{i}", str(i)) for i in range(20_000))
    (m,) = triton_config_models(text, "config.pbtxt")
    assert isinstance(m.model, Located) and m.model.value == "/data/llama-8b-engine"
