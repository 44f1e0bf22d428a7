"""Engine commands read the way each engine's own parser reads them (KV701, KV702).

Every case is a manifest generated at run time (a Kubernetes Deployment or a docker-compose
service running the engine command, the engine version in the image tag) and linted through
the real CLI; option names and versions come from the engines' own argument tables
(``kvlint/manifests/option_versions.py`` cites them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from kvlint.cli import main
from tests.helpers import ROOT

MODEL = "microsoft/Phi-3-medium-4k-instruct"
IMAGES = {
    "vllm": "vllm/vllm-openai:{v}",
    "sglang": "lmsysorg/sglang:v{v}",
    "tgi": "ghcr.io/huggingface/text-generation-inference:{v}",
    "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:{v}",
    "lmdeploy": "openmmlab/lmdeploy:v{v}",
    "llamacpp": "ghcr.io/ggml-org/llama.cpp:{v}",
}
PROGRAMS = {
    "vllm": ["vllm", "serve", MODEL],
    "sglang": ["python3", "-m", "sglang.launch_server", "--model-path", MODEL],
    "tgi": ["text-generation-launcher", "--model-id", MODEL],
    "trtllm": ["trtllm-serve", "serve", MODEL],
    "lmdeploy": ["lmdeploy", "serve", "api_server", MODEL],
    "llamacpp": ["llama-server", "-hf", "bartowski/Phi-3-medium-4k-instruct-GGUF"],
}


@dataclass(frozen=True)
class Case:
    id: str
    engine: str
    version: str
    args: list[str]
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    """(code, option as written, a phrase of the message)."""
    serving: dict[str, Any] = field(default_factory=dict)
    """Fields of the result's serving plan (what kvlint read)."""
    compose: bool = False
    env: dict[str, str] = field(default_factory=dict)
    """Container environment (options TGI and llama.cpp read from variables)."""
    severity: str = "error"
    """Of every refusal: a warning where an older release may run (an undated version)."""


