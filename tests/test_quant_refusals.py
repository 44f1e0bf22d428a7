"""vLLM and SGLang refuse a --quantization the checkpoint does not have
(kvlint/engines/quant_refusals.py, read from the wheels vLLM 0.4.1-0.34.0 and SGLang
0.4.6.post1-0.5.23): KV702 on the option, an error for another format, a warning for AWQ or
GPTQ asked of a checkpoint whose config.json names none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvlint.engines.quant_refusals import checkpoint_quant_method, quantization_refusal
from tests.helpers import CONFIGS, lint_script
from tests.hub_server import FakeHub


def _config(stem: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{stem}.json").read_text("utf-8"))
    return data


@pytest.mark.parametrize(("stem", "method"), [
    ("Qwen--Qwen3-235B-A22B-FP8", "fp8"),
    ("moonshotai--Kimi-K2.5", "compressed-tensors"),  # in text_config
    ("nvidia--Gemma-4-31B-IT-NVFP4", "modelopt"),  # producer-named
    ("openai--gpt-oss-20b", "mxfp4"),
    ("Qwen--Qwen2.5-7B", None),
])
def test_the_checkpoint_format_as_the_engines_read_it(stem: str, method: str | None) -> None:
    assert checkpoint_quant_method(_config(stem)) == method


@pytest.mark.parametrize(("engine", "asked", "stem", "kind"), [
    ("vllm", "awq", "Qwen--Qwen3-235B-A22B-FP8", "mismatch"),
    ("sglang", "gptq", "moonshotai--Kimi-K2.5", "mismatch"),
    ("vllm", "compressed_tensors", "Qwen--Qwen3-235B-A22B-FP8", "mismatch"),
    ("vllm", "fp8", "Qwen--Qwen3-235B-A22B-FP8", None),  # its own format
    ("vllm", "awq_marlin", "Qwen--Qwen3-235B-A22B-FP8", None),  # not judged
    ("vllm", "fp8", "nvidia--Gemma-4-31B-IT-NVFP4", None),  # ModelOpt's override claims it
    ("vllm", "awq", "Qwen--Qwen2.5-7B", "no-config"),
    ("sglang", "gptq", "Qwen--Qwen2.5-7B", "no-config"),
    ("vllm", "fp8", "Qwen--Qwen2.5-7B", None),  # quantized while loading
    ("vllm", "bitsandbytes", "Qwen--Qwen2.5-7B", None),
    ("tgi", "awq", "Qwen--Qwen3-235B-A22B-FP8", None),  # another engine's rules
])
def test_which_pairs_are_refused(engine: str, asked: str, stem: str, kind: str | None) -> None:
    refusal = quantization_refusal(engine, asked, checkpoint_quant_method(_config(stem)))
    assert (refusal.kind if refusal else None) == kind


def test_the_refusal_is_the_engines_own_wording() -> None:
    refusal = quantization_refusal("vllm", "gptq", "fp8")
    assert refusal is not None
    assert refusal.message == (
        "Quantization method specified in the model config (fp8) does not match the "
        "quantization method specified in the `quantization` argument (gptq).")
    missing = quantization_refusal("vllm", "gptq", None)
    assert missing is not None
    assert missing.message == "Cannot find the config file for gptq"
    assert missing.files == ("quantize_config.json",)


def _lint(tmp_path: Path, model: str, stem: str, flags: str, engine: str = "vllm"
          ) -> list[tuple[str, int, str]]:
    command = (f"vllm serve {model}" if engine == "vllm"
               else f"python -m sglang.launch_server --model-path {model}")
    findings = lint_script(tmp_path, f"#!/bin/bash\n{command} \\\n  {flags}\n", model, stem)
    return [(f["severity"], f["line"], f["data"]["reason"]) for f in findings
            if str(f["data"].get("reason", "")).startswith("quantization-")]


def test_awq_asked_of_an_fp8_checkpoint_is_an_error_on_its_line(tmp_path: Path) -> None:
    assert _lint(tmp_path, "Qwen/Qwen3-235B-A22B-FP8", "Qwen--Qwen3-235B-A22B-FP8",
                 "--tensor-parallel-size 8 --quantization awq") == [
        ("error", 3, "quantization-mismatch")]


def test_sglang_refuses_it_the_same_way(tmp_path: Path) -> None:
    assert _lint(tmp_path, "Qwen/Qwen3-235B-A22B-FP8", "Qwen--Qwen3-235B-A22B-FP8",
                 "--tp 8 --quantization gptq", engine="sglang") == [
        ("error", 3, "quantization-mismatch")]


def test_awq_asked_of_an_unquantized_checkpoint_is_a_warning(tmp_path: Path) -> None:
    assert _lint(tmp_path, "Qwen/Qwen2.5-7B", "Qwen--Qwen2.5-7B", "--quantization awq") == [
        ("warning", 3, "quantization-config-missing")]


@pytest.mark.parametrize("flags", ["--quantization fp8", "--quantization bitsandbytes", ""])
def test_online_quantization_and_none_are_not_refused(tmp_path: Path, flags: str) -> None:
    assert _lint(tmp_path, "Qwen/Qwen2.5-7B", "Qwen--Qwen2.5-7B",
                 f"--max-model-len 4096 {flags}") == []


def _hub_lint(tmp_path: Path, *extra: str) -> tuple[int, list[tuple[str, str]]]:
    from click.testing import CliRunner

    from kvlint.cli import main

    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve Qwen/Qwen2.5-7B --quantization awq\n", "utf-8")
    result = CliRunner().invoke(main, ["lint", str(script), "--no-plugins", "--isolated",
                                       "--no-cache", "--format", "json", *extra])
    findings = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    return result.exit_code, [(f["severity"], f["message"]) for f in findings
                              if f["data"].get("reason") == "quantization-config-missing"]


def test_awq_of_a_hub_repo_without_its_files_is_an_error_online_and_offline(
        tmp_path: Path, fake_hub: FakeHub) -> None:
    """kvlint asks the repo for quant_config.json and quantize_config.json: two 404s are the
    engine's "Cannot find the config file for awq", and the cache's 404 markers answer the
    same offline."""
    fake_hub.add_repo("Qwen/Qwen2.5-7B", {"config.json": (CONFIGS / "Qwen--Qwen2.5-7B.json")
                                          .read_bytes()})
    code, found = _hub_lint(tmp_path)
    assert code == 1 and [s for s, _ in found] == ["error"]
    assert "the checkpoint has none of them" in found[0][1]
    assert {p.rsplit("/", 1)[-1] for m, p in fake_hub.requests if m == "HEAD"} >= {
        "quant_config.json", "quantize_config.json"}
    fake_hub.close()
    assert _hub_lint(tmp_path, "--offline") == (code, found)


def test_awq_of_a_hub_repo_with_its_settings_file_is_not_judged(
        tmp_path: Path, fake_hub: FakeHub) -> None:
    fake_hub.add_repo("Qwen/Qwen2.5-7B", {
        "config.json": (CONFIGS / "Qwen--Qwen2.5-7B.json").read_bytes(),
        "quantize_config.json": b'{"w_bit": 4, "q_group_size": 128, "zero_point": true}'})
    assert _hub_lint(tmp_path) == (0, [])


def _model_dir(tmp_path: Path, *files: str) -> Path:
    directory = tmp_path / "qwen"
    directory.mkdir()
    (directory / "config.json").write_bytes((CONFIGS / "Qwen--Qwen2.5-7B.json").read_bytes())
    for name in files:
        (directory / name).write_bytes(b"\x02\x00\x00\x00\x00\x00\x00\x00{}"
                                       if name.endswith(".safetensors") else b"{}")
    return directory


@pytest.mark.parametrize(("files", "want"), [
    (("model.safetensors",), [("error", 3, "quantization-config-missing")]),
    (("model.safetensors", "quant_config.json"), []),
    ((), [("warning", 3, "quantization-config-missing")]),  # a bare config: cannot tell
])
def test_awq_of_a_local_model_directory_looks_beside_its_config(
        tmp_path: Path, files: tuple[str, ...], want: list[tuple[str, int, str]]) -> None:
    directory = _model_dir(tmp_path, *files)
    from click.testing import CliRunner

    from kvlint.cli import main

    script = tmp_path / "serve.sh"
    script.write_text(f"#!/bin/bash\nvllm serve {directory} \\\n  --quantization awq\n",
                      "utf-8")
    result = CliRunner().invoke(main, ["lint", str(script), "--no-plugins", "--isolated",
                                       "--no-cache", "--offline", "--format", "json"])
    findings = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    assert [(f["severity"], f["line"], f["data"]["reason"]) for f in findings
            if f["data"].get("reason") == "quantization-config-missing"] == want
