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


def test_two_exec_starts_make_systemd_refuse_the_unit() -> None:
    """Sections of one name merge: two ExecStart= in a Type=simple service is a unit systemd
    refuses (service_verify); an empty ExecStart= resets the list, and Type=oneshot may run
    several."""
    from kvlint.manifests.systemd_units import systemd_problems

    twice = UNIT + "[Service]\nExecStart=/usr/bin/llama-server -m /m/a.gguf\n"
    (problem,) = systemd_problems(twice, "llm.service")
    assert problem.kind == "invalid-object" and problem.line == 17
    assert "2 ExecStart= settings" in problem.message
    assert len(systemd_models(twice, "llm.service")) == 2
    reset = UNIT + "[Service]\nExecStart=\nExecStart=/usr/bin/llama-server -m /m/a.gguf\n"
    assert systemd_problems(reset, "llm.service") == []
    (only,) = systemd_models(reset, "llm.service")  # the reset drops the first command
    assert value(only.engine) == "llamacpp"
    oneshot = twice.replace("[Service]\n", "[Service]\nType=oneshot\n", 1)
    assert systemd_problems(oneshot, "llm.service") == []
    assert systemd_problems(UNIT, "llm.service") == []


def test_tensor_split_shares_are_gpus() -> None:
    """llama.cpp's --tensor-split puts one share of the model on each GPU: four non-zero
    shares of a bare command use four GPUs (a zero share uses none)."""
    text = ("[Service]\nExecStart=/opt/llama.cpp/llama-server -m /m/a.gguf "
            "--tensor-split 25,25,25,25\n")
    (found,) = systemd_models(text, "llm.service")
    assert value(found.gpus) == 4
    (found,) = systemd_models(text.replace("25,25,25,25", "3,1,0"), "llm.service")
    assert value(found.gpus) == 2
    (found,) = systemd_models(text.replace("25,25,25,25", "1"), "llm.service")
    assert value(found.gpus) == 1
    # arg.cpp splits at the regex [,/]+: "3/1" and "1,,1" are two shares
    for shares in ("3/1", "1,,1"):
        (found,) = systemd_models(text.replace("25,25,25,25", shares), "llm.service")
        assert value(found.gpus) == 2