CASES = [
    # --- vLLM (argparse: unique prefixes, _ -> -; 0.8.5, 0.11.0, 0.33.0, 0.34.0 tables) -----
    Case("vllm-tp-is-not-an-option", "vllm", "v0.33.0", ["--tp", "8"],
         [("KV701", "--tp", "did you mean -tp?")], {"tp": 1}),
    Case("vllm-kv-bytes-human-readable", "vllm", "v0.34.0",
         ["--kv-cache-memory-bytes", "20G", "--max-num-batched-tokens=8k"]),
    Case("vllm-kv-bytes-from-an-unset-variable", "vllm", "v0.34.0",
         ["--kv-cache-memory-bytes=${KV_BYTES-}"],
         [("KV702", "--kv-cache-memory-bytes", "(from ${KV_BYTES-}) '' is not an integer")]),
    Case("vllm-batched-tokens-plain-int-in-0.8.5", "vllm", "v0.8.5",
         ["--max-num-batched-tokens", "8k"],
         [("KV702", "--max-num-batched-tokens", "'8k' is not an integer")]),
    Case("vllm-max-model-len-auto-from-0.33", "vllm", "v0.34.0", ["--max-model-len", "auto"]),
    Case("vllm-max-model-len-auto-not-in-0.11", "vllm", "v0.11.0",
         ["--max-model-len", "auto"], [("KV702", "--max-model-len", "'auto' is not an integer")]),
    Case("vllm-tera-suffix-not-in-0.11", "vllm", "v0.11.0", ["--max-model-len", "1t"],
         [("KV702", "--max-model-len", "'1t' is not an integer")]),
    Case("vllm-kv-bytes-decimal-binary", "vllm", "v0.34.0",
         ["--kv-cache-memory-bytes", "1.5G"],
         [("KV702", "--kv-cache-memory-bytes", "'1.5G' is not an integer")]),
    Case("vllm-tp-unpinned-judged-by-newest", "vllm", "latest", ["--tp", "8"],
         [("KV701", "--tp", "judged by 0.34.0, the newest kvlint knows")]),
    # a tag that names no version (custom, date): every known version judges; an option one
    # of them accepts may be what runs (vLLM 0.8.5/0.11.0 have --swap-space)
    Case("vllm-unknown-version-option-of-older", "vllm", "my-tag", ["--swap-space", "16"],
         [("KV701", "--swap-space", "vLLM 0.11.0 is the last release kvlint knows that "
           "accepts it")], severity="warning"),
    # a tag that dates its build (2025-03-12): judged by the releases around that day
    # (0.7.3, 0.8.5), which lack an option of mid-2025; a warning, since a fork may have it
    Case("vllm-unknown-version-option-of-newer", "vllm", "20250312_0916_RC01",
         ["--async-scheduling"], [("KV701", "--async-scheduling",
                                   "the image tag dates the build 2025-03-12")],
         severity="warning"),
    Case("vllm-unknown-version-no-version-has-it", "vllm", "my-tag", ["--tp", "8"],
         [("KV701", "--tp",
           "judged by every version kvlint knows, 0.2.7 to 0.34.0 (11 releases)")]),
    Case("vllm-unknown-version-kv-dtype-of-some-version", "vllm", "my-tag",
         ["--kv-cache-dtype", "nvfp4"], [], {"kv_cache_dtype": "nvfp4"}),
    Case("vllm-short-tp", "vllm", "v0.33.0", ["-tp", "8"], [], {"tp": 8}),
    Case("vllm-tp-not-an-integer", "vllm", "v0.33.0", ["--tensor-parallel-size=abc"],
         [("KV702", "--tensor-parallel-size", "invalid int value: 'abc'")]),
    Case("vllm-tp-zero", "vllm", "v0.33.0", ["--tensor-parallel-size", "0"],
         [("KV702", "--tensor-parallel-size", "needs at least 1")]),
    Case("vllm-pp-negative", "vllm", "v0.33.0", ["-pp", "-1"],
         [("KV702", "-pp", "needs at least 1")]),
    Case("vllm-last-wins-across-aliases", "vllm", "v0.33.0",
         ["--tensor-parallel-size=4", "-tp=8"], [], {"tp": 8}),
    Case("vllm-last-wins-long-after-short", "vllm", "v0.33.0",
         ["-tp", "8", "--tensor-parallel-size", "2"], [], {"tp": 2}),
    Case("vllm-unique-prefix", "vllm", "v0.33.0", ["--max-num-seq", "64"], [],
         {"max_num_seqs": 64}),
    Case("vllm-ambiguous-prefix", "vllm", "v0.33.0", ["--max-num", "64"],
         [("KV701", "--max-num", "ambiguous abbreviation")]),
    Case("vllm-underscores", "vllm", "v0.8.5", ["--max_model_len", "4096"], [],
         {"max_model_len": 4096}),
    Case("vllm-human-readable-length", "vllm", "v0.33.0", ["--max-model-len", "4k"], [],
         {"max_model_len": 4000}),
    Case("vllm-option-added-later", "vllm", "v0.8.5", ["--async-scheduling"],
         [("KV701", "--async-scheduling", "added after 0.8.5")]),
    Case("vllm-option-removed", "vllm", "v0.33.0", ["--swap-space", "4"],
         [("KV701", "--swap-space", "removed after 0.11.0")]),
    Case("vllm-option-of-its-version", "vllm", "v0.8.5", ["--swap-space", "4"]),
    # 0.34.0's options (vllm/engine/arg_utils.py@v0.34.0): --enable-extensible-kv-cache is a
    # bool | None field, so argparse.BooleanOptionalAction gives it a --no- form
    Case("vllm-0-34-option", "vllm", "v0.34.0", ["--no-enable-extensible-kv-cache"]),
    Case("vllm-0-34-value-option", "vllm", "v0.34.0",
         ["--max-num-inflight-kv-loads", "4", "-tp", "2"], [], {"tp": 2}),
    Case("vllm-0-34-option-on-0-33", "vllm", "v0.33.0", ["--enable-extensible-kv-cache"],
         [("KV701", "--enable-extensible-kv-cache", "added after 0.33.0")]),
    Case("vllm-0-34-tp-zero", "vllm", "v0.34.0", ["--tensor-parallel-size", "0"],
         [("KV702", "--tensor-parallel-size", "needs at least 1")]),
    Case("vllm-0-34-kv-dtype", "vllm", "v0.34.0", ["--kv-cache-dtype", "nvfp4"], [],
         {"kv_cache_dtype": "nvfp4"}),
    # 0.20.0 lies between 0.11.0 and 0.33.0: what either accepts is not reported
    Case("vllm-between-known-versions", "vllm", "v0.20.0", ["--swap-space", "4"]),
    Case("vllm-gone-before-both-neighbours", "vllm", "v0.20.0", ["--num-scheduler-steps", "8"],
         [("KV701", "--num-scheduler-steps", "removed after 0.8.5")]),
    Case("vllm-kv-dtype-not-yet", "vllm", "v0.8.5", ["--kv-cache-dtype", "nvfp4"],
         [("KV702", "--kv-cache-dtype", "auto, fp8, fp8_e4m3, fp8_e5m2")]),
    Case("vllm-kv-dtype-now", "vllm", "v0.33.0", ["--kv-cache-dtype", "nvfp4"], [],
         {"kv_cache_dtype": "nvfp4"}),
    Case("vllm-kv-dtype-tgi-spelling", "vllm", "v0.33.0",
         ["--kv-cache-dtype", "fp8_e4m3fn"],
         [("KV702", "--kv-cache-dtype", "did you mean fp8_e4m3?")]),
    Case("vllm-dtype", "vllm", "v0.33.0", ["--dtype", "fp32"],
         [("KV702", "--dtype", "invalid choice: 'fp32'")]),
    Case("vllm-missing-value", "vllm", "v0.33.0", ["--max-model-len", "--enforce-eager"],
         [("KV702", "--max-model-len", "expected one argument")]),
    Case("vllm-memory-not-a-number", "vllm", "v0.33.0",
         ["--gpu-memory-utilization", "high"],
         [("KV702", "--gpu-memory-utilization", "invalid float value")]),
    Case("vllm-extra-positional", "vllm", "v0.33.0", ["8"],
         [("KV701", "8", "unrecognized arguments: 8")]),
    # -O<n> (rewritten by FlexibleArgumentParser in 0.33.0; the -O option in 0.8.5) and a
    # one-letter option with its value attached (argparse: -qfp8 is -q fp8)
    Case("vllm-attached-short-values", "vllm", "v0.33.0", ["-O3", "-qfp8", "-tp", "2"], [],
         {"tp": 2}),
    Case("vllm-O-of-old-versions", "vllm", "v0.8.5", ["-O", "3"]),
    # FlexibleArgumentParser folds a dotted word into its JSON option, one dash or two
    Case("vllm-dotted-short-json-option", "vllm", "v0.33.0",
         ["-cc.cudagraph_mode", "FULL", "--compilation-config.level", "3", "-tp", "2"], [],
         {"tp": 2}),
    Case("vllm-dotted-unknown-head", "vllm", "v0.33.0", ["-zz.mode", "FULL"],
         [("KV701", "-zz.mode", "has no option -zz.mode")]),
    Case("vllm-no-prefix-for-short-options", "vllm", "v0.33.0", ["-tp8"],
         [("KV701", "-tp8", "unrecognized arguments: -tp8")]),
    Case("vllm-unresolved-stays-unjudged", "vllm", "v0.33.0",
         ["--tensor-parallel-size", "$(TP_SIZE)"]),
    Case("vllm-compose-string-command", "vllm", "v0.33.0",
         ["--tensor-parallel-size", "2", "--num-shard", "2"],
         [("KV701", "--num-shard", "has no option --num-shard")], {"tp": 2}, compose=True),
    # --- SGLang (argparse: prefixes, no _ -> -) ------------------------------------------------
    Case("sglang-tp-prefix", "sglang", "0.5.23", ["--tp", "4"], [], {"tp": 4}),
    Case("sglang-underscore", "sglang", "0.5.23", ["--tp_size", "4"],
         [("KV701", "--tp_size", "--tp-size is the option")]),
    Case("sglang-ambiguous-prefix", "sglang", "0.5.23", ["--enable-dp"],
         [("KV701", "--enable-dp", "ambiguous option")]),
    Case("sglang-option-of-its-version", "sglang", "0.5.5.post3",
         ["--prefill-round-robin-balance"]),
    Case("sglang-option-removed", "sglang", "0.5.23", ["--prefill-round-robin-balance"],
         [("KV701", "--prefill-round-robin-balance", "removed after 0.5.19")]),
    Case("sglang-unknown-version-option-of-older", "sglang", "my-tag",
         ["--prefill-round-robin-balance"], [("KV701", "--prefill-round-robin-balance",
                                              "SGLang 0.5.19 is the last release")],
         severity="warning"),
    # an option only releases between two others had (0.5.10-0.5.19, sglang_options.json)
    Case("sglang-option-of-middle-releases", "sglang", "my-tag",
         ["--disable-piecewise-cuda-graph"], [("KV701", "--disable-piecewise-cuda-graph",
                                               "SGLang 0.5.19 is the last release")],
         severity="warning"),
    Case("sglang-option-of-its-middle-release", "sglang", "0.5.16",
         ["--disable-piecewise-cuda-graph"]),
    Case("sglang-option-gone-again", "sglang", "0.5.23", ["--disable-piecewise-cuda-graph"],
         [("KV701", "--disable-piecewise-cuda-graph", "removed after 0.5.19")]),
    Case("sglang-kv-dtype-of-older-version", "sglang", "0.4.6.post1",
         ["--kv-cache-dtype", "bf16"],
         [("KV702", "--kv-cache-dtype", "auto, fp8_e4m3, fp8_e5m2")]),
    Case("sglang-tp-not-an-integer", "sglang", "0.5.23", ["--tp-size=two"],
         [("KV702", "--tp-size", "is not an integer")]),
    Case("sglang-memory-prefix", "sglang", "0.5.23", ["--mem-fraction", "0.8", "--tp", "2"],
         [], {"tp": 2}),
    # --- TGI (clap: exact names, a repeat is refused) ------------------------------------------
    Case("tgi-num-shards", "tgi", "3.3.4", ["--num-shards", "2"],
         [("KV701", "--num-shards", "did you mean --num-shard?")], {"tp": 1}),
    Case("tgi-no-prefixes", "tgi", "3.3.4", ["--num-sh", "2"],
         [("KV701", "--num-sh", "unexpected argument '--num-sh'")]),
    Case("tgi-repeat", "tgi", "3.3.4", ["--num-shard", "2", "--num-shard", "4"],
         [("KV701", "--num-shard", "cannot be used multiple times")]),
    Case("tgi-negative-shards", "tgi", "3.3.4", ["--num-shard", "-1"],
         [("KV702", "--num-shard", "unsigned integer")]),
    Case("tgi-dtype", "tgi", "3.3.4", ["--dtype", "float32"],
         [("KV702", "--dtype", "bfloat16, float16")]),
    Case("tgi-kv-dtype", "tgi", "3.3.4", ["--kv-cache-dtype", "fp8_e4m3fn", "--num-shard", "2"],
         [], {"tp": 2}, compose=True),
    Case("tgi-env-num-shard", "tgi", "3.3.4", [], [("KV702", "--num-shard", "env NUM_SHARD")],
         env={"NUM_SHARD": "two"}),
    Case("tgi-command-line-beats-env", "tgi", "3.3.4", ["--num-shard", "2"], [], {"tp": 2},
         env={"NUM_SHARD": "two"}),
    # --- TensorRT-LLM (click: exact names, last wins) ------------------------------------------
    Case("trtllm-tp", "trtllm", "1.0.0", ["--tp", "2"],
         [("KV701", "--tp", "No such option: --tp")]),
    Case("trtllm-last-wins", "trtllm", "1.0.0", ["--tp_size", "2", "--tp_size", "4"], [],
         {"tp": 4}),
    Case("trtllm-tp-not-an-integer", "trtllm", "1.0.0", ["--tp_size", "abc"],
         [("KV702", "--tp_size", "'abc' is not a valid integer")]),
    Case("trtllm-missing-value", "trtllm", "1.0.0", ["--max_num_tokens"],
         [("KV702", "--max_num_tokens", "requires an argument")]),
    # click takes the next word as the value even when it looks like an option
    Case("trtllm-value-swallows-option", "trtllm", "1.0.0",
         ["--max_batch_size", "--tp_size", "2"],
         [("KV701", "2", "Got unexpected extra argument (2)"),
          ("KV702", "--max_batch_size", "'--tp_size' is not a valid integer")], {"tp": 1}),
    # --- LMDeploy (argparse; 0.7.3 and 0.18.0 tables) ------------------------------------------
    Case("lmdeploy-dp-added-later", "lmdeploy", "0.7.3", ["--tp", "2", "--dp", "2"],
         [("KV701", "--dp", "added after 0.7.3")], {"tp": 2}),
    Case("lmdeploy-quant-policy-old", "lmdeploy", "0.7.3", ["--quant-policy", "16"],
         [("KV702", "--quant-policy", "0, 4, 8")]),
    Case("lmdeploy-quant-policy-new", "lmdeploy", "0.18.0", ["--quant-policy", "FP8_E4M3"], [],
         {"kv_cache_dtype": "fp8"}),
    Case("lmdeploy-session-prefix", "lmdeploy", "0.18.0", ["--session", "4096"], [],
         {"max_model_len": 4096}),
    # --- llama.cpp (exact names, last wins) ----------------------------------------------------
    Case("llamacpp-ctx", "llamacpp", "server", ["--ctx", "4096"],
         [("KV701", "--ctx", "did you mean --ctx-size?")]),
    Case("llamacpp-cache-type", "llamacpp", "server", ["-ctk", "q8"],
         [("KV702", "-ctk", "did you mean q8_0?")]),
    Case("llamacpp-last-wins", "llamacpp", "server", ["-c", "4096", "-c", "8192"], [],
         {"max_model_len": 8192}),
    Case("llamacpp-env-cache-type", "llamacpp", "server", [],
         [("KV702", "--cache-type-k", "env LLAMA_ARG_CACHE_TYPE_K 'q8'")],
         env={"LLAMA_ARG_CACHE_TYPE_K": "q8"}),
    Case("llamacpp-no-equals-form", "llamacpp", "server", ["--ctx-size=4096"],
         [("KV701", "--ctx-size=4096", "write --ctx-size 4096")]),
    # -fa takes on|off|auto in builds since late August 2025: bare, it reads the next word
    Case("llamacpp-bare-flash-attn", "llamacpp", "server", ["-fa", "-c", "4096"],
         [("KV702", "-fa", "reads the next word '-c' as its value")], severity="warning"),
    Case("llamacpp-bare-flash-attn-last", "llamacpp", "server", ["-c", "4096", "-fa"],
         [("KV702", "-fa", "expects a value after it")], severity="warning"),
    Case("llamacpp-flash-attn-on", "llamacpp", "server", ["-fa", "on", "-c", "4096"]),
    Case("llamacpp-underscores", "llamacpp", "server", ["--ctx_size", "4096"], [],
         {"max_model_len": 4096}),
    Case("llamacpp-ctx-not-an-integer", "llamacpp", "server", ["-c", "abc"],
         [("KV702", "-c", "is not an integer")]),
]


