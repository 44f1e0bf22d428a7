"""GitHub Actions workflows and composite actions whose steps start an engine
(kvlint/manifests/github_actions.py)."""

from __future__ import annotations

from pathlib import Path

from kvlint.manifests.base import Located, ServedModel
from tests.loaders.manifests.support import extract_path

WORKFLOW = """\
name: e2e
on:
  workflow_dispatch:
    inputs:
      model:
        default: Qwen/Qwen3-0.6B
env:
  TP: "2"
jobs:
  test:
    runs-on: [self-hosted, gpu]
    env:
      MAX_LEN: "4096"
    steps:
      - uses: actions/checkout@v4
      - name: serve
        run: |
          pip install vllm==0.9.2
          vllm serve "${{ inputs.model }}" --tensor-parallel-size $TP \\
            --max-model-len $MAX_LEN &
      - shell: pwsh
        run: vllm serve org/windows
      - run: vllm serve ${{ matrix.model }}
"""

COMPOSITE = """\
name: setup-vllm
inputs:
  model:
    description: the model
runs:
  using: composite
  steps:
    - shell: bash
      run: |
        docker run -d --gpus 1 vllm/vllm-openai:v0.8.5 --model ${{ inputs.model }}
"""


def models(tmp_path: Path, text: str) -> list[ServedModel]:
    path = tmp_path / "workflow.yml"
    path.write_text(text, encoding="utf-8")
    return extract_path(path)


def value(found: object) -> object:
    return found.value if isinstance(found, Located) else found


def test_a_workflow_step_with_env_pins_and_an_input_default(tmp_path: Path) -> None:
    first, matrix = models(tmp_path, WORKFLOW)  # the pwsh step is another language
    assert (value(first.model), value(first.tp), value(first.max_model_len),
            value(first.engine_version), first.line, first.format) == \
        ("Qwen/Qwen3-0.6B", 2, 4096, "0.9.2", 19, "github-actions")
    assert not isinstance(matrix.model, Located)  # ${{ matrix.model }}: set by the runner


def test_a_composite_action_input_without_default_is_unresolved(tmp_path: Path) -> None:
    (found,) = models(tmp_path, COMPOSITE)
    assert (value(found.engine), value(found.engine_version), value(found.gpus)) == \
        ("vllm", "0.8.5", 1)
    assert not isinstance(found.model, Located)
