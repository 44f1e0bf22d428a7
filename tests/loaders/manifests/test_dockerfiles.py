"""Dockerfiles (:mod:`kvlint.manifests.dockerfiles`): the command the last stage's container
runs, as the Dockerfile reference defines ENTRYPOINT, CMD and ENV; fixtures written here in
the shapes of public serving Dockerfiles."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kvlint.lint.extraction import extract_text
from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.dockerfiles import dockerfile_models, is_dockerfile
from kvlint.plugins import get_plugin_manager


def served(text: str, name: str = "Dockerfile") -> list[ServedModel]:
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract_text(textwrap.dedent(text), Path(name), pm, parsers)
    assert isinstance(found, list)
    return list(found)


def v(value: object) -> object:
    return value.value if isinstance(value, Located) else value


def brief(m: ServedModel) -> tuple[object, ...]:
    return v(m.model), v(m.engine), v(m.engine_version), v(m.tp), m.line


@pytest.mark.parametrize(("name", "yes"), [
    ("Dockerfile", True), ("Dockerfile.cuda", True), ("vllm.Dockerfile", True),
    ("Containerfile", True), ("docker-compose.yml", False), ("Dockerfile.md", True),
])
def test_names(name: str, yes: bool) -> None:
    assert is_dockerfile(f"deploy/{name}") is yes


def test_exec_cmd_goes_to_the_images_own_entrypoint() -> None:
    """No ENTRYPOINT: ``docker run IMAGE CMD...``, so vllm-openai's server takes CMD."""
    (m,) = served("""\
        FROM vllm/vllm-openai:v0.11.0
        ENV HF_HOME=/models
        CMD ["--model", "Qwen/Qwen3-8B", \\
             "--tensor-parallel-size", "2"]
        """)
    assert brief(m) == ("Qwen/Qwen3-8B", "vllm", "0.11.0", 2, 3)


def test_entrypoint_with_cmd_arguments_and_env() -> None:
    (m,) = served("""\
        FROM ghcr.io/huggingface/text-generation-inference:2.4.1 AS base
        FROM base
        ENV MODEL_ID=mistralai/Mistral-7B-v0.1 NUM_SHARD=2
        ENTRYPOINT ["text-generation-launcher"]
        CMD ["--max-total-tokens", "8192"]
        """)
    assert (v(m.model), v(m.engine), v(m.tp)) == ("mistralai/Mistral-7B-v0.1", "tgi", 2)


@pytest.mark.parametrize(("form", "model", "refused"), [
    # exec form: no shell, the program gets "${MODEL_NAME}" as written
    ('CMD ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "${MODEL_NAME}"]',
     "${MODEL_NAME}", True),
    # shell form, and a shell the exec form starts: the variable is expanded
    ("CMD python3 -m vllm.entrypoints.openai.api_server --model ${MODEL_NAME}",
     "Qwen/Qwen3-8B", False),
    ('ENTRYPOINT ["/bin/sh", "-c", "vllm serve $MODEL_NAME --max-model-len 4096"]',
     "Qwen/Qwen3-8B", False),
])
def test_exec_form_does_not_expand_variables(form: str, model: str, refused: bool) -> None:
    (m,) = served(f"""\
        FROM python:3.11-slim
        RUN pip install vllm==0.10.1.1
        ENV MODEL_NAME=Qwen/Qwen3-8B
        {form}
        """)
    assert v(m.model) == model
    problems = [p for p in m.engine_problems if p.data.get("reason") == "exec-form-variable"]
    assert bool(problems) is refused
    if refused:
        assert problems[0].kind == "value" and problems[0].line == 4
        assert "no shell runs to expand it" in problems[0].message


def test_shell_form_cmd_runs_each_command() -> None:
    """``CMD a & b`` runs under ``/bin/sh -c``: the engine is the first command only."""
    (m,) = served("""\
        FROM python:3.11
        RUN pip install "sglang[all]==0.4.6.post1"
        # Start inference & web servers
        CMD python -m sglang.launch_server \\
            --model-path Qwen/Qwen3-30B-A3B-FP8 --tp 2 & \\
            bun index.ts
        """)
    assert (v(m.model), v(m.engine), v(m.tp)) == ("Qwen/Qwen3-30B-A3B-FP8", "sglang", 2)


def test_only_the_last_stage_counts() -> None:
    assert served("""\
        FROM vllm/vllm-openai:v0.11.0 AS server
        CMD ["--model", "m/x"]
        FROM nginx:1.27
        CMD ["nginx", "-g", "daemon off;"]
        """) == []


