"""Engine and version from container images and pip requirements
(kvlint.manifests.images)."""

from __future__ import annotations

import pytest

from kvlint.manifests.image_releases import NGC_VLLM, TRITON_TRTLLM
from kvlint.manifests.images import engine_from_image, engine_from_pip, split_image


@pytest.mark.parametrize(("image", "engine", "version"), [
    ("vllm/vllm-openai:v0.8.5", "vllm", "0.8.5"),
    ("vllm/vllm-tpu:latest", "vllm", "latest"),
    ("docker:vllm/vllm-openai:latest", "vllm", "latest"),  # SkyPilot image_id
    ("ac2-mirror-registry.cn-hangzhou.cr.aliyuncs.com/evaluate/vllm-openai:"
     "nightly-d00df624f313a6a5a7a6245b71448b068b080cd7", "vllm", "nightly"),
    ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang", "0.4.6.post1"),
    ("lmsysorg/sglang:latest", "sglang", "latest"),
    ("docker.io/lmsysorg/sglang:latest", "sglang", "latest"),
    ("ac2-mirror-registry.cn-hangzhou.cr.aliyuncs.com/evaluate/mooncake:"
     "0.3.7.post2-sglang0.5.5.post3-deepep", "sglang", "0.5.5.post3"),
    ("ghcr.io/huggingface/text-generation-inference:2.2.0", "tgi", "2.2.0"),
    ("ghcr.io/huggingface/text-generation-inference:latest", "tgi", "latest"),
    ("ghcr.io/huggingface/text-generation-inference:sha-f852190", "tgi", "latest"),
    ("ghcr.io/huggingface/text-generation-inference:1.1.0", "tgi", "1.1.0"),
    ("db4c2190dd824d1f950f5d1555fbadf0.azurecr.io/text-generation-inference:0.3.1", "tgi",
     "0.3.1"),
    ("us-docker.pkg.dev/deeplearning-platform-release/gcr.io/"
     "huggingface-text-generation-inference-cu121.2-2.ubuntu2204:latest", "tgi", "2.2"),
    ("openmmlab/lmdeploy:v0.4.2", "lmdeploy", "0.4.2"),
    ("openmmlab/lmdeploy:latest", "lmdeploy", "latest"),
    ("kube-ai-registry.cn-shanghai.cr.aliyuncs.com/kube-ai/lmdeploy:v0.4.2", "lmdeploy",
     "0.4.2"),
    ("nvcr.io/nvidia/tritonserver:24.07-trtllm-python-py3", "trtllm", "0.11.0"),
    ("nvcr.io/nvidia/tensorrt-llm/release:1.0.0", "trtllm", "1.0.0"),
    ("dstackai/tensorrt_llm:9b931c0f6305aefa3660e6fb84a76a42c0eef167 ", "trtllm", "latest"),
    ("ghcr.io/ggerganov/llama.cpp:server", "llamacpp", "latest"),
    ("ghcr.io/ggml-org/llama.cpp:server-b5415", "llamacpp", "b5415"),
    ("ghcr.io/ggml-org/llama.cpp:server-cuda-b5415", "llamacpp", "b5415"),
    ("llamacpp-llama3-8b-instruct-bartowski-q5km:latest", "llamacpp", None),
    ("lmcache/vllm-openai:2025-05-05-v1", "vllm", None),
    ("lmcache/vllm-openai:latest", "vllm", "latest"),
    ("us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/pytorch-vllm-serve:"
     "20250312_0916_RC01", "vllm", None),
    ("rocm/vllm-dev:20250205_aiter", "vllm", None),
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0", "vllm", None),
    ("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.0.2", "trtllm", None),
    ("ghcr.io/llm-d/llm-d-cuda:v0.9.0", "vllm", None),
    ("ghcr.io/llm-d/llm-d-cuda-dev:pr-429", "vllm", None),
    ("my-registry/sglang-runtime:my-tag", "sglang", None),
    ("ghcr.io/huggingface/text-embeddings-inference:cpu-1.5", None, None),
    ("ghcr.io/huggingface/text-embeddings-inference:1.5", None, None),
    ("ghcr.io/llm-d/llm-d-routing-sidecar:v0.3.0", None, None),
    ("rayproject/ray-ml:2.33.0.914af0-py311", None, None),
    ("lmcache/lmstack-sidecar:latest", None, None),
    ("ubuntu:22.04", None, None),
    ("redis/redis-stack:7.2.0-v9", None, None),
    ("<image>", None, None),
    ("${REGISTRY:-opea}/chatqna:${TAG:-latest}", None, None),
])
def test_engine_from_image(image: str, engine: str | None, version: str | None) -> None:
    found_engine, found_version, note = engine_from_image(image)
    assert (found_engine, found_version) == (engine, version)
    assert isinstance(note, str)


