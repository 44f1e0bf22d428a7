"""PowerShell scripts that start an engine (kvlint/manifests/powershell_scripts.py), and
``powershell -Command`` lines of batch files."""

from __future__ import annotations

import pytest

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.batch_files import batch_models
from kvlint.manifests.powershell_scripts import is_powershell, powershell_models


def value(found: object) -> object:
    return found.value if isinstance(found, Located) else found


def test_docker_run_with_backtick_continuations() -> None:
    text = ("# serve Qwen\r\n"
            "docker run --gpus all -v F:\\cache:/models `\r\n"
            "    vllm/vllm-openai:v0.9.2 `\r\n"
            "    --model /models/qwen3vl_2b `\r\n"
            "    --max_model_len 3312 `\r\n"
            "    --kv-cache-dtype fp8\r\n")
    (found,) = powershell_models(text, "start.ps1")
    assert (value(found.engine), value(found.engine_version), value(found.model),
            value(found.max_model_len), value(found.kv_cache_dtype)) == \
        ("vllm", "0.9.2", "/models/qwen3vl_2b", 3312, "fp8")
    assert found.line == 2 and found.format == "powershell"


def test_variables_the_call_operator_and_an_exe() -> None:
    text = ('$Model = "C:\\models\\qwen.gguf"\n'
            "$env:CTX = '8192'\n"
            "<# a block\n   comment #>\n"
            'if (Test-Path $Model) { Write-Host "found" }\n'
            '& "C:\\Program Files\\llama\\llama-server.exe" -m "$Model" -c $env:CTX '
            "--port 8080  # the server\n")
    (found,) = powershell_models(text, "serve.ps1")
    assert (value(found.engine), value(found.model), value(found.max_model_len), found.line) \
        == ("llamacpp", "C:\\models\\qwen.gguf", 8192, 6)


def test_start_process_with_an_argument_list() -> None:
    text = ("Start-Process -FilePath 'llama-server.exe' -ArgumentList "
            "'-m', 'm.gguf', '-c', '4096' -NoNewWindow\n")
    (found,) = powershell_models(text, "serve.ps1")
    assert (value(found.model), value(found.max_model_len)) == ("m.gguf", 4096)


def test_an_unset_variable_stays_unresolved() -> None:
    (found,) = powershell_models("vllm serve $ModelName --tensor-parallel-size 2\n", "s.ps1")
    assert isinstance(found.model, Unresolved) and value(found.tp) == 2


def test_batch_powershell_command_is_read() -> None:
    text = ('powershell -WindowStyle Hidden -Command "Start-Process -FilePath '
            "'%~dp0llama\\llama-server.exe' -ArgumentList '--model \\\"C:/m/q.gguf\\\" "
            "--ctx-size 32768 --port 8000' -WindowStyle Minimized\"\r\n")
    (found,) = batch_models(text, "auto.bat")
    assert (value(found.engine), value(found.model), value(found.max_model_len)) == \
        ("llamacpp", "C:/m/q.gguf", 32768)


@pytest.mark.parametrize(("path", "expected"), [
    ("run.ps1", True), ("Run.PS1", True), ("mod.psm1", True), ("run.sh", False)])
def test_is_powershell(path: str, expected: bool) -> None:
    assert is_powershell(path) is expected


def test_hostile_sizes_are_bounded() -> None:
    text = "$A = 'xxxxxxxxxxxxxxxx'\n" + "".join(
        '$A = "$A$A"\n' for _ in range(40)) + "vllm serve $A\n"
    (found,) = powershell_models(text, "s.ps1")
    assert not isinstance(found.model, Located) or len(str(found.model.value)) < 10**7


def test_join_path_and_here_strings() -> None:
    text = ('$root = Split-Path -Parent $MyInvocation.MyCommand.Path\n'
            '$exe = Join-Path $root "llama-b9632-bin-win-vulkan-x64\\llama-server.exe"\n'
            'Write-Error @"\nllama-server -m other.gguf\n"@\n'
            '& $exe -hf "ggml-org/gpt-oss-20b-GGUF" --ctx-size 32768\n')
    (found,) = powershell_models(text, "start.ps1")
    assert (value(found.engine), value(found.model), value(found.max_model_len)) == \
        ("llamacpp", "ggml-org/gpt-oss-20b-GGUF", 32768)