def _manifest(case: Case) -> str:
    image = IMAGES[case.engine].format(v=case.version)
    command = [*PROGRAMS[case.engine], *case.args]
    if case.compose:
        return yaml.safe_dump({"services": {"llm": {
            # the command names its program: the image's own server entrypoint is cleared
            "image": image, "entrypoint": [], "command": " ".join(command),
            "environment": {"TP_SIZE": "${TP_SIZE}"}}}}, sort_keys=False)
    container: dict[str, Any] = {
        "name": "engine", "image": image, "command": command[:1], "args": command[1:],
        "resources": {"limits": {"nvidia.com/gpu": 1}}}
    if case.env:
        container["env"] = [{"name": k, "value": v} for k, v in case.env.items()]
    return yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": case.id},
        "spec": {"template": {"spec": {"containers": [container]}}}}, sort_keys=False)


def _line_of(text: str, option: str) -> int:
    """The line of the last list item that is ``option`` (or ``option=...``); for a one-line
    command, the line that holds it."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines, 1)
            if (m := re.fullmatch(r"\s*- ['\"]?(.*?)['\"]?", line)) and
            m.group(1).split("=", 1)[0] == option]
    return hits[-1] if hits else next(i for i, line in enumerate(lines, 1) if option in line)


@pytest.fixture(scope="module")
def linted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every case in its own file, linted in one run of ``kvlint lint --format json``."""
    root = tmp_path_factory.mktemp("refusals")
    texts = {}
    for case in CASES:
        name = f"{case.id}.{'compose.yaml' if case.compose else 'yaml'}"
        if case.compose:
            name = f"{case.id}/docker-compose.yaml"
            (root / case.id).mkdir()
        texts[case.id] = _manifest(case)
        (root / name).write_text(texts[case.id], encoding="utf-8")
    # --offline, not HF_HUB_OFFLINE: huggingface_hub reads that variable once, at import,
    # and would stay offline for the rest of the test session
    old = {k: os.environ.get(k) for k in ("HF_HUB_CACHE",)}
    os.environ["HF_HUB_CACHE"] = str(root / ".hf-cache")
    try:
        result = CliRunner().invoke(main, ["lint", str(root), "--offline", "--no-plugins",
                                           "--format", "json"])
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    # offline with an empty cache the Hub models are not checked (exit 2, one line); what
    # the engine refuses is judged from the manifest alone
    assert result.exit_code in (0, 1, 2), result.output
    if result.exit_code == 2:
        assert "could not be fetched" in result.stderr, result.stderr
    data = json.loads(result.stdout)
    by_case: dict[str, tuple[str, dict[str, Any]]] = {}
    for r in data["results"]:
        path = Path(r["target"]["path"])
        case_id = path.parent.name if path.name == "docker-compose.yaml" else \
            path.name.removesuffix(".yaml")
        by_case[case_id] = (texts[case_id], r)
    return by_case


