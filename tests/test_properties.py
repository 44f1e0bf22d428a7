"""Property-based robustness: whatever a pull request or a Hub repo hands kvlint, a run ends
with exit 0, 1 or 2, never an internal error or a traceback, one stderr line on exit 2, and the
same output for the same input.

Inputs are generated (never committed) from the project's own material: mutations of the real
fixture configs, Kubernetes and Compose manifests whose vLLM, SGLang, TGI or llama.cpp command
mixes real option names with garbage, flat engine ``--config`` YAML files, ``check``/``compare``
options with odd values, and settings files built from the ``Settings`` fields with wrong types
and values.

The budget is fixed for CI (``KVLINT_PROPERTY_EXAMPLES``, default 40 examples per property);
set it higher locally for a longer search, e.g. ``KVLINT_PROPERTY_EXAMPLES=2000``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kvlint.cli import main  # noqa: E402
from kvlint.settings import Settings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted((ROOT / "fixtures" / "configs").glob("*.json"))
EXAMPLES = int(os.environ.get("KVLINT_PROPERTY_EXAMPLES", "40"))
BUDGET = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=20), derandomize=not
                  os.environ.get("KVLINT_PROPERTY_RANDOM"),
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.function_scoped_fixture])

FIELDS = ("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
          "hidden_size", "intermediate_size", "vocab_size", "max_position_embeddings",
          "sliding_window", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
          "v_head_dim", "model_type", "torch_dtype", "layer_types", "num_experts",
          "num_experts_per_tok", "n_routed_experts", "rope_scaling", "text_config",
          "quantization_config", "attention_types", "layers_block_type",
          "first_k_dense_replace", "architectures", "tie_word_embeddings")

_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                max_size=40) | st.sampled_from(
    ["\x1b]0;pwned\x07", "a\nb", "\r", "::error ::x", "<img src=x>", "../../etc/passwd",
    "%0A", "llama", "deepseek_v3", "bfloat16", "fp8", "\ufeff", "x" * 300])
_numbers = st.integers(min_value=-(10**6), max_value=10**6) | st.sampled_from(
    [0, -1, 1, 2**31, 2**63, 10**30, 10**4000]) | st.floats(allow_nan=True,
                                                         allow_infinity=True)
_scalars = st.none() | st.booleans() | _numbers | _text
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(FIELDS) | _text, inner, max_size=4), max_leaves=12)


@st.composite
def mutated_config(draw: st.DrawFn) -> dict[str, Any]:
    """A real fixture config with a few fields replaced, removed or nested."""
    config: dict[str, Any] = json.loads(draw(st.sampled_from(CONFIGS)).read_text())
    for _ in range(draw(st.integers(1, 4))):
        keys = sorted(config) or ["model_type"]
        key = draw(st.sampled_from(keys) | st.sampled_from(FIELDS))
        action = draw(st.sampled_from(["set", "set", "delete", "nest"]))
        if action == "delete":
            config.pop(key, None)
        elif action == "nest":
            config = {"text_config": config, "model_type": draw(_text)}
        else:
            config[key] = draw(_values)
    return config


def _write_json(path: Path, value: Any) -> None:
    # Python's json writes nan/inf/huge ints, which is what a hostile file can contain.
    path.write_text(json.dumps(value), encoding="utf-8")


def _invoke(args: list[str], tmp: Path) -> Result:
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp / "hf"), "NO_COLOR": "1",
           "GITHUB_ACTIONS": None, "KVLINT_DEBUG": None}
    return CliRunner().invoke(main, args, env=env, catch_exceptions=True)


def _contract(result: Result) -> None:
    """Exit 0/1/2, no internal error or traceback, one line on stderr for exit 2."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    assert "internal error" not in result.stderr, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    if result.exit_code == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) >= 1, "exit 2 without a message"
        assert all(line.startswith("kvlint: error: ") for line in lines), result.stderr


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("properties")


@BUDGET
@given(config=mutated_config(), tp=st.sampled_from([1, 2, 3, 8, 16, 64]),
       gpu=st.sampled_from([None, "H100-80GB", "L4"]))
