"""Python programs that start an engine (kvlint/manifests/python_apps.py), read from their
syntax tree: nothing in them is imported or run."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.python_apps import python_models

MODAL = '''\
import subprocess
import modal

MODEL = "Qwen/Qwen3-8B"
N_GPU = 2
image = modal.Image.debian_slim().uv_pip_install("vllm==0.10.1", "huggingface_hub")
app = modal.App("serve")


@app.function(image=image, gpu=f"H100:{N_GPU}")
@modal.web_server(port=8000)
def serve():
    cmd = ["vllm", "serve", "--uvicorn-log-level=info", MODEL]
    cmd += ["--tensor-parallel-size", str(N_GPU)]
    base = ["vllm", "serve", MODEL, "--max-model-len", str(8192)]
    subprocess.Popen(base + ["--tensor-parallel-size", str(N_GPU)])
'''


def value(found: object) -> object:
    return found.value if isinstance(found, Located) else found


def brief(served: ServedModel) -> tuple[object, ...]:
    return (value(served.engine), value(served.model), value(served.tp),
            value(served.engine_version), value(served.gpus), value(served.gpu_type))


def test_a_modal_app_with_pins_gpus_and_a_command_list() -> None:
    first, second = python_models(MODAL, "app.py")
    # `cmd += [...]` in the same block is part of the command; `base + [...]` is one command
    assert brief(first) == ("vllm", "Qwen/Qwen3-8B", 2, "0.10.1", 2, "H100")
    assert brief(second) == ("vllm", "Qwen/Qwen3-8B", 2, "0.10.1", 2, "H100")
    assert value(second.max_model_len) == 8192 and second.line == 16


def test_a_modal_image_python_that_cannot_install_the_pin() -> None:
    """``debian_slim(python_version="3.13")`` with ``vllm==0.10.1`` (Requires-Python <3.13):
    KV709 on the pin's line; 3.12 installs it; no python_version (the deploying machine's
    Python) is not judged."""
    def install(app: str) -> list[tuple[object, ...]]:
        return [(p.kind, p.data.get("python"), p.line) for m in python_models(app, "app.py")
                for p in m.engine_problems if p.kind == "install"]

    slim = 'modal.Image.debian_slim(python_version="{}")'
    assert install(MODAL.replace("modal.Image.debian_slim()", slim.format("3.13"))) == [
        ("install", "3.13", 6), ("install", "3.13", 6)]
    assert install(MODAL.replace("modal.Image.debian_slim()", slim.format("3.12"))) == []
    assert install(MODAL) == []


def test_modal_gpu_strings_and_fallback_lists() -> None:
    """``H100!`` is an H100 kept from Modal's upgrade to H200, ``B200+`` a B200 or better;
    a list is fallbacks in order of preference (modal.com/docs/examples/gpu_fallbacks): the
    one with the least memory is judged, as the app must run on each."""
    for gpu, want in (('"H100!"', ("H100", 1)), ('["H100!"]', ("H100", 1)),
                      ('"B200+:2"', ("B200", 2)),
                      ('["H100:2", "A100-40GB:2", "L40S:2"]', ("A100-40GB", 2))):
        text = MODAL.replace('gpu=f"H100:{N_GPU}"', f"gpu={gpu}")
        first, _ = python_models(text, "app.py")
        assert (value(first.gpu_type), value(first.gpus)) == want, gpu


def test_settings_read_from_the_environment_with_defaults() -> None:
    """``os.getenv("X", "default")`` names the default where the run sets nothing: the
    pin of an f-string (``f"vllm=={VLLM_VERSION}"``) and Modal's ``gpu=GPU``."""
    text = (MODAL.replace('N_GPU = 2\n', 'N_GPU = 2\nV = os.getenv("V", "0.21.0")\n'
                          'GPU = os.getenv("MODAL_GPU", "A10G:2")\n')
            .replace('"vllm==0.10.1"', 'f"vllm=={V}"').replace('gpu=f"H100:{N_GPU}"',
                                                               "gpu=GPU"))
    first, _ = python_models("import os\n" + text, "app.py")
    assert brief(first) == ("vllm", "Qwen/Qwen3-8B", 2, "0.21.0", 2, "A10G")