def test_the_table_covers_every_engine() -> None:
    assert len(CASES) >= 30
    assert {c.engine for c in CASES} == set(IMAGES)
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_engine_refusal(case: Case, linted: dict[str, tuple[str, dict[str, Any]]]) -> None:
    text, result = linted[case.id]
    found = [f for f in result["findings"] if f["code"] in ("KV701", "KV702")]
    assert [(f["code"], f["data"]["option"]) for f in found] == \
        [(code, option) for code, option, _ in case.refused], [f["message"] for f in found]
    for f, (_code, option, phrase) in zip(found, case.refused, strict=True):
        assert phrase in f["message"], f["message"]
        assert f["severity"] == case.severity
        if case.env and not any(a.split("=", 1)[0] == option for a in case.args):
            variable = f["message"].split()[1]  # env NAME ...
            assert f["line"] == _line_of(text, f"name: {variable}") + 1  # its value
            continue
        assert f["line"] == _line_of(text, option)  # the option's own line
        if not case.compose:
            assert f["column"] == text.splitlines()[f["line"] - 1].index("-") + 3
    for key, value in case.serving.items():
        assert result["serving"][key] == value, (key, result["serving"])


def test_text_output_through_the_executable(tmp_path: Path) -> None:
    """The installed entry point, as CI runs it: an error exit and the message on the flag."""
    case = CASES[0]
    file = tmp_path / "deploy.yaml"
    file.write_text(_manifest(case), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf")}
    config = ROOT / "fixtures" / "configs" / "microsoft--Phi-3-medium-4k-instruct.json"
    done = subprocess.run([sys.executable, "-m", "kvlint", "lint", str(file), "--offline",
                           "--select", "KV7", "--model-map",
                           f"microsoft/Phi-3-medium-4k-instruct={config}"],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT,
                          check=False)
    assert done.returncode == 1, done.stderr
    line = _line_of(file.read_text(encoding="utf-8"), "--tp")
    assert f"deploy.yaml:{line}:" in done.stdout
    assert "KV701 error  engine-option-unknown" in done.stdout
    assert "vLLM 0.33.0 has no option --tp" in done.stdout


LAUNCHERS = {
    # `uv run` runs the engine (`uv pip install vllm` does not)
    "uv-run": ("vllm/vllm-openai:v0.11.0", f"exec uv run --with vllm vllm serve {MODEL} -tp 2",
               {"engine": "vllm", "tp": 2}),
    # the SGLang router launches the servers with their options and its own --router-*
    "sglang-router": ("lmsysorg/sglang:v0.5.23",
                      f"python3 -m sglang_router.launch_server --model-path {MODEL} "
                      "--dp-size 2 --router-policy cache_aware --tp 2",
                      {"engine": "sglang", "tp": 2, "dp": 2}),
    "dynamo-vllm": ("vllm/vllm-openai:v0.11.0",
                    f"python3 -m dynamo.vllm --model {MODEL} --is-prefill-worker "
                    "--tensor-parallel-size 2", {"engine": "vllm", "tp": 2}),
    "pip-install-is-not-a-launch": ("vllm/vllm-openai:v0.11.0",
                                    "uv pip install vllm serve", None),
}


@pytest.mark.parametrize("name", list(LAUNCHERS))
def test_launchers_and_wrappers(name: str, tmp_path: Path) -> None:
    """A launcher in front of the engine is seen through; a wrapper's own options (the
    router's, Dynamo's) are not KV701 (the engine's values are still judged: KV702)."""
    image, script, serving = LAUNCHERS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"template": {"spec": {"containers": [{
            "name": "engine", "image": image, "command": ["/bin/sh", "-c"],
            "args": [script]}]}}}}, sort_keys=False))
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--format", "json", "--model-map",
                                       f"{MODEL}={ROOT / 'fixtures' / 'configs'}"
                                       "/microsoft--Phi-3-medium-4k-instruct.json"])
    assert result.exit_code in (0, 1), result.output
    results = json.loads(result.stdout)["results"]
    if serving is None:
        assert results == []
        return
    [found] = results
    assert {k: found["serving"][k] for k in serving} == serving
    assert [f["code"] for f in found["findings"] if f["code"].startswith("KV70")] == []