def test_check_mutated_configs(workdir: Path, config: dict[str, Any], tp: int,
                               gpu: str | None) -> None:
    path = workdir / "config.json"
    _write_json(path, config)
    args = ["check", str(path), "--isolated", "--tp", str(tp), "--format", "json"]
    if gpu:
        args += ["--gpu", gpu]
    result = _invoke(args, workdir)
    _contract(result)
    if result.exit_code == 2:
        # one model per run: its reason is one line
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


VLLM_OPTIONS = ["--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp",
                "--data-parallel-size", "--max-model-len", "--max-num-seqs",
                "--gpu-memory-utilization", "--kv-cache-dtype", "--dtype",
                "--enable-expert-parallel", "--enforce-eager", "--tp", "--max-model",
                "--kv_cache_dtype", "--served-model-name", "--bogus-option"]
_words = st.sampled_from(["1", "2", "8", "0", "-1", "abc", "auto", "fp8", "bfloat16", "1e9",
                          "9" * 400 + "k", "$(TP)", "${TP}", "$((1 + 2))", "''", "0.9",
                          "inf", "nan", "\\", "\"", "$((" + "1+" * 200 + "1))"]) | _text


@st.composite
def engine_command(draw: st.DrawFn) -> list[str]:
    words: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        option = draw(st.sampled_from(VLLM_OPTIONS))
        if draw(st.booleans()):
            words.append(f"{option}={draw(_words)}")
        else:
            words += [option, draw(_words)]
    return words


def _manifest(command: list[str], env: dict[str, str], gpus: Any) -> str:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.8.5",
                 "command": ["vllm", "serve", "./model", *command],
                 "env": [{"name": k, "value": v} for k, v in env.items()],
                 "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "m"},
           "spec": {"template": {"spec": {"containers": [container]}}}}
    return json.dumps(doc)  # JSON is YAML


@BUDGET
@given(config=mutated_config(), command=engine_command(),
       env=st.dictionaries(st.sampled_from(["TP", "MAX_LEN", "VLLM_ALLOW_LONG_MAX_MODEL_LEN"]),
                           _words, max_size=3),
       gpus=st.sampled_from([1, 2, 8, "8", "x", -1, None]))
def test_lint_generated_manifests(workdir: Path, config: dict[str, Any], command: list[str],
                                  env: dict[str, str], gpus: Any) -> None:
    model = workdir / "model"
    model.mkdir(exist_ok=True)
    _write_json(model / "config.json", config)
    manifest = workdir / "deploy.yaml"
    manifest.write_text(_manifest(command, env, gpus), encoding="utf-8")
    result = _invoke(["lint", str(manifest), "--isolated", "--format", "json"], workdir)
    _contract(result)


_SETTING_NAMES = [f.name.replace("_", "-") for f in dataclasses.fields(Settings)]
_toml_values = st.sampled_from(["1", "0", "-100.0", "inf", "nan", "true", "\"H100\"",
                                "\"bogus\"", "[\"KV2\"]", "[\"KV999\"]", "{}", "[1, 2]",
                                "\"\\u001b]0;x\\u0007\"", "{ \"*.yaml\" = [\"KV201\"] }",
                                "{ \"*.yaml\" = [\"NOPE\"] }", "1e400", "9" * 30])


@BUDGET
@given(entries=st.lists(st.tuples(st.sampled_from([*_SETTING_NAMES, "nope", "tool"]),
                                  _toml_values), max_size=5),
       nested=st.sampled_from(["", "x = [" * 50 + "]" * 50]))