def test_a_shell_string_and_the_environment() -> None:
    text = ('import os, subprocess\nTP = os.environ.get("TP", "4")\n'
            'subprocess.run(f"python -m sglang.launch_server --model-path org/m --tp {TP}",'
            ' shell=True)\n'
            'os.system("vllm serve " + os.environ["MODEL"])\n')
    sglang, vllm = python_models(text, "run.py")
    assert (value(sglang.engine), value(sglang.tp), sglang.line) == ("sglang", 4, 3)
    assert value(vllm.engine) == "vllm" and not isinstance(vllm.model, Located)


def test_entry_points_are_the_engines_options_and_unknown_keywords_are_not_refused() -> None:
    text = ('from vllm import LLM\nimport sglang as sgl\n'
            'llm = LLM(model="org/a", tensor_parallel_size=2, seed=0, enforce_eager=True,\n'
            '          max_model_len=4096, hf_overrides={"max_position_embeddings": 4096},\n'
            '          not_a_cli_option=3)\n'
            'engine = sgl.Engine(model_path="org/b", tp_size=4, mem_fraction_static=0.8)\n')
    vllm, sglang = python_models(text, "offline.py")
    assert (value(vllm.model), value(vllm.tp), value(vllm.max_model_len)) == ("org/a", 2, 4096)
    assert vllm.engine_problems == ()
    assert (value(sglang.engine), value(sglang.model), value(sglang.tp)) == ("sglang", "org/b", 4)
    assert value(sglang.gpu_memory_utilization) == 0.8


def test_ray_serve_llm_config_names_its_accelerator() -> None:
    """``accelerator_type`` is the GPU type Ray places the replica's workers on."""
    text = ('from ray.serve.llm import LLMConfig, build_openai_app\n'
            'cfg = LLMConfig(\n'
            '    model_loading_config={"model_id": "q", "model_source": "Qwen/Q"},\n'
            '    accelerator_type="T4",\n'
            '    engine_kwargs={"dtype": "float16"})\n')
    (found,) = python_models(text, "serve_app.py")
    assert (value(found.model), value(found.gpu_type)) == ("Qwen/Q", "T4")
    assert isinstance(found.gpu_type, Located) and found.gpu_type.line == 4


def test_ray_serve_llm_config() -> None:
    text = ('from ray.serve.llm import LLMConfig, build_openai_app\n'
            'cfg = LLMConfig(model_loading_config=dict(model_id="q", model_source="Qwen/Q"),\n'
            '                engine_kwargs={"tensor_parallel_size": 2, "max_model_len": 8192})\n'
            'app = build_openai_app({"llm_configs": [cfg]})\n')
    (found,) = python_models(text, "serve_app.py")
    assert (value(found.model), value(found.tp), value(found.max_model_len)) == \
        ("Qwen/Q", 2, 8192)


def test_a_ray_serve_deployment_that_forwards_its_keywords_to_vllm() -> None:
    text = ('from ray import serve\nfrom vllm.engine.arg_utils import AsyncEngineArgs\n'
            '@serve.deployment(ray_actor_options={"num_gpus": 1})\n'
            'class Predict:\n    def __init__(self, **kwargs):\n'
            '        self.args = AsyncEngineArgs(**kwargs)\n'
            'deployment = Predict.bind(model="tiiuae/falcon-7b-instruct", dtype="bfloat16",\n'
            '                          tensor_parallel_size=1)\n')
    (found,) = python_models(text, "serve.py")
    assert (value(found.model), value(found.dtype), found.line) == \
        ("tiiuae/falcon-7b-instruct", "bfloat16", 7)


def test_a_runpod_pod() -> None:
    text = ('GPU_COUNT = 2\nPOD = {"image_name": "ghcr.io/huggingface/text-generation-inference'
            ':2.0.4",\n       "gpu_type_id": "NVIDIA RTX A6000", "gpu_count": GPU_COUNT,\n'
            '       "docker_args": f"--model-id org/m --num-shard {GPU_COUNT}"}\n')
    (found,) = python_models(text, "pod.py")
    assert brief(found) == ("tgi", "org/m", 2, "2.0.4", 2, "NVIDIA RTX A6000")


