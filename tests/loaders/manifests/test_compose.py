"""docker-compose parser against the corpus (fixtures/manifests/SOURCES.md) and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.compose import interpolate
from tests.loaders.manifests.support import (
    extract,
    extract_path,
    extract_text,
    line,
    tree_with_a_link_out,
    v,
)


def test_sglang_entrypoint_plus_folded_command() -> None:
    (m,) = extract("sglang/compose-llama3.1-8b-folded-command.yaml")
    assert m.format == "compose" and m.name == "sglang"
    assert v(m.model) == "meta-llama/Llama-3.1-8B-Instruct" and line(m.model) == 20
    assert m.line == 20
    assert v(m.engine) == "sglang" and line(m.engine) == 19
    assert v(m.engine_version) == "latest"
    assert v(m.image) == "lmsysorg/sglang:latest"
    assert m.tp is None and m.pp is None and m.dp is None and m.max_model_len is None
    assert v(m.gpus) == 1  # device_ids: ["0"]


def test_tgi_service_only_embeddings_are_not_engines() -> None:
    found = extract("tgi/compose-opea-chatqna-tgi-envvar-model.yaml")
    assert [m.name for m in found] == ["tgi-service"]  # not the two TEI services
    (m,) = found
    assert isinstance(m.model, Unresolved) and "LLM_MODEL_ID" in m.model.text
    assert line(m.model) == 99
    assert v(m.engine) == "tgi" and v(m.engine_version) == "2.2.0"
    assert v(m.image) == "ghcr.io/huggingface/text-generation-inference:2.2.0"
    assert m.tp is None  # NUM_SHARD not set
    assert v(m.gpus) == 1 and line(m.gpus) == 105


def test_llamacpp_server_alias_is_not_the_model() -> None:
    (m,) = extract("llama.cpp/compose-llama-server-gemma2-baku-hf-repo-alias.yaml")
    assert v(m.engine) == "llamacpp"
    assert v(m.model) == "alfredplpl/gemma-2-baku-2b-it-gguf" and line(m.model) == 19
    assert m.served_name == "gpt-4o-mini"
    assert v(m.max_model_len) == 4096 and line(m.max_model_len) == 22
    assert v(m.gpus) == 0 and m.tp is None  # no reservation: llama.cpp runs on the CPU
    assert v(m.image) == "ghcr.io/ggerganov/llama.cpp:server"


def test_interpolation_uses_defaults_only() -> None:
    assert interpolate("${REGISTRY:-opea}/chatqna:${TAG:-latest}") == "opea/chatqna:latest"
    assert interpolate("${A-x}$$B") == "x$B"
    missing = interpolate("--model-id ${LLM_MODEL_ID}")
    assert isinstance(missing, Unresolved) and "LLM_MODEL_ID" in missing.reason


def test_nested_interpolation_and_expansions_that_vanish() -> None:
    """Compose reads a default that holds another ``${...}``, gives nothing for
    ``${VAR:+word}`` with VAR unset, and splits a command string after interpolating it: an
    empty expansion is no argument, one with blanks is several."""
    assert interpolate("${A:-${B:-x}}/${C:-y}") == "x/y"
    assert interpolate("${R:+--reasoning-parser ${R}}") == ""
    assert interpolate("${" * 40 + "}" * 40) is not None  # bounded, no error
    text = ("services:\n  sglang:\n    image: lmsysorg/sglang:${TAG:-v0.5.6.post2}\n"
            "    command: >\n      python3 -m sglang.launch_server\n"
            "      --model-path ${MODEL_PATH:-Qwen/Qwen3-8B}\n"
            "      ${REASONING_PARSER:+--reasoning-parser ${REASONING_PARSER}}\n"
            "      ${EXTRA_ARGS:-}\n      ${MORE:---context-length 8192}\n")
    (m,) = extract_text(text)
    assert v(m.model) == "Qwen/Qwen3-8B" and v(m.max_model_len) == 8192
    assert v(m.engine_version) == "0.5.6.post2" and m.engine_problems == ()


def test_a_model_then_options_goes_to_vllm_serve_when_the_entrypoint_is_known() -> None:
    """``vllm serve`` (the entrypoint of vLLM's images from 0.12.0, and of builds named for
    vLLM) takes the model positionally; an official tag before 0.12.0 has the api_server
    entrypoint that ignores it (vllm#32294): not read as the model."""
    service = ("services:\n  m:\n    image: {image}\n"
               "    command: Qwen/Qwen3-1.7B --max-model-len 16384\n")
    for image in ("vllm-cpu-env:latest", "vllm/vllm-openai:latest",
                  "vllm/vllm-openai:v0.12.0", "vllm/vllm-openai:v0.25.1"):
        (m,) = extract_text(service.format(image=image))
        assert v(m.model) == "Qwen/Qwen3-1.7B" and v(m.max_model_len) == 16384, image
    for image in ("vllm/vllm-openai:v0.8.5", "vllm/vllm-openai:v0.11.0"):
        assert extract_text(service.format(image=image)) == [], image
    assert extract_text(service.format(image="ghcr.io/acme/tgi-build:latest")) == []


def test_a_model_variable_with_a_default_then_options_is_the_positional_model() -> None:
    """``${MODEL:-Qwen/Qwen3.6-27B-FP8} --tensor-parallel-size ${TP:-2}`` on a vLLM image
    whose entrypoint is ``vllm serve``: the model is the default compose interpolates."""
    (m,) = extract_text("services:\n  m:\n    image: vllm/vllm-openai:${V:-v0.21.0}\n"
                        "    command: >\n      ${MODEL:-Qwen/Qwen3.6-27B-FP8}\n"
                        "      --tensor-parallel-size ${TP:-2}\n      ${EXTRA_FLAGS:-}\n")
    assert v(m.model) == "Qwen/Qwen3.6-27B-FP8" and v(m.tp) == 2
    assert v(m.engine_version) == "0.21.0"


def test_compose_variables_come_from_outside_not_the_container_env() -> None:
    text = """services:
  vllm:
    image: vllm/vllm-openai:v0.9.2
    environment:
      MODEL: not/this-one
    command: ["--model", "${MODEL}", "--served-model-name", "${NAME:-chat}",
              "--tensor-parallel-size", "${TP:-2}", "--kv-cache-dtype", "fp8"]
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: 2
              capabilities: [gpu]
"""
    (m,) = extract_text(text)
    assert isinstance(m.model, Unresolved)  # ${MODEL} is compose's, set outside the file
    assert m.served_name == "chat"
    assert v(m.tp) == 2 and v(m.kv_cache_dtype) == "fp8" and v(m.gpus) == 2
    assert v(m.engine) == "vllm" and v(m.engine_version) == "0.9.2"


def test_tgi_settings_from_environment_list() -> None:
    text = """services:
  tgi:
    image: ghcr.io/huggingface/text-generation-inference:3.0.1
    environment:
      - MODEL_ID=meta-llama/Llama-3.1-8B-Instruct
      - NUM_SHARD=2
      - HF_TOKEN
    gpus: all
"""
    (m,) = extract_text(text)
    assert v(m.model) == "meta-llama/Llama-3.1-8B-Instruct" and line(m.model) == 5
    assert v(m.tp) == 2 and line(m.tp) == 6
    # every GPU of the host: the engine takes its world (2 shards), the rest stay idle
    assert v(m.gpus) == 2 and line(m.gpus) == 8 and "gpus all" in m.gpus.source


def test_sh_c_command_and_device_count_all() -> None:
    text = """services:
  engine:
    image: ubuntu:22.04
    entrypoint: ["/bin/bash", "-c"]
    command:
      - |
        pip install vllm==0.8.5
        vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 8192
    deploy:
      resources:
        reservations:
          devices:
            - capabilities: [gpu]
              count: all
"""
    (m,) = extract_text(text)
    assert v(m.engine) == "vllm" and v(m.model) == "Qwen/Qwen2.5-7B-Instruct"
    assert line(m.model) == 8 and v(m.max_model_len) == 8192
    assert v(m.gpus) == 1 and "count all: every GPU of the host" in m.gpus.source


@pytest.mark.parametrize("text", [
    "services:\n  web:\n    image: nginx:1.25\n  db:\n    image: postgres:16\n",
    "name: ci\non: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    services:\n"
    "      redis:\n        image: redis\n    steps:\n      - run: make test\n",
    "services:\n  - name: api\n    port: 8080\n",
    "services:\n  api:\n    url: http://x\n    timeout: 3\n",
])
def test_not_compose_or_not_an_engine(text: str) -> None:
    assert extract_text(text) == []


def test_device_ids_from_an_unset_variable_are_not_counted() -> None:
    """``device_ids: ["${GPU_IDS:?error}"]`` names whatever the variable holds when compose
    runs ("0,1" or "3"): the count is unknown, not one."""
    from kvlint.manifests.base import Unresolved
    from kvlint.manifests.compose import _gpus

    service = {"deploy": {"resources": {"reservations": {"devices": [
        {"driver": "nvidia", "device_ids": ["${GPU_IDS:?error}"], "capabilities": ["gpu"]}]}}}}
    assert isinstance(_gpus(service), Unresolved)
    service["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] = ["0", "1"]
    assert getattr(_gpus(service), "value", None) == 2
    # one item listing two ids: Docker joins the items with commas into
    # NVIDIA_VISIBLE_DEVICES (moby setNvidiaGPUs), so the container sees both
    service["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] = ["5,6"]
    assert getattr(_gpus(service), "value", None) == 2


def test_every_gpu_with_an_unresolved_degree_stays_unresolved() -> None:
    """``count: all`` with ``--tensor-parallel-size ${TP}`` (set outside the file): neither
    the reservation nor the engine's world says how many GPUs are used."""
    text = """services:
  vllm:
    image: vllm/vllm-openai:v0.9.2
    command: --model Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size ${TP}
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              count: all
              capabilities: [gpu]
"""
    (m,) = extract_text(text)
    assert isinstance(m.gpus, Unresolved) and "every GPU of the host" in m.gpus.reason


NO_GPU = """services:
  vllm:
    image: {image}
    command: --model Qwen/Qwen2.5-7B-Instruct
{more}"""


@pytest.mark.parametrize(("image", "more", "gpus"), [
    ("vllm/vllm-openai:v0.9.2", "", 0),  # nothing asks Docker for a GPU
    ("vllm/vllm-openai:v0.9.2", "    runtime: nvidia\n", 1),  # every GPU: the engine's 1
    ("vllm/vllm-openai:v0.9.2", "    environment:\n      - NVIDIA_VISIBLE_DEVICES=all\n", None),
    ("vllm/vllm-openai:v0.9.2", "    devices:\n      - /dev/kfd\n      - /dev/dri\n", 1),
    ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.2", "", 0),  # a CPU build: none
    ("ghcr.io/huggingface/text-generation-inference:3.3.4-gaudi", "", None),  # another device
])
def test_a_service_that_reserves_no_gpu(image: str, more: str, gpus: int | None) -> None:
    (m,) = extract_text(NO_GPU.format(image=image, more=more))
    assert v(m.gpus) == gpus


@pytest.mark.parametrize(("more", "path"), [
    ("    volumes: !override\n      - cache:/root/.cache\n", "compose.sglang.yml"),
    ("    ports: !reset []\n", "docker-compose.gpu.yml"),
    ("", "docker-compose.override.yml"),  # merged onto docker-compose.yml by default
    ("", "compose.override.yaml"),
])
def test_an_overlay_file_leaves_the_gpus_to_its_base_file(more: str, path: str) -> None:
    # docker compose -f docker-compose.yml -f docker-compose.sglang.yml up: the base file's
    # GPU reservation is merged in, so an overlay reserving none is not "no GPU" (KV206)
    (m,) = extract_text(NO_GPU.format(image="vllm/vllm-openai:v0.9.2", more=more), path)
    assert m.gpus is None
    assert any("overlay" in note for note in m.notes)


def test_a_file_with_no_merge_tag_and_a_plain_name_is_no_overlay() -> None:
    (m,) = extract_text(NO_GPU.format(image="vllm/vllm-openai:v0.9.2",
                                      more="    labels: !Ref x\n"), "docker-compose.yml")
    assert v(m.gpus) == 0


def test_kv206_flags_a_service_with_no_gpu_but_not_llama_cpp(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from kvlint.cli import main

    def codes(text: str) -> list[tuple[str, str]]:
        path = tmp_path / "compose.yaml"
        path.write_text(text, encoding="utf-8")
        out = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                        "--offline", "--no-cache", "--format", "json",
                                        "--select", "KV206"])
        return [(f["code"], f["severity"]) for r in json.loads(out.stdout)["results"]
                for f in r["findings"]]

    assert codes(NO_GPU.format(image="vllm/vllm-openai:v0.9.2", more="")) == \
        [("KV206", "error")]  # vLLM's own CUDA image exits at start without a GPU
    assert codes(NO_GPU.format(image="example.org/team/vllm-server:1.4", more="")) == \
        [("KV206", "warning")]  # a custom image may hold a CPU build
    llama = ("services:\n  llama:\n    image: ghcr.io/ggml-org/llama.cpp:server\n"
             "    command: -m /models/m.gguf -c 4096\n")
    assert codes(llama) == []
    cpu = NO_GPU.format(image="public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.2", more="")
    assert codes(cpu) == []  # vLLM's CPU build needs no GPU


def test_every_gpu_with_fewer_visible_devices_than_the_engine_needs() -> None:
    """Every AMD GPU mounted, HIP_VISIBLE_DEVICES naming two, tp 4: the engine sees two."""
    (m,) = extract_text("""services:
  sglang:
    image: lmsysorg/sglang:v0.5.3-rocm630-mi30x
    devices:
      - /dev/kfd
      - /dev/dri
    environment:
      HIP_VISIBLE_DEVICES: "0,1"
    command: python3 -m sglang.launch_server --model-path org/m --tp 4
""")
    assert v(m.gpus) == 2 and m.gpus.source == "HIP_VISIBLE_DEVICES=0,1"


DOTENV_COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.10.1.1
    command: ["--model", "${MODEL}", "--tensor-parallel-size", "${TP:-1}",
              "--max-model-len", "$LEN", "--api-key", "${HF_TOKEN}"]
    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 2,
                                                   capabilities: [gpu]}]}}}