def test_settings_files(workdir: Path, entries: list[tuple[str, str]], nested: str) -> None:
    body = "\n".join(f"{key} = {value}" for key, value in dict(entries).items())
    settings_file = workdir / "kvlint.toml"
    settings_file.write_text(body + ("\n" + nested if nested else "") + "\n",
                             encoding="utf-8")
    config = CONFIGS[0]
    result = _invoke(["check", str(config), "--config", str(settings_file)], workdir)
    _contract(result)
    if result.exit_code == 2:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@settings(BUDGET, max_examples=max(5, EXAMPLES // 4))
@given(config=mutated_config(), command=engine_command())
def test_output_is_deterministic(workdir: Path, config: dict[str, Any],
                                 command: list[str]) -> None:
    model = workdir / "model"
    model.mkdir(exist_ok=True)
    _write_json(model / "config.json", config)
    manifest = workdir / "same.yaml"
    manifest.write_text(_manifest(command, {}, 8), encoding="utf-8")
    for fmt in ("text", "json", "sarif"):
        args = ["lint", str(manifest), "--isolated", "--format", fmt]
        first, second = _invoke(args, workdir), _invoke(args, workdir)
        assert (first.exit_code, first.stdout, first.stderr) == (
            second.exit_code, second.stdout, second.stderr)



# Other engines' command lines, Compose services and flat engine --config YAML files. Each
# program pairs with its own option names (real ones from kvlint's engine tables, misspellings
# and unknown ones), so a value reaches that engine's parser rather than "unknown option".
PROGRAMS: dict[str, tuple[list[str], list[str]]] = {
    "vllm": (["vllm", "serve", "./model"], VLLM_OPTIONS),
    "sglang": (["python", "-m", "sglang.launch_server", "--model-path", "./model"],
               ["--tp-size", "--tp", "--dp-size", "--pp-size", "--context-length",
                "--mem-fraction-static", "--kv-cache-dtype", "--max-running-requests",
                "--enable-dp-attention", "--ep-size", "--dtype", "--quantization",
                "--max-total-tokens", "--chunked-prefill-size", "--bogus"]),
    "tgi": (["text-generation-launcher", "--model-id", "./model"],
            ["--num-shard", "--sharded", "--max-total-tokens", "--max-input-tokens",
             "--max-input-length", "--max-batch-prefill-tokens", "--quantize", "--dtype",
             "--kv-cache-dtype", "--cuda-memory-fraction", "--max-concurrent-requests",
             "--bogus"]),
    "llamacpp": (["llama-server", "-m", "./model/model.gguf"],
                 ["-c", "--ctx-size", "-np", "--parallel", "-ngl", "--n-gpu-layers",
                  "-ctk", "--cache-type-k", "-ctv", "--cache-type-v", "-fa", "--flash-attn",
                  "-sm", "--split-mode", "-ts", "--tensor-split", "--bogus"]),
}
IMAGES = {"vllm": "vllm/vllm-openai:v0.8.5", "sglang": "lmsysorg/sglang:v0.4.6",
          "tgi": "ghcr.io/huggingface/text-generation-inference:3.0.1",
          "llamacpp": "ghcr.io/ggml-org/llama.cpp:server"}


@st.composite
def any_engine_command(draw: st.DrawFn) -> tuple[str, list[str]]:
    engine = draw(st.sampled_from(sorted(PROGRAMS)))
    program, options = PROGRAMS[engine]
    words = list(program)
    for _ in range(draw(st.integers(0, 8))):
        option = draw(st.sampled_from(options))
        if draw(st.booleans()):
            words.append(f"{option}={draw(_words)}")
        else:
            words += [option, draw(_words)]
    return engine, words


def _compose(engine: str, words: list[str], env: dict[str, str], shell: bool) -> str:
    service: dict[str, Any] = {
        "image": IMAGES[engine], "environment": env,
        "command": " ".join(words) if shell else words,
        "deploy": {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "count": 8, "capabilities": ["gpu"]}]}}}}
    if engine == "tgi":
        service["command"] = words[1:] if not shell else " ".join(words[1:])
    return json.dumps({"services": {"llm": service}})


@BUDGET
@given(config=mutated_config(), command=any_engine_command(),
       env=st.dictionaries(st.sampled_from(["TP", "MAX_LEN", "NUM_SHARD", "MODEL_ID"]),
                           _words, max_size=3),
       layout=st.sampled_from(["k8s", "compose", "compose-shell"]),
       gpus=st.sampled_from([1, 8, "x", None]))