def test_a_step_inside_a_branch_is_not_taken() -> None:
    text = ('cmd = ["vllm", "serve", "org/m"]\nif fast:\n    cmd.append("--enforce-eager")\n'
            'cmd.extend(["--max-model-len", "4096"])\ncmd = ["vllm", "serve", "org/n"]\n')
    first, second = python_models(text, "steps.py")
    assert (value(first.model), value(first.max_model_len)) == ("org/m", 4096)
    assert value(second.model) == "org/n" and second.max_model_len is None


def test_an_unknown_name_is_named_in_the_finding(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text('import subprocess\n\ndef serve(model_name):\n'
                   '    subprocess.run(["vllm", "serve", model_name])\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(app), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline"])
    assert "model_name" in result.stdout and "KV902" in result.stdout


def test_names_with_two_values_are_not_guessed() -> None:
    text = ('MODEL = "org/a"\nif x:\n    MODEL = "org/b"\n'
            'cmd = ["vllm", "serve", MODEL]\n')
    (found,) = python_models(text, "two.py")
    assert not isinstance(found.model, Located)


def test_hostile_source_gives_no_model_and_no_exception() -> None:
    deep = "x = " + "[" * 5000 + "]" * 5000 + "\n"
    assert python_models(deep, "deep.py") == []
    chain = "".join(f"A{i} = A{i + 1}\n" for i in range(3000)) + \
        'cmd = ["vllm", "serve", A0]\n'
    (found,) = python_models(chain, "chain.py")
    assert not isinstance(found.model, Located)
    assert python_models("def (:\n", "broken.py") == []


def test_lint_reads_a_python_app_and_a_program_it_cannot_read_is_kv904(
        tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text(MODAL, encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(app), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline", "--format", "json"])
    assert '"ref": "Qwen/Qwen3-8B"' in result.stdout and "KV904" not in result.stdout
    other = tmp_path / "serve.py"
    other.write_text("import subprocess\nsubprocess.run(build_command())  # vllm serve\n"
                     "ARGS = '--max-model-len 4096'\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(other), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline", "--format", "json"])
    assert "KV904" in result.stdout


def test_a_modal_image_built_on_an_engine_image_runs_its_release() -> None:
    """``Image.from_registry("openmmlab/lmdeploy:v0.4.2")`` then an unpinned
    ``.pip_install("lmdeploy[all]")``: pip keeps an installed requirement without
    ``--upgrade``, so 0.4.2 serves; an ``==`` pin, or ``--upgrade``, decides otherwise."""
    base = ('import modal, subprocess\n'
            'image = modal.Image.from_registry("openmmlab/lmdeploy:v0.4.2")'
            '.pip_install({install})\n'
            'app = modal.App("x")\n'
            '@app.function(image=image, gpu="A10G")\n'
            'def serve():\n'
            '    subprocess.Popen("lmdeploy serve api_server org/m --tp 1", shell=True)\n')
    for install, want in (('["lmdeploy[all]", "hf-transfer"]', "0.4.2"),
                          ('"lmdeploy==0.5.0"', "0.5.0"),
                          ('"lmdeploy", extra_options="--upgrade"', None)):
        (served,) = python_models(base.format(install=install), "app.py")
        assert value(served.engine) == "lmdeploy"
        assert value(served.engine_version) == want, install


SERVER_ARGS_APP = """\
import modal
from sglang.srt.server_args import ServerArgs
app = modal.App("x")
@app.cls(gpu="H100:2")
class Server:
    model_path = "org/m"
    @modal.enter()
    def load(self):
        self.args = ServerArgs(model_path=self.model_path, tp_size=2,
                               context_length=8192)
"""
LMDEPLOY_BENTO = """\
import bentoml
from lmdeploy import pipeline, TurbomindEngineConfig
@bentoml.service(resources={"gpu": 2, "gpu_type": "nvidia-a100-80gb"})
class Svc:
    def __init__(self):
        cfg = TurbomindEngineConfig(tp=2, session_len=8192,
                                    cache_max_entry_count=0.5)
        self.pipe = pipeline("org/m", backend_config=cfg)
"""


@pytest.mark.parametrize(("text", "module", "want", "more"), [
    # SGLang's ServerArgs dataclass holds its server's options field by field; a class
    # attribute read through ``self`` is its one value
    (SERVER_ARGS_APP, "from sglang.srt.server_args", ("sglang", "org/m", 2, None, 2, "H100"),
     {"max_model_len": 8192, "line": 9}),
    # LMDeploy's pipeline(model, backend_config=TurbomindEngineConfig(...)) is its server's
    # options (tp is --tp...); a BentoML service's resources give the GPUs (their type in
    # Google Cloud's accelerator names)
    (LMDEPLOY_BENTO, "from lmdeploy",
     ("lmdeploy", "org/m", 2, None, 2, "nvidia-a100-80gb"),
     {"max_model_len": 8192, "gpu_memory_utilization": 0.5, "backend": "turbomind"}),
])
def test_engine_apis_in_a_class(text: str, module: str, want: tuple[object, ...],
                                more: dict[str, object]) -> None:
    (served,) = python_models(text, "app.py")
    assert brief(served) == want
    assert {k: value(getattr(served, k)) for k in more} == more
    # the same names imported from another library are not read
    assert python_models(text.replace(module, "from mylib"), "app.py") == []


@pytest.mark.parametrize("gpu", ['gpu="H100:{n}"', 'gpu=modal.gpu.A100(count="{n}")'])
def test_a_gpu_count_too_long_for_an_int_is_no_count(gpu: str) -> None:
    """A hostile count of 5,000 digits (past Python's int-conversion limit) is read as no
    count, never a ValueError."""
    text = ("import modal, subprocess\napp = modal.App()\n"
            f"@app.function({gpu.format(n='9' * 5000)})\n"
            'def f():\n    subprocess.run(["vllm", "serve", "org/m"])\n')
    (served,) = python_models(text, "app.py")
    assert value(served.gpus) == 1 and "requests no GPU count" in served.gpus.source


def test_a_none_placeholder_set_later_is_not_a_value() -> None:
    """``MODEL = None`` at module level, then ``if MODEL is None: MODEL = os.getenv("M",
    "org/m")`` in the function that starts the server: the model is the default."""
    text = ('import os, subprocess\nMODEL = None\nPORT = int(os.getenv("P", "30000"))\n'
            "def start():\n    global MODEL\n    if MODEL is None:\n"
            '        MODEL = os.getenv("MODEL_PATH", "org/m")\n'
            '    cmd = ["python3", "-m", "sglang.launch_server", "--model-path", MODEL,\n'
            '           "--port", str(PORT)]\n    subprocess.Popen(cmd)\n')
    (found,) = python_models(text, "handler.py")
    assert (value(found.engine), value(found.model)) == ("sglang", "org/m")


def test_the_programs_own_argparse_defaults() -> None:
    """A launcher that builds the engine command from its own argparse options: each
    ``args.X`` is that option's default (``${X:-default}``: another value may be passed)."""
    from kvlint.manifests.python_apps import python_models

    text = ("import argparse, subprocess\n"
            "def main():\n"
            "    parser = argparse.ArgumentParser()\n"
            "    parser.add_argument('--model', default='Qwen/Qwen2.5-1.5B-Instruct')\n"
            "    parser.add_argument('--max-model-len', type=int, default=4096)\n"
            "    parser.add_argument('--tp', dest='tensor_parallel', default=2)\n"
            "    parser.add_argument('--port', type=int)\n"
            "    args = parser.parse_args()\n"
            "    cmd = ['vllm', 'serve', args.model, '--max-model-len',\n"
            "           str(args.max_model_len), '--tensor-parallel-size',\n"
            "           str(args.tensor_parallel), '--port', str(args.port)]\n"
            "    subprocess.call(cmd)\n")
    (found,) = python_models(text, "serve.py")
    assert [getattr(x, "value", None) for x in (found.model, found.max_model_len, found.tp)] \
        == ["Qwen/Qwen2.5-1.5B-Instruct", 4096, 2]
