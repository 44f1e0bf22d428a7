"""Makefiles that start an engine (kvlint/manifests/makefiles.py): recipe lines as make
hands them to the shell, make's variables expanded, then read like a script's commands."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.makefiles import is_makefile, makefile_models

RECIPE = """\
MODEL ?= Qwen/Qwen3-8B
TP := 2
ARGS = --tensor-parallel-size $(TP)
ARGS += --max-model-len 8192
export NCCL_DEBUG := INFO

.PHONY: serve
serve:
\t@echo starting on $$HOSTNAME
\tuv run vllm serve $(MODEL) \\
\t\t$(ARGS) \\
\t\t--gpu-memory-utilization 0.8
"""


def test_is_makefile() -> None:
    for name in ("Makefile", "x/makefile", "GNUmakefile", "Makefile.gpu", "serve.mk",
                 "repo__path__Makefile"):
        assert is_makefile(name), name
    assert not is_makefile("make.yaml") and not is_makefile("Makefile_notes.txt")


def test_a_recipe_with_make_variables_and_continuations() -> None:
    (found,) = makefile_models(RECIPE, "Makefile")
    assert isinstance(found.model, Located) and found.model.value == "Qwen/Qwen3-8B"
    assert isinstance(found.tp, Located) and (found.tp.value, found.tp.line) == (2, 11)
    assert isinstance(found.max_model_len, Located) and found.max_model_len.value == 8192
    assert isinstance(found.gpu_memory_utilization, Located) and \
        (found.gpu_memory_utilization.value, found.gpu_memory_utilization.line) == (0.8, 12)
    assert found.engine is not None and found.engine.value == "vllm" and found.line == 10


def test_a_variable_the_file_never_sets_is_unresolved_not_empty() -> None:
    text = "serve:\n\tvllm serve $(MODEL) --tensor-parallel-size $(TP)\n"
    (found,) = makefile_models(text, "Makefile")
    assert isinstance(found.model, Unresolved) or found.model is None
    assert isinstance(found.tp, Unresolved)


def test_docker_run_in_a_recipe_and_the_one_line_rule_form() -> None:
    text = ("TAG = v0.8.5\n"
            "up: ; docker run --gpus 4 vllm/vllm-openai:$(TAG) --model org/m -tp 4\n")
    (found,) = makefile_models(text, "Makefile")
    assert found.engine_version is not None and found.engine_version.value == "0.8.5"
    assert isinstance(found.gpus, Located) and found.gpus.value == 4
    assert found.line == 2


def test_conditionals_functions_and_self_reference_do_not_break_it() -> None:
    text = ("A = $(B)\nB = $(A)\nHOST != hostname\nifeq ($(A),x)\nC = 1\nendif\n"
            "define LONG\nvllm serve nothing\nendef\n"
            "run:\n\tvllm serve $(A) --port $(word 1,$(PORTS))\n")
    (found,) = makefile_models(text, "Makefile")  # bounded; the model is not known
    assert not isinstance(found.model, Located)


def test_lint_reads_a_makefile_and_a_makefile_without_a_server_is_quiet(
        tmp_path: Path) -> None:
    make = tmp_path / "Makefile"
    make.write_text(RECIPE.replace("TP := 2", "TP := 3"), encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(make), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline", "--format", "json"])
    assert '"tp": 3' in result.stdout
    other = tmp_path / "build.mk"
    other.write_text("all:\n\tpython -m build\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(other), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline", "--format", "json"])
    assert "KV904" not in result.stdout and result.exit_code == 0