"""


def test_the_env_file_beside_a_compose_file_is_read_for_interpolation(tmp_path: Path) -> None:
    """Compose interpolates from the ``.env`` in the project directory: its values are the
    model and options; a name that looks like a secret is never taken, so no token can reach
    kvlint's output; without the file, the variables stay unresolved."""
    import json

    from click.testing import CliRunner

    from kvlint.cli import main
    from kvlint.manifests.compose import dotenv

    assert dotenv('MODEL=org/m\nexport TP="2"\nLEN=8192 # ctx\nHF_TOKEN=hf_x\nA=$B\n# c\n') == \
        {"MODEL": "org/m", "TP": "2", "LEN": "8192"}
    compose = tmp_path / "docker-compose.yml"
    compose.write_text(DOTENV_COMPOSE, encoding="utf-8")

    def serving(*extra: str) -> dict[str, object]:
        out = CliRunner().invoke(main, ["lint", str(compose), "--no-plugins", "--isolated",
                                        "--offline", "--format", "json", *extra])
        (result,) = json.loads(out.stdout)["results"]
        return {"ref": result["target"]["ref"], **result["serving"]}

    assert serving("--no-cache")["ref"] == "${MODEL}"
    (tmp_path / ".env").write_text("MODEL=Qwen/Qwen3-8B\nTP=2\nLEN=8192\nHF_TOKEN=hf_secret\n",
                                   encoding="utf-8")
    first = serving()
    assert (first["ref"], first["tp"], first["max_model_len"]) == ("Qwen/Qwen3-8B", 2, 8192)
    assert "hf_secret" not in json.dumps(first)
    (tmp_path / ".env").write_text("MODEL=Qwen/Qwen3-8B\nTP=1\nLEN=4096\n", encoding="utf-8")
    again = serving()  # the result cache sees the .env change
    assert (again["tp"], again["max_model_len"]) == (1, 4096)