def test_a_new_entrypoint_resets_cmd() -> None:
    (m,) = served("""\
        FROM vllm/vllm-openai:v0.11.0
        CMD ["--model", "m/old"]
        ENTRYPOINT ["vllm", "serve", "m/new"]
        """)
    assert v(m.model) == "m/new"


def test_hostile_exec_forms_are_not_read() -> None:
    """Nesting past the JSON decoder's depth, or items that are not strings, are no
    command (no internal error)."""
    deep = "[" * 100_000 + "]" * 100_000
    assert served(f"FROM vllm/vllm-openai:v0.11.0\nCMD {deep}\n") == []
    assert served('FROM vllm/vllm-openai:v0.11.0\nCMD ["--model", 7]\n') == []


@pytest.mark.parametrize(("base", "refused"), [
    ("vllm/vllm-openai:latest", True), ("ghcr.io/huggingface/text-generation-inference:3.0",
                                        True),
    ("python:3.12", False), ("lmsysorg/sglang:v0.5.6", False),  # no server ENTRYPOINT
])
def test_a_shell_form_cmd_on_an_engine_image_goes_to_its_server_entrypoint(
        base: str, refused: bool) -> None:
    """With no ENTRYPOINT of its own, a shell-form CMD is ``/bin/sh -c CMD`` handed to the
    base image's ENTRYPOINT: the vLLM or TGI server, which exits at start on '/bin/sh'."""
    (m,) = served(f"""\
        FROM {base}
        ENV MODEL_NAME=Qwen/Qwen2.5-7B-Instruct
        CMD python /app/download.py && \\
            python -m vllm.entrypoints.openai.api_server --model ${{MODEL_NAME}} \\
            --max-model-len 4096
        """)
    assert v(m.model) == "Qwen/Qwen2.5-7B-Instruct" and v(m.max_model_len) == 4096
    reasons = [p.data.get("reason") for p in m.engine_problems]
    assert reasons == (["entrypoint-receives-program"] if refused else [])
    assert not refused or "shell form" in m.engine_problems[0].message
    # an emptied ENTRYPOINT runs the command
    (ok,) = served(f"FROM {base}\nENTRYPOINT []\nCMD vllm serve org/m --max-model-len 8\n")
    assert ok.engine_problems == ()


def test_a_command_the_dockerfile_runs_itself_takes_the_base_images_version() -> None:
    text = ("FROM vllm/vllm-openai:v0.8.5\n"
            "ENTRYPOINT python3 -m vllm.entrypoints.openai.api_server \\\n"
            "    --model ${MODEL_NAME:-org/m} ${REVISION:+--revision \"$REVISION\"}\n")
    (found,) = dockerfile_models(text, "Dockerfile")
    assert isinstance(found.engine_version, Located) and found.engine_version.value == "0.8.5"
    assert isinstance(found.image, Located) and found.image.source == "FROM"
    (other,) = dockerfile_models("FROM python:3.12\nCMD vllm serve org/m\n", "Dockerfile")
    assert not isinstance(other.engine_version, Located)  # a base image of no engine: unknown


def test_arg_defaults_reach_env_and_a_run_pip_pin_is_the_version() -> None:
    """An ``ARG`` default substituted into an ``ENV`` at build time, a CMD that reads it, and
    the engine release the stage's ``RUN pip install`` pins on a CUDA base image."""
    (m,) = served("""\
        FROM nvidia/cuda:12.4.0-devel-ubuntu22.04
        RUN apt-get update && apt-get install -y python3-pip
        RUN pip install --no-cache-dir \\
            vllm==0.11.0 \\
            lmcache==0.3.9
        ARG MODEL_NAME=meta-llama/Llama-3.1-8B-Instruct
        ENV MODEL_NAME=${MODEL_NAME}
        CMD ["sh", "-c", "vllm serve ${MODEL_NAME} --tensor-parallel-size 2"]
        """)
    assert brief(m)[:4] == ("meta-llama/Llama-3.1-8B-Instruct", "vllm", "0.11.0", 2)
    assert m.engine_version is not None and "pip vllm==0.11.0" in m.engine_version.source


def test_a_run_pin_written_with_an_arg_installs_its_default() -> None:
    """``ARG SGLANG_VERSION=0.5.5`` then ``pip install "sglang[srt]==${SGLANG_VERSION}"``:
    the RUN shell sees the ARG, so a plain build installs 0.5.5."""
    (m,) = served("""\
        FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
        ARG SGLANG_VERSION=0.5.5
        RUN pip install --no-cache-dir \\
            "sglang[srt]==${SGLANG_VERSION}" torch
        CMD ["python3", "-m", "sglang.launch_server", "--model", "org/m", "--tp", "1"]
        """)
    assert brief(m)[:3] == ("org/m", "sglang", "0.5.5")