def test_notes_explain_misleading_tags() -> None:
    assert "not an LLM engine" in engine_from_image(
        "ghcr.io/huggingface/text-embeddings-inference:cpu-1.5")[2]
    assert "Dynamo" in engine_from_image("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.8.0")[2]
    assert "llm-d" in engine_from_image("ghcr.io/llm-d/llm-d-cuda:v0.9.0")[2]
    assert "date" in engine_from_image("lmcache/vllm-openai:2025-05-05-v1")[2]
    assert "base" in engine_from_image("rocm/vllm-dev:20250205_aiter")[2]
    assert "image name" in engine_from_image(
        "us-docker.pkg.dev/deeplearning-platform-release/gcr.io/"
        "huggingface-text-generation-inference-cu121.2-2.ubuntu2204:latest")[2]
    assert "composite tag" in engine_from_image(
        "mooncake:0.3.7.post2-sglang0.5.5.post3-deepep")[2]


@pytest.mark.parametrize(("image", "expected"), [
    # ROCm: the vLLM version in the tag; "latest" only for an undated rolling tag
    ("rocm/vllm:rocm6.2_mi300_ubuntu20.04_py3.9_vllm_0.6.4", ("vllm", "0.6.4")),
    ("rocm/vllm:rocm6.3.1_instinct_vllm0.8.3_20250410", ("vllm", "0.8.3")),
    ("rocm/vllm-dev:rocm6.4.1_vllm_0.10.0_20250812", ("vllm", "0.10.0")),
    ("rocm/vllm-dev:nightly", ("vllm", "nightly")),
    ("rocm/vllm-dev:main", ("vllm", "latest")),
    ("rocm/vllm:latest", ("vllm", "latest")),
    ("rocm/vllm-dev", ("vllm", "latest")),
    ("rocm/vllm-dev:nightly_main_20250101", ("vllm", None)),
    ("rocm/vllm-dev:base", ("vllm", None)),
    ("rocm/sgl-dev:v0.4.6.post4-rocm630", ("sglang", "0.4.6.post4")),
    ("rocm/sgl-dev:20250520", ("sglang", None)),
    ("lmsysorg/sglang:v0.4.6-rocm630", ("sglang", "0.4.6")),
    # NGC: YY.MM container releases, mapped only through the cited tables
    ("nvcr.io/nvidia/vllm:25.09-py3", ("vllm", None)),
    ("nvcr.io/nvidia/vllm:25.10-py3", ("vllm", "0.10.2")),
    ("nvcr.io/nvidia/vllm:26.01-py3", ("vllm", "0.11.1")),
    ("nvcr.io/nvidia/vllm:latest", ("vllm", None)),
    ("nvcr.io/nvidia/sglang:25.10-py3", ("sglang", None)),
    ("nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3", ("trtllm", "0.12.0")),
    ("nvcr.io/nvidia/tritonserver:25.09-trtllm-python-py3", ("trtllm", "1.0.0")),
    ("nvcr.io/nvidia/tritonserver:25.11-trtllm-python-py3", ("trtllm", None)),
    ("nvcr.io/nvidia/tritonserver:23.10-trtllm-python-py3", ("trtllm", None)),
    ("vllm/vllm-openai:25.09", ("vllm", None)),  # a YY.MM tag is no vLLM version
    # cloud vendors' containers
    ("763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-pytorch-tgi-inference:"
     "2.4.0-tgi2.3.1-gpu-py311-cu124-ubuntu22.04", ("tgi", "2.3.1")),
    ("763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-pytorch-tgi-inference:"
     "2.1.2-optimum0.0.25-neuronx-py310-ubuntu22.04", ("tgi", None)),
    ("763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.29.0-lmi11.0.0-cu124",
     ("vllm", None)),
    ("763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:"
     "0.29.0-tensorrtllm0.11.0-cu124", ("trtllm", "0.11.0")),
    ("763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:"
     "0.26.0-deepspeed0.12.6-cu121", (None, None)),
    ("763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:"
     "0.10.2-gpu-py312-cu128-ubuntu22.04-ec2", ("vllm", "0.10.2")),
    ("us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/pytorch-vllm-serve:"
     "latest", ("vllm", None)),
    # CUDA / OS suffixes
    ("vllm/vllm-openai:v0.8.5-cu126", ("vllm", "0.8.5")),
    ("vllm/vllm-openai:0.6.3.post1-ubuntu22.04", ("vllm", "0.6.3.post1")),
    ("vllm/vllm-openai:v0.9.0-cuda12.8", ("vllm", "0.9.0")),
    ("lmsysorg/sglang:v0.5.0rc0-cu126", ("sglang", "0.5.0rc0")),
    ("openmmlab/lmdeploy:v0.7.3-cu12", ("lmdeploy", "0.7.3")),
    # undatable tags: unknown, never "latest"
    ("vllm/vllm-openai:nightly-20250801", ("vllm", None)),
    ("vllm/vllm-openai:cu126", ("vllm", None)),
    ("lmsysorg/sglang:blackwell", ("sglang", None)),
    ("ghcr.io/huggingface/text-generation-inference:1234567", ("tgi", None)),
    ("ghcr.io/huggingface/text-generation-inference:sha-f852190-rocm", ("tgi", "latest")),
    ("lmcache/vllm-openai:v0.3.0-vllm0.8.5", ("vllm", "0.8.5")),
])
def test_engine_from_vendor_images(image: str,
                                   expected: tuple[str | None, str | None]) -> None:
    engine, version, note = engine_from_image(image)
    assert (engine, version) == expected
    if engine is not None and version is None:
        assert note  # unknown always says why