@pytest.mark.parametrize(("image", "version"), [
    ("ghcr.io/ggerganov/llama.cpp:full-cuda", "latest"),
    ("ghcr.io/ggerganov/llama.cpp:${LLAMA_VARIANT}", None),
])
def test_llama_cpp_full_images_run_the_server_for_dash_s(image: str,
                                                         version: str | None) -> None:
    """The llama.cpp ``full`` images' entrypoint (``tools.sh``) runs ``llama-server`` with
    the rest of the arguments for ``-s``/``--server``; a tag set by a variable still names
    llama.cpp's repository, with its release unknown."""
    (m,) = extract_text("services:\n  llama_cpp:\n    image: " + image + "\n"
                        "    command: -s -m /model.gguf -c 4096\n", "docker-compose.yml")
    assert (v(m.engine), v(m.model), v(m.max_model_len)) == ("llamacpp", "/model.gguf", 4096)
    assert v(m.engine_version) == version


def test_dash_s_is_the_seed_where_the_image_runs_no_tools_script() -> None:
    from kvlint.manifests.images import tools_server

    assert not tools_server("ghcr.io/ggml-org/llama.cpp:server", ["-s", "1"])
    assert not tools_server("ghcr.io/ggml-org/llama.cpp:light", ["-s", "1"])
    assert not tools_server("vllm/vllm-openai:latest", ["-s"])
    assert tools_server("ghcr.io/ggml-org/llama.cpp:full", ["--server", "-m", "x"])


