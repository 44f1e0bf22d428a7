"""Expansions that double on every step (``A=$A$A``) end as unresolved values, in every reader
that expands variables: the shell layer, Kubernetes env, Makefiles, batch files, Python apps.
The inputs are generated here, never committed."""

from __future__ import annotations

import time

import pytest

from kvlint.manifests.base import Located, ServedModel, Unresolved
from kvlint.manifests.batch_files import batch_models
from kvlint.manifests.makefiles import makefile_models
from kvlint.manifests.python_apps import python_models
from kvlint.manifests.shell_env import MAX_EXPANDED_CHARS, env_from_k8s
from kvlint.manifests.shell_scripts import script_models


def _one(found: list[ServedModel]) -> ServedModel:
    assert len(found) == 1
    return found[0]


@pytest.mark.parametrize("reader", ["shell", "makefile", "batch", "python"])
def test_doubling_values_are_unresolved_and_fast(reader: str) -> None:
    steps = 60
    if reader == "shell":
        text = "A=xxxxxxxx\n" + "A=$A$A$A$A$A$A$A$A\n" * steps + "vllm serve ${A}\n"
        found = script_models(text, "x.sh")
    elif reader == "makefile":
        text = "".join(f"A{i} = " + f"$(A{i + 1})" * 10 + "\n" for i in range(15)) + \
            "A15 = xxxxxxxx\nrun:\n\tvllm serve $(A0)\n"
        found = makefile_models(text, "Makefile")
    elif reader == "batch":
        text = "set A=xxxxxxxx\n" + "set A=%A%%A%%A%%A%%A%%A%%A%%A%\n" * steps + \
            "vllm serve %A%\n"
        found = batch_models(text, "x.bat")
    else:
        text = "".join(f'A{i} = f"' + f"{{A{i + 1}}}" * 10 + '"\n' for i in range(15)) + \
            'A15 = "xxxxxxxx"\ncmd = ["vllm", "serve", A0]\n'
        found = python_models(text, "app.py")
    start = time.perf_counter()
    model = _one(found).model
    assert isinstance(model, Unresolved) and not isinstance(model, Located)
    assert time.perf_counter() - start < 60  # generous: it takes milliseconds


def test_an_expansion_below_the_bound_is_kept() -> None:
    text = "A=" + "x" * 1000 + "\nB=$A$A\nvllm serve ${B}\n"
    model = _one(script_models(text, "x.sh")).model
    assert isinstance(model, Located) and len(model.value) == 2000


def test_kubernetes_env_references_are_bounded() -> None:
    items = [{"name": "A0", "value": "x" * 1024}] + [
        {"name": f"A{i + 1}", "value": f"$(A{i})" * 8} for i in range(10)]
    env = env_from_k8s(items)
    assert env["A1"] == "x" * 8192
    assert all(v is None or len(v) <= MAX_EXPANDED_CHARS for v in env.values())
    assert env["A10"] is None


def test_an_ssh_command_and_dockerfile_envs_that_double_stay_bounded() -> None:
    """``ssh host "$A$A..."`` with a long literal ``A``, and ``ENV X=$X$X`` over and over in a
    Dockerfile: the text put in stays within the expansion bound (as written past it)."""
    from kvlint.manifests.dockerfiles import dockerfile_models

    big = "x" * 60_000
    script = f'A="{big}"\nssh host "vllm serve org/m {"$A" * 2_000}"\n'
    found = script_models(script, "x.sh")
    assert len(found) <= 1
    docker = ("FROM vllm/vllm-openai:v0.10.1.1\nENV X=xxxxxxxx\n" + "ENV X=$X$X$X$X\n" * 40
              + 'CMD ["--model", "org/m"]\n')
    (served,) = dockerfile_models(docker, "Dockerfile")
    assert served.model is not None


def test_device_variables_and_option_owners_read_a_bounded_share() -> None:
    from kvlint.manifests.accelerators import variable_family
    from kvlint.manifests.cli_options import engine_of_options

    family = variable_family("export HIP_VISIBLE_DEVICES=0\n" * 40_000)
    assert family is not None and family.line == 1
    assert engine_of_options(["--gpu-memory-utilization"] * 200_000) == "vllm"