def test_an_engine_image_tag_still_gives_the_version_without_a_pin() -> None:
    (m,) = served("""\
        FROM vllm/vllm-openai:v0.10.1.1
        ARG MODEL=Qwen/Qwen3-8B
        ENV MODEL_ID=$MODEL
        RUN pip install --no-cache-dir lmcache
        CMD ["--model", "${MODEL_ID}"]
        """)
    assert v(m.engine_version) == "0.10.1.1"


LLAMACPP_BUILD = """\
    FROM ubuntu:22.04 AS builder
    RUN apt-get update && apt-get install -y build-essential cmake git
    RUN git clone https://github.com/ggml-org/llama.cpp /src && cd /src && \\
        cmake -B build {flags} && cmake --build build -j
    FROM {base}
    COPY --from=builder /src/build/bin/llama-server /usr/local/bin/
    CMD ["llama-server", "-m", "/models/m.gguf", "-ngl", "99"]
    """


@pytest.mark.parametrize(("flags", "base", "gpus"), [
    ("", "ubuntu:22.04", 0),  # no GPU backend: a CPU build, whatever -ngl says
    ("-DGGML_CUDA=ON", "nvidia/cuda:12.4.1-runtime-ubuntu22.04", None),
    ("-DGGML_VULKAN=ON", "ubuntu:22.04", None),
    ("", "nvidia/cuda:12.4.1-runtime-ubuntu22.04", None),  # the build may come from the base
])
def test_a_llamacpp_built_without_a_gpu_backend_runs_on_the_cpu(flags: str, base: str,
                                                              gpus: int | None) -> None:
    (m,) = served(LLAMACPP_BUILD.format(flags=flags, base=base))
    assert v(m.engine) == "llamacpp"
    if gpus == 0:
        assert (v(m.gpus), v(m.gpu_type)) == (0, "CPU")
        assert isinstance(m.gpus, Located) and m.gpus.line == 3
    else:
        assert v(m.gpus) != 0 and v(m.gpu_type) != "CPU"


def test_an_exec_form_that_is_not_json_runs_nothing() -> None:
    r"""``\$i`` inside an exec-form string is no JSON escape: Docker runs the array as shell
    form, so the container exits at start. The command meant is still read, with the error."""
    text = (
        'FROM python:3.11\nRUN pip install vllm==0.8.5\nENV MODEL=Qwen/Qwen3-8B\n'
        'CMD ["bash", "-c", "python3 -m vllm.entrypoints.openai.api_server --model $MODEL & '
        'for i in 1 2; do echo \\$i; done; wait"]\n')
    (m,) = served(text)
    assert (v(m.model), v(m.engine_version)) == ("Qwen/Qwen3-8B", "0.8.5")
    (problem,) = m.engine_problems
    assert problem.data["reason"] == "exec-form-not-json" and problem.line == 4
    assert "Invalid \\escape" in problem.message
    # the same command written as JSON: no problem
    (ok,) = served(text.replace("\\$i", "\\\\$i"))
    assert not ok.engine_problems


def test_a_server_started_by_run_is_an_error_on_its_line() -> None:
    """``RUN vllm serve ...`` in a Dockerfile with no CMD: the build runs it (no GPU, and it
    never exits) and the image starts nothing."""
    (m,) = served("""\
        FROM python:3.11
        RUN pip install vllm
        RUN vllm serve "Qwen/Qwen2.5-VL-72B-Instruct"
        """)
    assert v(m.model) == "Qwen/Qwen2.5-VL-72B-Instruct" and m.line == 3
    assert [p.data.get("reason") for p in m.engine_problems] == ["server-at-build"]
    # a RUN that installs or downloads only starts nothing
    assert served("FROM python:3.11\nRUN pip install vllm\n") == []


# --- KV709: an engine pin pip cannot install on the image's Python -------------------------


def _refusals(text: str) -> list[tuple[str, str | None, int | None]]:
    return [(p.kind, p.data.get("python"), p.line) for m in served(textwrap.dedent(text))
            for p in m.engine_problems if p.kind == "install"]


def test_a_pin_the_images_python_cannot_install() -> None:
    """Ubuntu 20.04's python3 is 3.8; vLLM 0.9.2 requires >=3.9,<3.13 (PyPI): the build
    stops at the pin. 22.04's 3.10 installs it; python:3.13 does not."""
    text = """\
        FROM nvidia/cuda:12.1.0-base-ubuntu20.04
        RUN apt-get update && apt-get install -y git python3-pip
        RUN pip install vllm[openai]==0.9.2
        CMD ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "org/m"]
        """
    assert _refusals(text) == [("install", "3.8", 3)]
    assert _refusals(text.replace("ubuntu20.04", "ubuntu22.04")) == []
    official = text.replace("nvidia/cuda:12.1.0-base-ubuntu20.04", "python:3.13-slim")
    assert _refusals(official) == [("install", "3.13", 3)]
    assert _refusals(official.replace("==0.9.2", ">=0.9.2")) == []  # pip picks a release