@pytest.mark.parametrize(("image", "words"), [
    ("nvcr.io/nvidia/vllm:25.09-py3", ("25.09", "YY.MM", "no cited release note")),
    ("nvcr.io/nvidia/vllm:25.10-py3",
     ("vLLM 0.10.2", "https://docs.nvidia.com/deeplearning/frameworks/vllm-release-notes/"
      "rel-25-10.html")),
    ("nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3",
     ("TensorRT-LLM 0.12.0", "compatibility.html")),
    ("763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.29.0-lmi11.0.0-cu124",
     ("LMI 11.0.0", "no cited table")),
    ("rocm/vllm:rocm6.2_mi300_ubuntu20.04_py3.9_vllm_0.6.4", ("base", "vLLM 0.6.4")),
    ("rocm/vllm-dev:nightly_main_20250101", ("dated",)),
    ("vllm/vllm-openai:nightly-20250801", ("nightly build of 20250801",)),
    ("vllm/vllm-openai:25.09", ("YY.MM",)),
    ("us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/pytorch-vllm-serve:"
     "latest", ("Model Garden",)),
    ("763104351884.dkr.ecr.us-east-1.amazonaws.com/huggingface-pytorch-tgi-inference:"
     "2.1.2-optimum0.0.25-neuronx-py310-ubuntu22.04", ("PyTorch",)),
])
def test_vendor_notes(image: str, words: tuple[str, ...]) -> None:
    note = engine_from_image(image)[2]
    for word in words:
        assert word in note


def test_release_tables_cite_sources() -> None:
    for table in (NGC_VLLM, TRITON_TRTLLM):
        for release, row in table.items():
            assert len(release) == 5 and release[2] == "."  # YY.MM
            assert row.source.startswith("https://docs.nvidia.com/")
            assert row.version[0].isdigit()


def test_split_image() -> None:
    assert split_image("localhost:5000/vllm/vllm-openai:v0.9.0") == (
        "localhost:5000/vllm/vllm-openai", "v0.9.0", None)
    assert split_image("vllm/vllm-openai@sha256:abc") == ("vllm/vllm-openai", None,
                                                          "sha256:abc")
    assert engine_from_image("vllm/vllm-openai@sha256:abc")[:2] == ("vllm", None)