@pytest.mark.parametrize(("option", "severity"), [
    ("--kv-pool-size", "warning"),  # no close option: perhaps one a newer build added
    ("--ctx", "error"),  # cut short: --ctx-size is meant
    ("--ctx-sise", "error"),  # one edit from --ctx-size: a misspelling
])
def test_an_option_no_known_release_has_on_a_floating_tag(tmp_path: Path, option: str,
                                                          severity: str) -> None:
    """llama.cpp's ``server-cuda`` tag names no release, and kvlint's llama.cpp options come
    from one source: an option it lacks may be newer, unless it reads as a misspelling."""
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  llama:\n    image: ghcr.io/ggml-org/llama.cpp:server-cuda\n"
        f"    command: [\"-hf\", \"org/m-GGUF\", \"{option}\", \"4096\"]\n", encoding="utf-8")
    found = _kv701(compose)
    assert [f["severity"] for f in found] == [severity], [f["message"] for f in found]


def _kv701(path: Path) -> list[dict[str, Any]]:
    """The KV701 findings of ``kvlint lint path`` (offline, no plugins)."""
    result = CliRunner().invoke(main, ["lint", str(path), "--isolated", "--no-plugins",
                                       "--offline", "--format", "json"])
    return [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
            if f["code"] == "KV701"]