def test_a_stage_that_brings_its_own_python_is_not_judged() -> None:
    """A versioned python3.X package, deadsnakes, conda or uv's Python: the interpreter is
    not the distribution's python3, and kvlint does not guess it."""
    base = ("FROM ubuntu:20.04\nRUN apt-get update && apt-get install -y python3-pip{extra}\n"
            "RUN pip install vllm==0.9.2\nCMD [\"vllm\", \"serve\", \"org/m\"]\n")
    assert _refusals(base.format(extra="")) == [("install", "3.8", 3)]
    for extra in (" python3.10 python3.10-venv", "\nRUN conda create -n v python=3.11",
                  "\nRUN add-apt-repository ppa:deadsnakes/ppa",
                  "\nRUN uv venv --python 3.12"):
        assert _refusals(base.format(extra=extra)) == [], extra


def test_requires_python_by_release() -> None:
    """PyPI's Requires-Python per release range (engines/requires_python.json)."""
    from kvlint.manifests.image_pythons import python_refuses, requires_python

    assert requires_python("vllm", "0.6.3") == ">=3.8"
    assert requires_python("vllm", "0.6.4") == ">=3.9"
    assert requires_python("vllm", "0.9.2") == "<3.13,>=3.9"
    assert requires_python("vllm", "0.34.0") == "<3.15,>=3.11"
    assert requires_python("sglang", "0.5.5.post3") == ">=3.10"
    assert requires_python("lmdeploy", "0.7.3") is None
    assert python_refuses("vllm", "0.11.0", "3.13") is None
    assert python_refuses("vllm", "0.32.0", "3.10") == "<3.15,>=3.11"


def test_an_unpinned_install_gets_the_newest_release_its_python_takes() -> None:
    """``pip install vllm`` on Python 3.8 installs 0.6.3.post1 (0.6.4 requires 3.9), on
    python:3.9 0.11.0 (0.11.1 requires 3.10); on a Python the newest release takes it stays
    the unpinned newest."""
    text = ("FROM {base}\nRUN apt-get update && apt-get install -y python3-pip\n"
            "RUN pip install {req}\nCMD [\"vllm\", \"serve\", \"org/m\"]\n")
    got = {(base, req): v(m.engine_version)
           for base in ("ubuntu:20.04", "python:3.9-slim", "python:3.12")
           for req in ("vllm", "'vllm>=0.6'")
           for m in served(text.format(base=base, req=req))}
    assert got[("ubuntu:20.04", "vllm")] == "0.6.3.post1"
    assert got[("python:3.9-slim", "vllm")] == "0.11.0"
    assert got[("python:3.9-slim", "'vllm>=0.6'")] == "0.11.0"
    assert got[("python:3.12", "vllm")] == "latest"


def test_the_requires_python_table_is_generated_from_the_index(tmp_path: Path) -> None:
    """The generator keeps a range per change of specifier, oldest first, from a PEP 691
    page (files in any order; a release's wheel and sdist agree)."""
    import json

    from kvlint.generators.requires_python import main, ranges

    page = {"files": [
        {"filename": "vllm-0.6.4-cp38-abi3-manylinux1_x86_64.whl", "requires-python": ">=3.9"},
        {"filename": "vllm-0.6.3.tar.gz", "requires-python": ">=3.8"},
        {"filename": "vllm-0.6.4.tar.gz", "requires-python": ">=3.9"},
        {"filename": "vllm-0.6.5.tar.gz", "requires-python": ">=3.9"},
        {"filename": "vllm-0.8.4.tar.gz", "requires-python": "<3.13,>=3.9"},
        {"filename": "vllm-notaversion.tar.gz"}]}
    assert ranges(page, "vllm") == [["0.6.3", ">=3.8"], ["0.6.4", ">=3.9"],
                                    ["0.8.4", "<3.13,>=3.9"]]
    source, out = tmp_path / "vllm.json", tmp_path / "table.json"
    source.write_text(json.dumps(page), encoding="utf-8")
    assert main([f"vllm={source}", "-o", str(out), "--fetched", "2026-12-08"]) == 0
    table = json.loads(out.read_text(encoding="utf-8"))
    assert table["engines"]["vllm"]["ranges"][-1] == ["0.8.4", "<3.13,>=3.9"]
    assert "2026-12-08" in table["source"]