def test_a_triton_service_is_reported_not_skipped() -> None:
    """``tritonserver`` in a TensorRT-LLM Triton image serves the engines of a model
    repository kvlint does not read: the service is a served model whose model is
    unresolved (KV902), not a service passed over in silence."""
    text = ("services:\n  triton:\n    image: nvcr.io/nvidia/tritonserver:25.04-trtllm-python-py3\n"
            "    command:\n      - tritonserver\n      - --model-repository=/models\n"
            "  other:\n    image: nvcr.io/nvidia/tritonserver:25.04-py3\n"
            "    command: [tritonserver, --model-repository=/m]\n")
    (m,) = extract_text(text, "docker-compose.yml")
    assert v(m.engine) == "trtllm" and isinstance(m.model, Unresolved)
    assert m.model.text == "/models" and "model repository /models" in m.model.reason


def test_a_start_script_the_service_mounts_is_read(tmp_path: Path) -> None:
    """``./serve.vllm.sh:/serve.sh`` mounted and run by ``bash -c /serve.sh``: the engine
    command is read from the script in the tree, with the service's environment; its
    values sit on the service's command line (the script is another file)."""
    from kvlint.lint.extraction import extract_text as lint_extract
    from kvlint.plugins import get_plugin_manager

    (tmp_path / "serve.vllm.sh").write_text(
        '#!/bin/bash\nexec vllm serve "$MODEL_PATH" --tensor-parallel-size 2 '
        "--max-model-len 8192\n", encoding="utf-8")
    compose = tmp_path / "docker-compose.yml"
    text = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
            "    environment:\n      - MODEL_PATH=org/m\n"
            "    volumes:\n      - ./serve.vllm.sh:/serve.sh\n"
            '    entrypoint: ["/bin/bash", "-c"]\n    command: ["/serve.sh"]\n')
    compose.write_text(text, encoding="utf-8")
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = lint_extract(text, compose, pm, parsers)
    assert isinstance(found, list)
    (m,) = found
    assert (v(m.engine), v(m.model), v(m.tp), v(m.max_model_len)) == ("vllm", "org/m", 2, 8192)
    assert line(m.tp) == 9 and "serve.vllm.sh line 2" in m.tp.source  # type: ignore[union-attr]
    assert any("mounted at /serve.sh" in n for n in m.notes)
    outside = text.replace("./serve.vllm.sh", "/etc/serve.sh")  # not in the tree
    assert lint_extract(outside, compose, pm, parsers) == []


