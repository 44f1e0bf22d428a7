"""Scripts that serve one of several presets picked in a ``case`` statement
(kvlint/manifests/engine_env.py): one served model per branch that runs on, each named by
its patterns; an option loop's ``case`` and a subject whose value is known pick no presets."""

from __future__ import annotations

from kvlint.manifests.base import Located, ServedModel
from kvlint.manifests.shell_scripts import script_models

PRESETS = """#!/bin/bash
MODEL_NAME=$1
case $MODEL_NAME in
  llama-8b)
    MODEL_PATH=meta-llama/Llama-3.1-8B-Instruct
    TP=1
    ;;
  qwen-72b|qwen)
    MODEL_PATH=Qwen/Qwen2.5-72B-Instruct
    TP=4
    ;;
  *)
    echo "Invalid MODEL_NAME: $MODEL_NAME"
    exit 1
    ;;
esac
vllm serve $MODEL_PATH --tensor-parallel-size $TP --gpu-memory-utilization 0.9
"""


def rows(text: str) -> list[tuple[str, object, object]]:
    def value(field: object) -> object:
        return field.value if isinstance(field, Located) else field
    return [(m.name, value(m.model), value(m.tp)) for m in script_models(text, "serve.sh")]


def test_each_branch_that_runs_on_is_a_served_model() -> None:
    assert rows(PRESETS) == [("case llama-8b", "meta-llama/Llama-3.1-8B-Instruct", 1),
                             ("case qwen-72b|qwen", "Qwen/Qwen2.5-72B-Instruct", 4)]


def test_presets_are_never_judged_side_by_side_on_one_gpu() -> None:
    # each preset would take GPU 0 at 0.9: they are alternatives, not tenants
    models: list[ServedModel] = script_models(PRESETS, "serve.sh")
    assert [p for m in models for p in m.engine_problems] == []


def test_presets_in_a_function_then_later_assignments_apply_to_each() -> None:
    text = """apply_preset() {
    case "$1" in
        small) MODEL=Qwen/Qwen2.5-7B-Instruct; MEM=0.8 ;;
        large) MODEL=Qwen/Qwen2.5-32B-Instruct; MEM=0.9 ;;
    esac
}
apply_preset "$PRESET"
ARGS="--model-path $MODEL --mem-fraction-static $MEM --tp 2"
python -m sglang.launch_server $ARGS
"""
    assert rows(text) == [("case small", "Qwen/Qwen2.5-7B-Instruct", 2),
                          ("case large", "Qwen/Qwen2.5-32B-Instruct", 2)]


def test_a_command_the_branches_do_not_change_is_found_once() -> None:
    text = PRESETS.replace("vllm serve $MODEL_PATH --tensor-parallel-size $TP",
                           "vllm serve org/fixed")
    assert rows(text) == [("", "org/fixed", None)]


def test_two_case_statements_make_every_pair() -> None:
    text = """case $1 in
  a) MODEL=org/a ;;
  b) MODEL=org/b ;;
esac
case $2 in
  h100) TP=8 ;;
  l4) TP=2 ;;
esac
vllm serve $MODEL -tp $TP
"""
    assert rows(text) == [("case a, h100", "org/a", 8), ("case a, l4", "org/a", 2),
                          ("case b, h100", "org/b", 8), ("case b, l4", "org/b", 2)]


def test_a_subject_with_a_known_value_takes_its_branch() -> None:
    # run as written, ${1:-large} is "large": one served model, that branch's
    text = PRESETS.replace("MODEL_NAME=$1", "MODEL_NAME=${1:-qwen}")
    assert rows(text) == [("", "Qwen/Qwen2.5-72B-Instruct", 4)]
    # a later case on a value each preset fixes takes one branch in each
    text = """case $1 in
  a) MODEL=org/a; GPU=h100 ;;
  b) MODEL=org/b; GPU=l4 ;;
esac
case $GPU in
  h100) TP=8 ;;
  l*) TP=2 ;;
esac
vllm serve $MODEL -tp $TP
"""
    assert rows(text) == [("case a", "org/a", 8), ("case b", "org/b", 2)]


def test_an_option_loop_picks_arguments_not_presets() -> None:
    text = """MODEL=org/default
TP=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --model) MODEL="$2"; shift 2 ;;
    --tp) TP="$2"; shift 2 ;;
    *) echo "unknown $1"; exit 1 ;;
  esac
done
vllm serve $MODEL -tp $TP
"""
    assert rows(text) == [("", "org/default", 1)]


def test_too_many_presets_read_as_one_server_with_the_model_unresolved() -> None:
    branches = "".join(f"  m{i}) MODEL=org/m{i} ;;\n" for i in range(6))
    gpus = "".join(f"  g{i}) TP={i + 1} ;;\n" for i in range(6))
    text = f"case $1 in\n{branches}esac\ncase $2 in\n{gpus}esac\nvllm serve $MODEL -tp $TP\n"
    (only,) = script_models(text, "serve.sh")
    assert only.name == "" and not isinstance(only.model, Located)
