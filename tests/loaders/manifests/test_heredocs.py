"""Scripts handed over through here-documents (kvlint/manifests/heredocs.py): a script a
job writes and then runs, a unit a setup script writes, a script piped into a shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import Located, ServedModel, Unresolved
from kvlint.manifests.shell_words import Heredoc, split_script
from tests.loaders.manifests.support import extract_path


def _value(v: object) -> object:
    return v.value if isinstance(v, Located) else ("?" if isinstance(v, Unresolved) else v)


def _served(tmp_path: Path, text: str, name: str = "job.sh") -> list[ServedModel]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return extract_path(path)


def test_the_words_keep_each_here_document_and_the_output_file() -> None:
    commands = split_script("cat > serve.sh <<EOF\nvllm serve $M\nEOF\nbash serve.sh 2>e.log\n"
                            "cat <<-'X' | sudo tee /etc/u.service\n\t[Service]\n\tX\n",
                            line=0, style="|")
    texts = [[w.text for w in c] for c in commands]
    assert texts == [["cat"], ["bash", "serve.sh"], ["cat"], ["sudo", "tee",
                                                              "/etc/u.service"]]
    assert commands[0][0].heredoc == Heredoc("vllm serve $M", 2, False)
    assert commands[0][0].writes == "serve.sh"
    assert commands[1][0].writes == ""  # 2> is not the standard output
    assert commands[2][0].heredoc == Heredoc("[Service]", 6, True)


def test_a_job_that_writes_its_launch_script_and_runs_it(tmp_path: Path) -> None:
    """The model, tp and GPUs are the written script's, on the body's lines; the job's
    variables reach the body (an unquoted delimiter) and the run's arguments its $1."""
    text = ("#!/bin/bash\n#SBATCH --gres=gpu:2\nMODEL=Qwen/Qwen2.5-14B-Instruct\n"
            "mkdir -p run && cat > run/serve.sh <<EOF\n#!/bin/bash\n"
            "vllm serve $MODEL --tensor-parallel-size ${1:-1} --port 8000\nEOF\n"
            "chmod +x run/serve.sh\nsrun bash run/serve.sh 2\n")
    (m,) = _served(tmp_path, text)
    assert (_value(m.engine), _value(m.model), _value(m.tp), _value(m.gpus)) == \
        ("vllm", "Qwen/Qwen2.5-14B-Instruct", 2, 2)
    assert isinstance(m.model, Located) and m.model.line == 6


def test_a_written_script_that_is_never_run_starts_nothing(tmp_path: Path) -> None:
    text = ("#!/bin/bash\ncat > serve.sh <<'EOF'\nvllm serve Qwen/Qwen2.5-7B-Instruct\nEOF\n"
            "echo 'now run serve.sh'\n")
    assert _served(tmp_path, text) == []


@pytest.mark.parametrize("runner", ["bash", "sudo -E bash -s", "bash -l", "ssh gpu-node",
                                    "ssh -p 2222 user@gpu-node"])
def test_a_shell_reading_its_script_from_a_here_document(tmp_path: Path, runner: str) -> None:
    text = (f"#!/bin/bash\n{runner} <<'EOF'\nsource /opt/venv/bin/activate\n"
            "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
            "--tp-size 2\nEOF\n")
    (m,) = _served(tmp_path, text)
    assert (_value(m.engine), _value(m.model), _value(m.tp)) == \
        ("sglang", "meta-llama/Llama-3.1-8B-Instruct", 2)
    assert isinstance(m.tp, Located) and m.tp.line == 4


def test_a_command_reading_a_here_document_as_data_runs_nothing(tmp_path: Path) -> None:
    """``cat <<EOF`` (usage text), ``ssh host cmd <<EOF`` and ``bash -c`` keep their own
    meaning: the body is not a script they run."""
    text = ("#!/bin/bash\ncat <<EOF\nvllm serve org/a\nEOF\n"
            "ssh host 'nvidia-smi' <<EOF\nvllm serve org/b\nEOF\n"
            "python3 - <<EOF\nprint('vllm serve org/c')\nEOF\n")
    assert _served(tmp_path, text) == []


def test_a_setup_script_that_writes_a_systemd_unit(tmp_path: Path) -> None:
    """A VM's start-up script writes the unit and enables it: its ExecStart= is read with
    the unit's Environment=, on the unit's own line."""
    text = ("#!/bin/bash\npip install vllm==0.6.3\n"
            "cat <<'EOF' | sudo tee /etc/systemd/system/vllm.service\n[Unit]\n"
            "Description=vLLM\n[Service]\nEnvironment=MODEL=mistralai/Mistral-7B-Instruct-v0.3\n"
            "ExecStart=/usr/local/bin/vllm serve ${MODEL} --max-model-len 16384\n"
            "Restart=always\nEOF\nsudo systemctl enable --now vllm\n")
    (m,) = _served(tmp_path, text)
    assert (_value(m.engine), _value(m.model), _value(m.engine_version)) == \
        ("vllm", "mistralai/Mistral-7B-Instruct-v0.3", "0.6.3")
    assert isinstance(m.model, Located) and m.model.line == 8


def test_a_kubernetes_command_block_with_a_here_document(tmp_path: Path) -> None:
    """The same inside a container's ``sh -c`` script."""
    text = """apiVersion: apps/v1
kind: Deployment
metadata: {name: vllm}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          command: ["/bin/bash", "-c"]
          args:
            - |
              cat > /tmp/run.sh <<EOF
              vllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size 2
              EOF
              bash /tmp/run.sh
          resources: {limits: {nvidia.com/gpu: 2}}
"""
    (m,) = _served(tmp_path, text, "deploy.yaml")
    assert (_value(m.model), _value(m.tp), _value(m.gpus)) == \
        ("Qwen/Qwen2.5-7B-Instruct", 2, 2)
    assert isinstance(m.tp, Located) and m.tp.line == 14


def test_hostile_here_documents_are_bounded(tmp_path: Path) -> None:
    """An unterminated body, a thousand written files, a script that runs itself."""
    text = "#!/bin/bash\n" + "".join(f"cat > s{i}.sh <<EOF\nbash s{i}.sh\nEOF\n"
                                     for i in range(1000)) + \
        "".join(f"bash s{i}.sh\n" for i in range(1000)) + "bash <<EOF\n" + "x " * 10_000
    assert _served(tmp_path, text) == []
