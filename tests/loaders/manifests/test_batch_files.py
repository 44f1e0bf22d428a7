"""Windows batch files that start an engine (kvlint/manifests/batch_files.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import Located
from kvlint.manifests.batch_files import batch_models, is_batch


def value(found: object) -> object:
    return found.value if isinstance(found, Located) else found


def test_set_variables_continuations_and_an_exe() -> None:
    text = ("@echo off\r\nREM start the server\r\nset MODEL=C:\\models\\qwen.gguf\r\n"
            'set "CTX=8192"\r\n'
            'start "llama" /B "C:\\Program Files\\llama\\llama-server.exe" -m "%MODEL%" ^\r\n'
            "  -c %CTX% --port 8080\r\n")
    (found,) = batch_models(text, "serve.bat")
    assert (value(found.engine), value(found.model), value(found.max_model_len), found.line) \
        == ("llamacpp", "C:\\models\\qwen.gguf", 8192, 5)


def test_docker_run_with_a_shell_inside_and_unset_variables() -> None:
    text = ("docker run --rm --gpus all -v \"D:\\AI\\engine\":/data/engine ^\n"
            "  nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc0 ^\n"
            '  bash -lc "trtllm-serve serve /data/engine --backend tensorrt"\n'
            "call vllm serve %MODEL% --tensor-parallel-size %1\n")
    trt, vllm = batch_models(text, "run.cmd")
    assert (value(trt.engine), value(trt.model), value(trt.engine_version)) == \
        ("trtllm", "/data/engine", "1.2.0rc0")
    assert value(vllm.engine) == "vllm"
    assert not isinstance(vllm.model, Located) and not isinstance(vllm.tp, Located)


def test_what_is_not_a_server() -> None:
    assert is_batch("x.BAT") and is_batch("y.cmd") and not is_batch("z.sh")
    assert batch_models("@echo off\nrem vllm serve org/m\necho vllm serve org/m\n"
                        "if exist x (vllm serve org/m)\nset /a N=1+2\n", "a.bat") == []
    assert batch_models("^" * 10_000 + "\n", "b.bat") == []


def test_lint_reads_a_batch_file(tmp_path: Path) -> None:
    path = tmp_path / "serve.bat"
    path.write_text("set M=org/m\nvllm serve %M% --max-model-len 4096\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline", "--format", "json"])
    assert '"ref": "org/m"' in result.stdout and "KV904" not in result.stdout
