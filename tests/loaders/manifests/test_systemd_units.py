"""systemd service units that start an engine (kvlint/manifests/systemd_units.py)."""

from __future__ import annotations

from kvlint.manifests.base import Located
from kvlint.manifests.systemd_units import is_systemd_unit, systemd_models

UNIT = """\
[Unit]
Description=vLLM (Qwen2.5-32B-Instruct-AWQ)

[Service]
Environment=MODEL=Qwen/Qwen2.5-32B-Instruct-AWQ "TP=2"
# the server
ExecStartPre=/bin/bash -c 'nvidia-smi'
ExecStart=/opt/env/bin/python3 -m vllm.entrypoints.openai.api_server \\
    --model ${MODEL} \\
    --tensor-parallel-size $TP \\
    --max-model-len 16384
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


def value(found: object) -> object:
    return found.value if isinstance(found, Located) else found


def test_exec_start_with_environment_and_continuations() -> None:
    (found,) = systemd_models(UNIT, "vllm.service")
    assert (value(found.engine), value(found.model), value(found.tp),
            value(found.max_model_len), found.line, found.format) == \
        ("vllm", "Qwen/Qwen2.5-32B-Instruct-AWQ", 2, 16384, 8, "systemd-unit")


def test_other_sections_and_exec_lines_start_nothing() -> None:
    text = "[Unit]\nExecStart=vllm serve org/a\n[Service]\nExecStop=vllm serve org/b\n"
    assert systemd_models(text, "x.service") == []
    assert is_systemd_unit("/etc/systemd/system/vllm.service")
    assert not is_systemd_unit("vllm.socket")