@pytest.mark.parametrize(("tag", "option", "severity"), [
    ("latest", "--disable-log-requests", "warning"),  # a pull now gets the newest: refused
    ("nightly", "--swap-space", "warning"),
    ("nightly-da4455609d9e29abebc15f6c598dfd772c2b6513", "--swap-space", "warning"),  # one build
    ("latest@sha256:" + "ab" * 32, "--swap-space", "warning"),  # a digest: one fixed build
    ("v0.34.0", "--disable-log-requests", "error"),  # pinned past the removal: refused
    ("latest", "--tp", "error"),  # no release has it: a misspelling of -tp
])
def test_an_option_an_older_release_has_on_a_rolling_tag(tmp_path: Path, tag: str,
                                                          option: str, severity: str) -> None:
    """An option the newest release removed but an older one kvlint knows accepts: an error on
    a tag pinned past the removal; a warning on a rolling tag (a pull now gets the newest
    build, but the manifest may have been written for an older one: judged like a version
    kvlint cannot date) and on one fixed build of no stated release (a commit nightly, a
    digest), which may predate the removal (vllm/vllm-openai, 0.8.5..0.34.0 tables). The
    message names the last release that accepts it."""
    compose = tmp_path / "compose.yaml"
    value = ' "4"' if option in ("--swap-space", "--tp") else ""
    separator = "" if tag.startswith("latest@") else ":"
    image = f"vllm/vllm-openai{separator}{tag}".replace("latest@", ":latest@")
    compose.write_text(
        f"services:\n  vllm:\n    image: {image}\n"
        f"    command: [\"--model\", \"org/m\", \"{option}\"{',' + value if value else ''}]\n"
        "    gpus: all\n", encoding="utf-8")
    found = _kv701(compose)
    assert [f["severity"] for f in found] == [severity], [f["message"] for f in found]
    if option != "--tp" and not tag.startswith("v"):
        assert "vLLM 0.11.0 is the last release" in found[0]["message"] or \
            "vLLM 0.11.0 accepts it" in found[0]["message"]


