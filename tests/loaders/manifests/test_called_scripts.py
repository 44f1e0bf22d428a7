"""A script a host script runs from its own tree (kvlint/manifests/called_scripts.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import Located, ServedModel, Unresolved
from kvlint.manifests.called_scripts import _call, _candidates, bind_arguments
from kvlint.manifests.shell_words import Word, split_script
from tests.loaders.manifests.support import extract_path, tree_with_a_link_out

SERVICE = """#!/bin/bash
MODEL_PATH=${1:-Qwen/Qwen2.5-7B-Instruct}
TP=${2:-1}
while true; do
  python -m sglang.launch_server --model-path "$MODEL_PATH" --tp-size $TP --port ${3:-30000}
  sleep 5
done
"""


def _served(path: Path) -> list[ServedModel]:
    return extract_path(path)


def _value(v: object) -> object:
    return v.value if isinstance(v, Located) else ("?" if isinstance(v, Unresolved) else v)


def test_a_slurm_job_that_hands_the_launch_to_a_script_of_its_repository(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bash scripts/service.sh "$MODEL" 4``: the engine is read from the script in the
    tree (found from the repository's root, where the job is submitted), its positional
    parameters take the call's words, and its values sit on the calling line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "service.sh").write_text(SERVICE, encoding="utf-8")
    (tmp_path / "jobs").mkdir()
    job = tmp_path / "jobs" / "glm.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH --gres=gpu:nvidia_h200:4\n#SBATCH --mem=512G\n"
                   "MODEL=zai-org/GLM-4.6-FP8\nbash scripts/service.sh \"$MODEL\" 4 8000\n",
                   encoding="utf-8")
    (m,) = _served(job)
    assert (_value(m.engine), _value(m.model), _value(m.tp), _value(m.gpus)) == \
        ("sglang", "zai-org/GLM-4.6-FP8", 4, 4)
    assert isinstance(m.tp, Located) and m.tp.line == 5
    assert any("scripts/service.sh" in note for note in m.notes)


def test_without_arguments_the_called_scripts_defaults_apply(tmp_path: Path) -> None:
    (tmp_path / "service.sh").write_text(SERVICE, encoding="utf-8")
    job = tmp_path / "run.sh"
    job.write_text("#!/bin/bash\nexport HF_HOME=/data\n./service.sh\n", encoding="utf-8")
    (m,) = _served(job)
    assert (_value(m.model), _value(m.tp)) == ("Qwen/Qwen2.5-7B-Instruct", 1)


def test_an_argument_that_cannot_be_carried_is_unresolved_not_its_default(
        tmp_path: Path) -> None:
    (tmp_path / "service.sh").write_text(SERVICE, encoding="utf-8")
    job = tmp_path / "run.sh"
    job.write_text('#!/bin/bash\nsh service.sh "$(cat model.txt)" 2\n', encoding="utf-8")
    (m,) = _served(job)
    assert isinstance(m.model, Unresolved) and _value(m.tp) == 2


def test_a_script_outside_the_tree_a_folder_or_the_caller_itself_is_not_followed(
        tmp_path: Path) -> None:
    tree = tree_with_a_link_out(tmp_path, "link.sh")
    job = tree / "job.sh"
    job.write_text("#!/bin/bash\nbash link.sh\nbash dir.sh\nbash job.sh\nsource ../outside/"
                   "secret.sh\n", encoding="utf-8")
    assert _served(job) == []


def test_scripts_calling_each_other_end() -> None:
    """Two scripts that run each other are read once each; the depth is bounded."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder)
        (tree / "a.sh").write_text("bash b.sh\nvllm serve org/a\n", encoding="utf-8")
        (tree / "b.sh").write_text("bash a.sh\nbash c.sh\n", encoding="utf-8")
        (tree / "c.sh").write_text("bash d.sh\nvllm serve org/c\n", encoding="utf-8")
        (tree / "d.sh").write_text("vllm serve org/d\n", encoding="utf-8")
        models = sorted(str(_value(m.model)) for m in _served(tree / "a.sh"))
        assert models == ["org/a", "org/c"]  # d.sh is three scripts deep


@pytest.mark.parametrize(("command", "expected"), [
    ("bash service.sh a b", ("service.sh", ["a", "b"])),
    ("sh -ex ./serve.sh", ("./serve.sh", [])),
    ("srun --ntasks=1 bash scripts/serve.sh m", ("scripts/serve.sh", ["m"])),
    ("source env.sh", ("env.sh", [])),
    (". ./env.sh x", ("./env.sh", ["x"])),
    ("./launch.sh --tp 2", ("./launch.sh", ["--tp", "2"])),
    ("nohup ./launch.sh &", ("./launch.sh", [])),
    ("bash -c 'vllm serve org/m'", None),
    ("vllm serve org/m --chat-template tpl.sh", None),
    ("/tgi-entrypoint.sh --model-id org/m", None),  # an engine, not a script
    ("sbatch --wrap x.sh", None),
    ("echo done", None),
])
def test_what_counts_as_running_a_script(command: str,
                                         expected: tuple[str, list[str]] | None) -> None:
    (words,) = [c for c in split_script(command) if c]
    found = _call(words)
    assert (None if found is None else (found[0], [w.text for w in found[1]])) == expected


@pytest.mark.parametrize(("written", "expected"), [
    ("service.sh", ["service.sh"]),
    ("./scripts/serve.sh", ["scripts/serve.sh"]),
    ('$(dirname "$0")/serve.sh', ["serve.sh"]),
    ("${SCRIPT_DIR}/tools/serve.sh", ["tools/serve.sh"]),
    ("/opt/serve.sh", []),        # absolute: not the tree's
    ("$SERVE", []),
    ("serve.py", []),
])
def test_where_a_called_script_is_looked_up(written: str, expected: list[str]) -> None:
    assert _candidates(written) == expected


@pytest.mark.parametrize(("text", "args", "expected"), [
    ("M=${1:-x} T=$2 P=${3}", ["org/m", "4"], "M=org/m T=4 P=${3}"),
    ('vllm serve "$@"', ["org/m", "--tp", "2"], 'vllm serve org/m --tp 2'),
    ("M=${1:-x}", ["a b"], "M=$1"),           # blanks: not carried, unresolved
    ("shift\nM=${1:-x}", ["a", "b"], "shift\nM=$1"),  # moved arguments: none bound
    ("M=${1:-x}", [], "M=${1:-x}"),          # nothing passed: the default
    ("echo $0", ["a"], "echo $0"),
])
def test_positional_parameters_take_the_calls_words(text: str, args: list[str],
                                                     expected: str) -> None:
    assert bind_arguments(text, [Word(a, 1) for a in args]) == expected