def test_a_mounted_script_outside_the_tree_or_not_a_file_is_not_read(tmp_path: Path) -> None:
    """Hostile mounts: a script that is a symlink out of the tree, a directory, a named
    volume: nothing is read, the service is left to the other checks."""
    from kvlint.lint.extraction import extract_text as lint_extract
    from kvlint.plugins import get_plugin_manager

    tree = tree_with_a_link_out(tmp_path, "serve.sh")
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    for source in ("./serve.sh", "./dir.sh", "models"):
        text = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n"
                f"    volumes:\n      - {source}:/serve.sh\n"
                '    entrypoint: ["/bin/bash", "-c"]\n    command: ["/serve.sh"]\n')
        found = lint_extract(text, tree / "docker-compose.yml", pm, parsers)
        assert found == [], source


@pytest.mark.parametrize(("command", "engine"), [
    # vLLM's own options (--max-model-len, --gpu-memory-utilization are no other engine's)
    ("--model /models/m --tensor-parallel-size 2 --max-model-len 8192 "
     "--gpu-memory-utilization 0.6", "vllm"),
    # SGLang's (--mem-fraction-static, --tp-size)
    ("--model-path org/m --tp-size 2 --mem-fraction-static 0.8", "sglang"),
    # too few to tell, or options both engines take: not read
    ("--model org/m --tensor-parallel-size 2", None),
    ("--model org/m --port 8000 --host 0.0.0.0 --tensor-parallel-size 2", None),
])
def test_a_built_image_of_no_dockerfile_is_read_by_its_options(command: str,
                                                               engine: str | None) -> None:
    text = (f"services:\n  llm:\n    build: {{context: ., dockerfile: llm.Dockerfile}}\n"
            f"    command: {command}\n")
    models = extract_text(text, "docker-compose.yml")
    if engine is None:
        assert models == []
        return
    (model,) = models
    assert model.engine is not None and model.engine.value == engine
    assert model.engine.source == "the command's options" and model.engine.line == 4
    assert isinstance(model.tp, Located) and model.tp.value == 2
    assert any("is not in the tree" in note for note in model.notes)