@pytest.mark.parametrize(("spec", "expected"), [
    ("vllm==0.6.1.post2", ("vllm", "0.6.1.post2")),
    ("vllm==0.6.3post1", ("vllm", "0.6.3.post1")),  # pip's normal form
    ("vllm==v0.7.0", ("vllm", "0.7.0")),
    ("vllm>=0.10.0", ("vllm", None)),
    ('"sglang[all]>=0.4.2.post4"', ("sglang", None)),
    ("sglang[all]==0.4.6.post1", ("sglang", "0.4.6.post1")),
    ("lmdeploy==0.4.2", ("lmdeploy", "0.4.2")),
    ("tensorrt_llm==1.0.0", ("trtllm", "1.0.0")),
    ("vllm==0.8.*", ("vllm", "0.8.5.post1")),  # the newest 0.8 release
    ("vllm", ("vllm", None)),
    ("ray>=2.48.0", None),
    ("huggingface_hub[cli]", None),
    ("transformers==4.45.0", None),
    ("-r requirements.txt", None),
    ("not a requirement!!", None),
    # a wheel installed by path: the version its file name carries
    ("/rel/vllm-0.6.3-cp38-abi3-manylinux1_x86_64.whl", ("vllm", "0.6.3")),
    ("text_generation_server-1.4.4-py3-none-any.whl[bnb]", ("tgi", "1.4.4")),
    ("text-generation-server==2.0.1", ("tgi", "2.0.1")),
    ("vllm-*.whl", None),
    ("flash_attn-2.3.2-cp311-cp311-linux_x86_64.whl", None),
])
def test_engine_from_pip(spec: str, expected: tuple[str, str | None] | None) -> None:
    assert engine_from_pip(spec) == expected


@pytest.mark.parametrize(("spec", "expected"), [
    ("vllm==0.6.*", ("vllm", "0.6.6.post1")),       # the newest 0.6 release pip installs
    ("vllm<0.7", ("vllm", "0.6.6.post1")),
    ("vllm>=0.4,<0.5", ("vllm", "0.4.3")),
    ("lmdeploy<=0.7.3", ("lmdeploy", "0.7.3")),
    ("vllm>=0.4.0", ("vllm", None)),                # allows the newest: latest, as before
    ("sglang[all]>=0.4.2.post4", ("sglang", None)),
])
def test_a_range_that_leaves_the_newest_release_out(spec: str,
                                                     expected: tuple[str, str | None]) -> None:
    from kvlint.manifests.images import engine_from_pip

    assert engine_from_pip(spec) == expected


@pytest.mark.parametrize(("image", "fixed"), [
    ("vllm/vllm-openai:latest", False), ("vllm/vllm-openai:nightly", False),
    ("vllm/vllm-openai", False), ("lmcache/vllm-openai:latest-nightly", False),
    ("vllm/vllm-openai:v0.11.0", False),
    ("vllm/vllm-openai:nightly-da4455609d9e29abebc15f6c598dfd772c2b6513", True),
    ("ghcr.io/org/vllm:sha-1a2b3c4", True), ("vllm/vllm-openai@sha256:" + "0f" * 32, True),
    ("vllm/vllm-openai:nightly-20250101", False),  # a date: no hex letter, not a commit
])
def test_one_fixed_build_is_told_from_a_rolling_tag(image: str, fixed: bool) -> None:
    from kvlint.manifests.images import fixed_build

    assert fixed_build(image) is fixed


@pytest.mark.parametrize(("image", "expected"), [
    ("/images/tensorrt-llm-release-1.3.0rc18.sif", ("trtllm", "1.3.0rc18")),
    ("vllm-openai_v0.8.5.sif", ("vllm", "0.8.5")),
    ("/containers/vllm/vllm_25.09.sif", ("vllm", None)),  # a site's YY.MM, no release
    ("myorg/vllm:0.1", ("vllm", None)),  # a team's own numbering
    ("./containers/sglang.sif", ("sglang", None)),  # one fixed build: not "latest"
    ("/x/ubuntu-22.04.sif", (None, None)),
])
def test_an_image_file_is_read_by_its_name(image: str, expected: tuple[str | None, ...]) -> None:
    assert engine_from_image(image)[:2] == expected


@pytest.mark.parametrize(("image", "day"), [
    ("us-docker.pkg.dev/vertex-ai/x/pytorch-vllm-serve:20250312_0916_RC01", "2025-03-12"),
    ("lmsysorg/sglang:nightly-dev-2025-06-12-abc", "2025-06-12"),
    ("vllm/vllm-openai:v0.8.5", None),
    ("repo/img:20251399", None),            # no such day
    ("repo/img@sha256:" + "20250312" * 8, None),  # a digest is not a tag
    ("repo/img:build-123202503120", None),  # digits on both sides
])
def test_a_tag_that_dates_its_build(image: str, day: str | None) -> None:
    from kvlint.manifests.image_refs import tag_date

    found = tag_date(image)
    assert (found.isoformat() if found else None) == day
