"""NVIDIA srt-slurm recipes (:mod:`kvlint.manifests.srtctl_recipes`), written here in the
shapes of the project's own recipes (recipes/*/{sglang,trtllm,vllm}/...)."""

from __future__ import annotations

import textwrap

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.srtctl_recipes import SrtctlRecipeParser, is_recipe
from tests.loaders.manifests.support import parse_with


def recipe(text: str) -> list[object]:
    return list(parse_with([SrtctlRecipeParser()], textwrap.dedent(text), "recipe.yaml"))


def v(value: object) -> object:
    return value.value if isinstance(value, Located) else value


def test_a_disaggregated_trtllm_recipe_serves_prefill_and_decode_workers() -> None:
    """Prefill and decode workers with their own LLM-API options; a worker's GPUs are its
    nodes' GPUs over its workers (1 x 8 // 1, 7 x 8 // 7); the model alias is unresolved and
    the Dynamo container's tag is no TensorRT-LLM release."""
    found = recipe("""\
        name: "ctx1_gen7"
        model:
          path: "dsr1"
          container: "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1"
          precision: "fp8"
        resources:
          gpu_type: "h200"
          prefill_nodes: 1
          prefill_workers: 1
          decode_workers: 7
          decode_nodes: 7
          gpus_per_node: 8
        backend:
          type: trtllm
          trtllm_config:
            prefill:
              tensor_parallel_size: 8
              moe_expert_parallel_size: 8
              max_num_tokens: 16640
              kv_cache_config: {free_gpu_memory_fraction: 0.85, dtype: fp8}
            decode:
              tensor_parallel_size: 8
              max_batch_size: 1
        """)
    got = [(m.role, v(m.engine), v(m.tp), v(m.gpus), v(m.gpu_type), m.engine_version)
           for m in found]  # type: ignore[attr-defined]
    assert got == [("prefill", "trtllm", 8, 8, "h200", None),
                   ("decode", "trtllm", 8, 8, "h200", None)]
    prefill = found[0]
    assert isinstance(prefill.model, Unresolved) and prefill.model.text == "dsr1"  # type: ignore[attr-defined]
    assert v(prefill.kv_cache_dtype) == "fp8"  # type: ignore[attr-defined]
    assert any("Dynamo release" in n for n in prefill.notes)  # type: ignore[attr-defined]


def test_an_aggregated_sglang_recipe_reads_its_cli_options() -> None:
    """``sglang_config.aggregated`` holds CLI options (a true value is a bare flag); an
    ``hf:`` model path is a Hub id; without node counts the worker has gpus_per_node GPUs
    (default 4); an image tag dates the engine."""
    (m,) = recipe("""\
        model:
          path: "hf:org/model"
          container: "lmsysorg/sglang:v0.5.5.post3"
          precision: "fp4"
        resources:
          gpu_type: "gb300"
          agg_nodes: 1
          agg_workers: 1
        backend:
          type: sglang
          sglang_config:
            aggregated:
              model-path: "/model/"
              trust-remote-code: true
              tensor-parallel-size: 4
              data-parallel-size: 4
              enable-dp-attention: true
              context-length: 2200
        """)
    assert v(m.model) == "org/model" and v(m.engine_version) == "0.5.5.post3"  # type: ignore[attr-defined]
    assert (v(m.tp), v(m.dp), v(m.gpus), v(m.max_model_len)) == (4, 4, 4, 2200)  # type: ignore[attr-defined]
    assert v(m.trust_remote_code) is True and m.role is None  # type: ignore[attr-defined]


def test_only_recipes_are_claimed() -> None:
    assert not is_recipe({"backend": {"type": "nginx"}, "model": {"path": "x"},
                          "resources": {}})
    assert not is_recipe({"backend": {"type": "vllm"}, "model": {"path": "x"}})
    assert is_recipe({"backend": {"type": "vllm"}, "model": {"path": "x"}, "resources": {}})


def test_decode_workers_on_the_prefill_nodes_are_as_wide_as_a_prefill_worker() -> None:
    """``decode_nodes: 0`` with decode workers: they share the prefill nodes and take a
    prefill worker's GPUs (ResourceConfig.gpus_per_decode)."""
    found = recipe("""\
        model: {path: "hf:org/m", container: "lmsysorg/sglang:v0.5.5.post3"}
        resources: {gpu_type: h100, gpus_per_node: 8, prefill_nodes: 1, prefill_workers: 2,
                    decode_nodes: 0, decode_workers: 2}
        backend: {type: sglang, sglang_config: {prefill: {tp-size: 4}, decode: {tp-size: 4}}}
        """)
    assert [(m.role, v(m.gpus)) for m in found] == [  # type: ignore[attr-defined]
        ("prefill", 4), ("decode", 4)]