@pytest.mark.parametrize(("command", "found"), [
    ("${VLLM_ARGS}", True),
    ("$VLLM_ARGS $EXTRA", True),
    ('["${VLLM_ARGS}"]', True),
    ("${VLLM_ARGS:-}", False),  # an empty default: the image's own command, no served model
    ("--model ${MODEL:-Qwen/Qwen3-8B} ${EXTRA}", True),  # options: read as before
])
def test_a_whole_command_from_variables_is_an_unresolved_model(command: str,
                                                               found: bool) -> None:
    """``command: ${VLLM_ARGS}`` on vLLM's image: its server runs with options set outside
    the file, so the served model is unresolved (KV902 names the variable), never missed."""
    text = f"""services:
  vllm:
    image: vllm/vllm-openai:v0.12.0
    command: {command}
    deploy:
      resources:
        reservations:
          devices: [{{driver: nvidia, device_ids: ["0"], capabilities: [gpu]}}]
"""
    served = extract_text(text)
    if not found:
        assert served == []
        return
    (m,) = served
    assert v(m.engine) == "vllm" and v(m.engine_version) == "0.12.0" and v(m.gpus) == 1
    if command.startswith("--model"):
        assert v(m.model) == "Qwen/Qwen3-8B"
        return
    assert isinstance(m.model, Unresolved) and m.model.line == 4
    assert m.model.text == command.strip('[]"') and "set outside the compose file" in \
        m.model.reason