def test_an_options_on_off_twin_is_not_a_misspelling() -> None:
    from kvlint.manifests.engine_options import _counterpart

    known = frozenset({"--enable-piecewise-cuda-graph", "--trust-remote-code"})
    assert _counterpart("--disable-piecewise-cuda-graph", known)
    assert _counterpart("--no-trust-remote-code", known)
    assert not _counterpart("--disable-decode-cuda-graphs", known)


@pytest.mark.parametrize(("option", "severity"), [
    # click spells trtllm-serve's options with _ and Dynamo's with -: a release kvlint cannot
    # place against its one source may have the other spelling
    ("--served_model_name", "warning"),
    ("--kv_cache_dtype", "warning"),
    ("--tp", "error"),  # cut short: --tp_size is meant, in any release
])
def test_a_trtllm_release_is_not_placed_against_the_one_source(tmp_path: Path, option: str,
                                                               severity: str) -> None:
    """kvlint's TensorRT-LLM options come from one commit of serve.py, of no stated release: a
    release (here one named by an Apptainer image file) may be newer than it, so an option the
    source lacks warns, unless it reads as a misspelling."""
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/bash\nsingularity exec --nv /images/tensorrt-llm-release-1.3.0rc18.sif \\\n"
        f"  trtllm-serve serve org/m --tp_size 1 {option} x\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(script), "--isolated", "--no-plugins",
                                       "--offline", "--format", "json"])
    (served,) = json.loads(result.stdout)["results"]
    assert served["serving"]["engine_version"] == "1.3.0rc18"
    found = [f for f in served["findings"] if f["code"] == "KV701"]
    assert [f["severity"] for f in found] == [severity], [f["message"] for f in found]


def test_vllm_list_option_left_without_a_value(tmp_path: Path) -> None:
    """``--api-key ${KEY:-}`` with the variable unset leaves ``--api-key`` followed by the
    next option: vLLM's nargs="+" refuses it at start (KV702), in a script and in compose."""
    script = tmp_path / "serve.sh"
    script.write_text("vllm serve Qwen/Qwen3-8B --api-key --trust-remote-code\n",
                      encoding="utf-8")
    compose = tmp_path / "compose.yaml"
    compose.write_text("services:\n  a:\n    image: vllm/vllm-openai:v0.10.1.1\n"
                       "    command: --model Qwen/Qwen3-8B --api-key ${KEY:-} "
                       "--trust-remote-code\n", encoding="utf-8")
    for path in (script, compose):
        result = CliRunner().invoke(main, ["lint", str(path), "--offline", "--no-plugins",
                                           "--format", "json"])
        found = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
                 if f["code"] == "KV702"]
        assert found and "expected at least one argument" in found[0]["message"], \
            result.output