def test_lint_other_engines(workdir: Path, config: dict[str, Any],
                            command: tuple[str, list[str]], env: dict[str, str], layout: str,
                            gpus: Any) -> None:
    engine, words = command
    model = workdir / "model"
    model.mkdir(exist_ok=True)
    _write_json(model / "config.json", config)
    manifest = workdir / "other.yaml"
    if layout == "k8s":
        text = _manifest(words[3:] if engine == "vllm" else [], env, gpus)
        if engine != "vllm":
            doc = json.loads(text)
            container = doc["spec"]["template"]["spec"]["containers"][0]
            container["image"], container["command"] = IMAGES[engine], words
            text = json.dumps(doc)
    else:
        text = _compose(engine, words, env, shell=layout == "compose-shell")
    manifest.write_text(text, encoding="utf-8")
    result = _invoke(["lint", str(manifest), "--isolated", "--format", "json"], workdir)
    _contract(result)


_config_keys = st.sampled_from(["model", "tensor-parallel-size", "tensor_parallel_size",
                                "pipeline-parallel-size", "max-model-len", "max_model_len",
                                "kv-cache-dtype", "gpu-memory-utilization", "max-num-seqs",
                                "dtype", "enable-expert-parallel", "no-enable-prefix-caching",
                                "data-parallel-size", "quantization", "served_model_name"])


@BUDGET
@given(config=mutated_config(),
       entries=st.dictionaries(_config_keys, _values | _words, min_size=2, max_size=6),
       name=st.sampled_from(["vllm-config.yaml", "sglang.yaml", "serve.yaml"]))
def test_lint_engine_config_files(workdir: Path, config: dict[str, Any],
                                  entries: dict[str, Any], name: str) -> None:
    model = workdir / "model"
    model.mkdir(exist_ok=True)
    _write_json(model / "config.json", config)
    if "model" in entries and not isinstance(entries["model"], str):
        entries["model"] = "./model"
    path = workdir / name
    path.write_text(json.dumps(entries), encoding="utf-8")
    result = _invoke(["lint", str(path), "--isolated", "--format", "json"], workdir)
    _contract(result)


_odd_ints = st.sampled_from(["0", "-1", "1", "3", "7", "1000000000", "9" * 40, "1e3", "abc",
                             "", " 2", "0x10", "4_096", "8k", "nan"])
_odd_floats = st.sampled_from(["0", "1", "0.5", "1.0000001", "-0.1", "nan", "inf", "1e-300",
                               "abc", "", ".9", "9" * 400])


@BUDGET
@given(config=mutated_config(),
       options=st.lists(st.tuples(st.sampled_from(["--tp", "--pp", "--dp", "--context",
                                                   "--batch", "--max-model-len",
                                                   "--max-num-seqs"]), _odd_ints) |
                        st.tuples(st.sampled_from(["--gpu-memory-utilization", "--overhead"]),
                                  _odd_floats) |
                        st.tuples(st.sampled_from(["--gpu"]),
                                  st.sampled_from(["H100-80GB", "L4", "MI300X", "bogus", ""])) |
                        st.tuples(st.sampled_from(["--engine"]),
                                  st.sampled_from(["vllm", "sglang", "tgi", "llamacpp",
                                                   "trtllm", "lmdeploy", "nope"])) |
                        st.tuples(st.sampled_from(["--kv-cache-dtype"]),
                                  st.sampled_from(["auto", "fp8", "fp8_ds_mla", "int4"])),
                        max_size=5),
       command=st.sampled_from(["check", "compare"]),
       fmt=st.sampled_from(["text", "json", "markdown"]),
       flag=st.sampled_from([[], ["--dp-attention"]]))
def test_check_and_compare_options(workdir: Path, config: dict[str, Any],
                                   options: list[tuple[str, str]], command: str, fmt: str,
                                   flag: list[str]) -> None:
    path = workdir / "opt-config.json"
    _write_json(path, config)
    args = [command, str(path)]
    if command == "compare":
        args.append(str(CONFIGS[0]))
        flag = []
    else:
        args.append("--isolated")
    for option, value in options:
        args.append(f"{option}={value}")
    result = _invoke([*args, *flag, "--format", fmt], workdir)
    _contract(result)
    if result.exit_code == 2:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