def test_a_long_unclosed_variable_command_is_read_in_linear_time() -> None:
    """A hostile ``command: ${AAAA...`` of 300,000 characters with no closing brace: not a
    whole variable, read at once (the word pattern has one class after the name's first
    letter, so it cannot backtrack quadratically)."""
    text = ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.12.0\n"
            f"    command: ${{{'A' * 300_000}\n")
    assert extract_text(text) == []


def test_a_variable_then_options_is_the_model_of_vllm_serve() -> None:
    """``command: [${HF_MODEL}, --tensor-parallel-size, "2"]`` to an official vLLM image whose
    entrypoint is ``vllm serve`` (any tag from 0.12, or one that names no release): the
    variable is the positional model (unresolved: set by the deploy's .env)."""
    text = ("services:\n  llm:\n    image: vllm/vllm-openai:gemma4-cu130\n    command:\n"
            "      - ${HF_MODEL}\n      - --tensor-parallel-size\n      - \"2\"\n"
            "    gpus: all\n")
    (m,) = extract_text(text, "docker-compose.yml")
    assert v(m.engine) == "vllm" and v(m.tp) == 2
    assert isinstance(m.model, Unresolved) and m.model.text == "${HF_MODEL}"


@pytest.mark.parametrize(("option", "engine"), [
    ("--max-lora-rank", "vllm"),     # a model then vLLM's options: vllm serve's form
    ("--tp-size", None),             # an option vLLM lacks: no engine takes a model first
])
def test_a_built_image_given_a_model_then_vllm_options(tmp_path: Path, option: str,
                                                       engine: str | None) -> None:
    """A service that builds its image from a Dockerfile not in the tree and passes a model
    then options only vLLM has is vLLM's server (its entrypoint is vllm serve)."""
    path = tmp_path / "docker-compose.yml"
    path.write_text("services:\n  s:\n    build: {context: ., dockerfile: Dockerfile2}\n"
                    "    image: my-gemma\n    command:\n"
                    f"      - google/gemma-3-4b-it\n      - --enable-lora\n      - {option}\n"
                    "      - '64'\n      - --max-model-len\n      - '8192'\n"
                    "      - --gpu-memory-utilization\n      - '0.8'\n")
    found = extract_path(path)
    assert [(v(m.engine), v(m.model)) for m in found] == \
        ([(engine, "google/gemma-3-4b-it")] if engine else [])


def test_tritonserver_listens_on_every_interface(tmp_path: Path) -> None:
    """A tritonserver service (TensorRT-LLM backend) binds 0.0.0.0 (HTTP 8000, gRPC 8001): not
    trtllm-serve's localhost, so its published ports answer (no KV705)."""
    import json

    from click.testing import CliRunner

    from kvlint.cli import main

    path = tmp_path / "docker-compose.yml"
    path.write_text("services:\n  t:\n"
                    "    image: nvcr.io/nvidia/tritonserver:24.03-trtllm-python-py3\n"
                    "    command: [tritonserver, --model-repository=/models]\n"
                    "    ports: ['8000:8000', '8001:8001']\n    gpus: all\n")
    result = CliRunner().invoke(main, ["lint", str(path), "--offline", "--isolated",
                                       "--no-plugins", "--format", "json"])
    codes = [f["code"] for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    assert "KV705" not in codes and "KV902" in codes
