"""SkyPilot, dstack and Azure ML parsers against the corpus (fixtures/manifests/SOURCES.md)
and edge cases."""

from __future__ import annotations

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
    extract_text,
    line,
    one,
    v,
)

# --- SkyPilot -------------------------------------------------------------------------------


def test_skypilot_tp_pp_from_platform_variables() -> None:
    m = one("skypilot/vllm-llama4-maverick-fp8-2node-tp-pp-from-env.sky.yaml")
    assert m.format == "skypilot" and v(m.engine) == "vllm" and line(m.engine) == 52
    assert v(m.model) == "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"
    assert line(m.model) == 52 and m.line == 52
    assert v(m.tp) == 8 and line(m.tp) == 54
    assert v(m.pp) == 2 and line(m.pp) == 55
    assert v(m.max_model_len) == 32768
    assert v(m.gpus) == 16 and v(m.gpu_type) == "H100"
    assert m.image is None  # image_id is commented out
    assert v(m.engine_version) == "latest"  # vllm>=0.10.0 pins nothing
    assert any("replicas 2" in n for n in m.notes)


def test_skypilot_accelerator_alternatives_are_not_a_sum() -> None:
    m = one("skypilot/vllm-llama2-7b-docker-image-accelerator-anyof.yaml")
    assert v(m.model) == "meta-llama/Llama-2-7b-chat-hf" and line(m.model) == 19
    assert m.tp is None
    assert v(m.gpus) == 1  # one of L4, A10G, A10, A100, A100-80GB; not 5
    gpu_type = v(m.gpu_type)
    assert all(name in gpu_type for name in ("L4", "A10G", "A10", "A100", "A100-80GB"))
    assert v(m.image) == "vllm/vllm-openai:latest" and v(m.engine_version) == "latest"


def test_skypilot_sglang_tp_from_shell_arithmetic() -> None:
    m = one("skypilot/sglang-deepseek-r1-bf16-a100-4node-tp32.yaml")
    assert v(m.engine) == "sglang" and line(m.engine) == 81
    assert v(m.model) == "DeepSeek-R1-BF16" and line(m.model) == 82  # a local directory
    assert v(m.dp_attention) is True and m.dp is None
    assert v(m.gpus) == 32 and v(m.gpu_type) == "A100-80GB"
    assert v(m.engine_version) == "latest"  # sglang[all]>=0.4.2.post4
    # TP=$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES)); --tp abbreviates --tp-size
    assert v(m.tp) == 32 and line(m.tp) == 83


def test_skypilot_pinned_pip_and_mismatched_counts() -> None:
    text = """resources:
  accelerators: {L4: 1, A100: 2}
setup: pip install "vllm==0.6.3.post1"
run: vllm serve Qwen/Qwen2-7B --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE
"""
    (m,) = extract_text(text)
    assert v(m.engine_version) == "0.6.3.post1" and line(m.engine_version) == 3
    assert isinstance(m.gpus, Unresolved)
    assert isinstance(m.tp, Unresolved)  # the count differs between the alternatives


# --- dstack ---------------------------------------------------------------------------------


def test_dstack_tgi_num_shard_from_gpus_num() -> None:
    m = one("dstack/tgi-llama4-scout-numshard-from-gpus-num.dstack.yml")
    assert m.format == "dstack" and v(m.engine) == "tgi" and line(m.engine) == 17
    assert v(m.model) == "meta-llama/Llama-4-Scout-17B-16E-Instruct" and line(m.model) == 8
    assert v(m.tp) == 2 and line(m.tp) == 17
    assert v(m.max_model_len) == 16384 and line(m.max_model_len) == 10
    assert v(m.gpus) == 2 and v(m.gpu_type) == "H200"
    assert v(m.engine_version) == "latest"


def test_dstack_trtllm_count_before_type() -> None:
    m = one("dstack/trtllm-serve-deepseek-r1-h200-envvars.dstack.yml")
    assert v(m.engine) == "trtllm"
    # the positional DeepSeek-R1 directory is the download of the Hub repo
    assert v(m.model) == "deepseek-ai/DeepSeek-R1" and line(m.model) == 25
    assert any("download" in n for n in m.notes)
    assert m.served_name == "deepseek-ai/DeepSeek-R1"
    assert v(m.tp) == 8 and line(m.tp) == 22
    assert v(m.ep) == 4 and v(m.pp) == 1
    assert v(m.max_model_len) == 16384 and v(m.max_num_seqs) == 256
    assert v(m.gpus) == 8 and v(m.gpu_type) == "H200"
    assert v(m.engine_version) == "latest"  # a git-sha tag


@pytest.mark.parametrize(("gpu", "count", "name"), [
    ("H100:8", 8, "H100"), ("8:H100", 8, "H100"), ("A100:40GB:2", 2, "A100"),
    ("24GB..", 1, None), ("A100:1..2", None, "A100"),
])
def test_dstack_gpu_spellings(gpu: str, count: int | None, name: str | None) -> None:
    text = f"""type: task
image: vllm/vllm-openai:v0.9.0
commands:
  - vllm serve Qwen/Qwen3-8B
resources:
  gpu: {gpu}
"""
    (m,) = extract_text(text)
    assert (v(m.gpus) if count is not None else m.gpus.__class__) == (
        count if count is not None else Unresolved)
    assert v(m.gpu_type) == name
    assert v(m.engine_version) == "0.9.0"


# --- Azure ML -------------------------------------------------------------------------------


def test_azureml_tgi_legacy_num_gpus() -> None:
    m = one("tgi/azureml-deployment-bloom-8gpu.yaml")
    assert m.format == "azureml" and v(m.engine) == "tgi"
    assert v(m.model) == "bigscience/bloom" and line(m.model) == 8
    assert v(m.tp) == 8 and line(m.tp) == 9  # NUM_GPUS, not NUM_SHARD
    assert v(m.engine_version) == "0.3.1"
    assert v(m.gpus) == 8 and v(m.gpu_type) == "A100-80GB"
    assert m.max_model_len is None


# --- negatives ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "resources:\n  accelerators: A100:8\nsetup: pip install torch\nrun: torchrun train.py\n",
    "type: task\nimage: pytorch/pytorch:2.3.0\ncommands:\n  - python train.py\n"
    "resources:\n  gpu: 8\n",
    "type: service\nimage: vllm/vllm-openai:v0.9.0\ncommands:\n  - python my_server.py\n",
])
def test_specs_that_start_no_engine_serve_nothing(text: str) -> None:
    assert extract_text(text) == []


@pytest.mark.parametrize("text", [
    "name: CI\non:\n  push:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
    "    - run: vllm serve x\n",
    "repos:\n- repo: local\n  hooks:\n  - id: kvlint\n    entry: kvlint lint\n",
    "name: my-app\nrun: python app.py\nport: 80\n",
    "type: service\nname: x\nreplicas: 2\n",
    "steps:\n  setup: make\n  run: ./serve\n",
])
def test_other_yaml_is_not_a_launcher_spec(text: str) -> None:
    assert extract_text(text) == []


def test_no_kubernetes_document_is_claimed() -> None:
    for path in sorted(CORPUS.rglob("*.y*ml")):
        docs = load_documents(path.read_text(encoding="utf-8"), str(path))
        if isinstance(docs, ManifestProblem):
            continue
        for index, doc in enumerate(docs):
            if isinstance(doc, dict) and ("kind" in doc or "apiVersion" in doc):
                assert claims(doc, DocumentContext(str(path), index, tuple(docs))) == [], path
