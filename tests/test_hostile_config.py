"""Hostile configs, settings and command lines through the real CLI (issue 13).

Every case runs ``python -m kvlint`` in a child process with a memory cap (RLIMIT_AS) and a
time limit; the malicious inputs are generated here, in ``tmp_path``, from the real fixtures.
Each must end with a one-line error and exit 2 (or a finding when the run has other models),
quickly, never with "internal error" or a traceback.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kvlint.loaders.hf_config import FIELD_LIMITS
from kvlint.model.limits import MAX_HEAD_DIM, MAX_HEADS, MAX_LAYERS, MAX_SIZE
from tests.helpers import CONFIGS, ROOT, fixture_config

MEMORY_CAP = 2 * 1024**3
TIME_LIMIT = 60
"""Each run takes 2-5 s alone; the margin absorbs a loaded CI machine. The hostile cases this
file guards against took minutes or never ended."""
LLAMA = "meta-llama--Llama-2-7b-hf"
MLA = "deepseek-ai--DeepSeek-V2-Lite"
MIXTRAL = "mistralai--Mixtral-8x7B-v0.1"


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def kvlint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m kvlint ARGS`` in ``cwd``, capped at 2 GiB and 30 s."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("KVLINT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "kvlint", *args], cwd=cwd, env=env, capture_output=True,
        text=True, encoding="utf-8", errors="replace", timeout=TIME_LIMIT,
        preexec_fn=_cap_memory, check=False)


def clean(proc: subprocess.CompletedProcess[str]) -> None:
    """No crash: no internal error, no traceback, an exit code of the contract."""
    assert proc.returncode in (0, 1, 2), (proc.returncode, proc.stderr[-2000:])
    assert "internal error" not in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def one_line_error(proc: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Exit 2 with exactly one stderr line ``kvlint: error: ...`` holding ``expected``."""
    clean(proc)
    assert proc.returncode == 2, (proc.stdout[-2000:], proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kvlint: error: "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


def config_file(tmp_path: Path, base: str, name: str = "config.json", **changes: Any) -> Path:
    """A fixture config with ``changes`` applied (a value ``None`` removes the key)."""
    config = fixture_config(base)
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path = tmp_path / name
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


# --------------------------------------------------------------------- the bounds themselves
def test_bounds_leave_a_wide_margin_over_every_real_config() -> None:
    """Each bound is at least 50x the largest value of its field among the real configs."""
    largest: dict[str, int] = {}

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, int) and not isinstance(value, bool):
            largest[key] = max(largest.get(key, 0), value)

    for path in CONFIGS.glob("*.json"):
        if path.name != "expected.json":
            walk(json.loads(path.read_text(encoding="utf-8")))
    assert largest["num_hidden_layers"] * 50 < MAX_LAYERS
    for name, limit in FIELD_LIMITS.items():
        assert largest.get(name, 0) * 50 < limit, name
    others = {k: v for k, v in largest.items() if k not in FIELD_LIMITS}
    assert max(others.values()) * 50 < MAX_SIZE, max(others, key=lambda k: others[k])
    assert MAX_HEADS >= 65_536 and MAX_HEAD_DIM >= 65_536


# ------------------------------------------------------------------- absurd sizes in configs
SIZES: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    ("layers 1e9", {"num_hidden_layers": 1e9}, ("'num_hidden_layers'", "at most 10,000")),
    ("layers 1e6", {"num_hidden_layers": 1e6}, ("'num_hidden_layers'", "at most 10,000")),
    ("layers 1e30", {"num_hidden_layers": 1e30}, ("'num_hidden_layers'", "1e+30")),
    ("layers 1e308", {"num_hidden_layers": 1e308}, ("'num_hidden_layers'", "1e+308")),
    ("layers 10**300", {"num_hidden_layers": 10**300},
     ("'num_hidden_layers'", "an integer of about 301 digits")),
    ("head_dim 1e308", {"head_dim": 1e308}, ("'head_dim'", "at most 65,536")),
    ("head_dim 1e30", {"head_dim": 1e30}, ("'head_dim'", "at most 65,536")),
    ("heads 10**40", {"num_attention_heads": 10**40}, ("'num_attention_heads'", "65,536")),
    ("hidden 10**200", {"hidden_size": 10**200}, ("'hidden_size'", "4,294,967,296")),
    ("vocab 1e300", {"vocab_size": 1e300}, ("'vocab_size'", "at most")),
    ("layer_types 20,000 long", {"num_hidden_layers": 10_000,
                                 "layer_types": ["full_attention"] * 20_000},
     ("'layer_types'", "20,000 layers")),
    ("layers_block_type 20,000 long", {"num_hidden_layers": 10_000,
                                       "layers_block_type": ["mamba"] * 20_000},
     ("'layers_block_type'", "20,000 layers")),
    ("hybrid_override_pattern 10**6", {"hybrid_override_pattern": "M" * 10**6},
     ("'hybrid_override_pattern'", "1,000,000 layers")),
    ("NaN heads", {"num_attention_heads": float("nan")}, ("'num_attention_heads'",)),
]


@pytest.mark.parametrize(("changes", "expected"), [(c, e) for _, c, e in SIZES],
                         ids=[i for i, _, _ in SIZES])
def test_absurd_sizes_are_one_line_errors(tmp_path: Path, changes: dict[str, Any],
                                          expected: tuple[str, ...]) -> None:
    path = config_file(tmp_path, LLAMA, **changes)
    proc = kvlint("check", str(path), "--isolated", "--gpu", "H100-80GB", cwd=tmp_path)
    one_line_error(proc, str(path), *expected)
    assert "KV900" in proc.stdout


def test_attention_types_repeat_counts_are_bounded(tmp_path: Path) -> None:
    base = {"model_type": "gpt_neo", "num_layers": 24, "num_heads": 16, "hidden_size": 2048,
            "vocab_size": 50257, "max_position_embeddings": 2048, "window_size": 256}
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({**base, "attention_types": [[["global", "local"], 10**9]]}))
    one_line_error(kvlint("check", str(huge), "--isolated", cwd=tmp_path),
                   "'attention_types[0][1]'", "at most 10,000")
    many = tmp_path / "many.json"  # each repeat allowed, the sum not
    many.write_text(json.dumps({**base, "attention_types": [[["global", "local"], 9_000]] * 3}))
    one_line_error(kvlint("check", str(many), "--isolated", cwd=tmp_path),
                   "'attention_types'", "layers; at most 10,000")


def test_ssm_layer_counts_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "mamba.json"
    path.write_text(json.dumps({"model_type": "mamba", "n_layer": 1e9, "hidden_size": 768,
                                "vocab_size": 50280}))
    one_line_error(kvlint("check", str(path), "--isolated", cwd=tmp_path), "'n_layer'")


def test_the_largest_accepted_model_is_quick(tmp_path: Path) -> None:
    """10,000 layers of a windowed schedule at the largest context and batch: per-layer work
    stays small enough for the 30 s budget, and the figures are printed, not crashed on."""
    path = config_file(tmp_path, "google--gemma-3-1b-it", num_hidden_layers=10_000,
                       max_position_embeddings=MAX_SIZE)
    proc = kvlint("check", str(path), "--isolated", "--gpu", "H100-80GB", "--format", "json",
                  "--context", str(MAX_SIZE), "--batch", str(MAX_SIZE), "--max-num-seqs",
                  str(MAX_SIZE), cwd=tmp_path)
    clean(proc)
    [result] = json.loads(proc.stdout)["results"]
    assert result["geometry"]["num_layers"] == 10_000


# ----------------------------------------------------------------- nonsense taken as fact
def test_mla_kv_heads_above_query_heads(tmp_path: Path) -> None:
    heads = fixture_config(MLA)["num_attention_heads"]
    path = config_file(tmp_path, MLA, num_key_value_heads=1000)
    one_line_error(kvlint("check", str(path), "--isolated", cwd=tmp_path),
                   f"num_key_value_heads (1000) exceeds num_attention_heads ({heads})")


def test_mla_v_head_dim_derived_as_zero(tmp_path: Path) -> None:
    path = config_file(tmp_path, MLA, model_type="hostile_mla", v_head_dim=None,
                       hidden_size=8, architectures=None, auto_map=None)
    one_line_error(kvlint("check", str(path), "--isolated", cwd=tmp_path),
                   "'v_head_dim (hidden_size / num_attention_heads)' must be at least 1, got 0")


@pytest.mark.parametrize(("quantization", "field"), [
    ({"quant_method": "gptq", "bits": -4, "group_size": 128}, "quantization_config.bits"),
    ({"quant_method": "awq", "bits": 4, "group_size": 1e-320}, "quantization_config.group_size"),
    ({"quant_method": "fp8", "weight_block_size": [1e-200, 1e-200]},
     "quantization_config.weight_block_size"),
    ({"bits": float("inf"), "group_size": 64}, "quantization_config.bits"),
])
def test_impossible_quantization(tmp_path: Path, quantization: dict[str, Any],
                                 field: str) -> None:
    path = config_file(tmp_path, LLAMA, quantization_config=quantization)
    one_line_error(kvlint("check", str(path), "--isolated", "--gpu", "H100-80GB", cwd=tmp_path),
                   f"'{field}'")


def test_experts_per_token_above_experts(tmp_path: Path) -> None:
    path = config_file(tmp_path, MIXTRAL, num_experts_per_tok=10)
    one_line_error(kvlint("check", str(path), "--isolated", "--gpu", "H100-80GB", cwd=tmp_path),
                   "'num_experts_per_tok' (10) exceeds the number of routed experts (8)")


def test_lone_surrogate_in_model_type_is_printed_escaped(tmp_path: Path) -> None:
    path = config_file(tmp_path, LLAMA, model_type="llama\ud800\x1b]0;x\x07")
    for fmt in ("text", "json", "github"):
        proc = kvlint("check", str(path), "--isolated", "--format", fmt, cwd=tmp_path)
        clean(proc)
        assert proc.returncode == 0, (fmt, proc.stderr)
    report = tmp_path / "report.txt"
    clean(kvlint("check", str(path), "--isolated", "-o", str(report), cwd=tmp_path))
    assert "\\ud800" in report.read_text(encoding="utf-8")


def test_a_config_error_message_stays_on_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "a\nb\x1b[2J.json"
    bad.write_text(json.dumps({**fixture_config(LLAMA), "num_hidden_layers": 1e9}))
    proc = kvlint("check", str(bad), "--isolated", cwd=tmp_path)
    line = one_line_error(proc, "a\\nb\\x1b[2J.json")
    assert "\x1b" not in line


@pytest.mark.parametrize("name", ["a" * 300, "org/" + "a" * 300, "./" + "a" * 300 + "/c.json"])
def test_very_long_model_names(tmp_path: Path, name: str) -> None:
    proc = kvlint("check", name, "--isolated", "--offline", cwd=tmp_path)
    one_line_error(proc, "no such file or directory")


def test_very_long_settings_and_model_map_paths(tmp_path: Path) -> None:
    model = str(CONFIGS / f"{LLAMA}.json")
    one_line_error(kvlint("check", model, "--config", "s" * 300, cwd=tmp_path),
                   "no such settings file")
    (tmp_path / ".kvlint.toml").write_text(f'[models]\n"org/x" = "{"m" * 300}"\n')
    (tmp_path / "compose.yaml").write_text(_compose("org/x"))
    clean(kvlint("lint", "compose.yaml", "--offline", cwd=tmp_path))


# ----------------------------------------------------------------------------- lint --gpu
def test_lint_of_a_very_long_path_is_one_line(tmp_path: Path) -> None:
    one_line_error(kvlint("lint", "a" * 300 + ".yaml", cwd=tmp_path),
                   "no such file or directory")


@pytest.mark.parametrize("value", ["9" * 400 + "k", "9" * 5000, "1" + "0" * 4400 + "K"])
def test_huge_engine_values_are_refusals_not_crashes(tmp_path: Path, value: str) -> None:
    """vLLM reads --max-model-len with Python's int()/float(): a value past their range makes
    it exit at start, so kvlint reports KV702 on the line (and never crashes)."""
    config_file(tmp_path, LLAMA)
    (tmp_path / "compose.yaml").write_text(_compose("org/llama", f', "--max-model-len={value}"'))
    proc = kvlint("lint", "compose.yaml", "--isolated", "--format", "json",
                  "--model-map", f"org/llama={tmp_path / 'config.json'}", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "internal error" not in proc.stderr
    [finding] = [f for r in json.loads(proc.stdout)["results"] for f in r["findings"]
                 if f["code"] == "KV702"]
    assert "characters)" in finding["message"] and len(finding["message"]) < 400


def _compose(model: str, extra: str = "") -> str:
    return ("services:\n  vllm:\n    image: vllm/vllm-openai:v0.8.5\n    gpus: all\n"
            f"    command: [\"--model\", \"{model}\"{extra}]\n")


def test_lint_gpu_one_bad_config_is_one_kv900(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    config_file(tmp_path / "bad", MIXTRAL, num_experts_per_tok=10)
    (tmp_path / "good").mkdir()
    config_file(tmp_path / "good", LLAMA)
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "a-bad.yaml").write_text(_compose("bad/mixtral"))
    (deploy / "b-good.yaml").write_text(_compose("good/llama"))
    proc = kvlint("lint", "deploy", "--isolated", "--offline", "--gpu", "H100-80GB",
                  "--model-map", f"bad/mixtral={tmp_path / 'bad'}",
                  "--model-map", f"good/llama={tmp_path / 'good'}",
                  "--format", "json", cwd=tmp_path)
    clean(proc)
    results = json.loads(proc.stdout)["results"]
    assert len(results) == 2
    bad, good = sorted(results, key=lambda r: r["target"]["path"])
    assert [f["code"] for f in bad["findings"]] == ["KV900"]
    assert "num_experts_per_tok" in bad["findings"][0]["message"]
    assert good["capacity"] is not None and good["geometry"]["num_layers"] == 32


def test_manifest_pipeline_degree_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    config_file(tmp_path / "cfg", LLAMA)
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    for name, pp in (("huge", 10**9), ("more", 64), ("fine", 2)):
        (deploy / f"{name}.yaml").write_text(
            _compose("org/llama", f', "--pipeline-parallel-size", "{pp}"'))
    proc = kvlint("lint", "deploy", "--isolated", "--offline", "--model-map",
                  f"org/llama={tmp_path / 'cfg'}", "--format", "json", cwd=tmp_path)
    clean(proc)
    by_file = {Path(r["target"]["path"]).stem: r for r in json.loads(proc.stdout)["results"]}
    assert "pp must be at most 10,000" in by_file["huge"]["findings"][0]["message"]
    assert "pp=64 is more pipeline stages than the model's 32 layers" in \
        by_file["more"]["findings"][0]["message"]
    assert by_file["fine"]["geometry"]["num_layers"] == 32


@pytest.mark.parametrize("flags", [
    ', "--max-model-len", "' + "9" * 400 + '"',
    ', "--max-num-seqs", "' + "9" * 400 + '"',
    ', "--data-parallel-size", "100000"',
    ', "--tensor-parallel-size", "' + "9" * 400 + '"',
], ids=["max-model-len", "max-num-seqs", "dp", "tp"])
def test_manifest_absurd_plan_values_do_not_crash_lint_gpu(tmp_path: Path, flags: str) -> None:
    (tmp_path / "cfg").mkdir()
    config_file(tmp_path / "cfg", LLAMA)
    manifest = tmp_path / "compose.yaml"
    manifest.write_text(_compose("org/llama", flags))
    proc = kvlint("lint", str(manifest), "--isolated", "--offline", "--gpu", "H100-80GB",
                  "--model-map", f"org/llama={tmp_path / 'cfg'}", "--format", "json",
                  cwd=tmp_path)
    clean(proc)
    assert len(json.loads(proc.stdout)["results"]) == 1


@pytest.mark.parametrize("expression", [
    "1" + "+1" * 30_000,
    "-" * 30_000 + "1",
    "(" * 3_000 + "1" + ")" * 3_000,
    "*".join(["99999"] * 5_000),
], ids=["30k terms", "30k unary minus", "3k parentheses", "5k products"])
def test_shell_arithmetic_is_bounded(tmp_path: Path, expression: str) -> None:
    (tmp_path / "cfg").mkdir()
    config_file(tmp_path / "cfg", LLAMA)
    manifest = tmp_path / "compose.yaml"
    manifest.write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.8.5\n    entrypoint: [\"sh\", "
        f"\"-c\", \"vllm serve org/llama --tensor-parallel-size $(({expression}))\"]\n")
    proc = kvlint("lint", str(manifest), "--isolated", "--offline", "--model-map",
                  f"org/llama={tmp_path / 'cfg'}", "--format", "json", cwd=tmp_path)
    clean(proc)
    [result] = json.loads(proc.stdout)["results"]
    assert result["geometry"]["num_layers"] == 32


# ------------------------------------------------------------------------------- settings
SETTINGS: list[tuple[str, bytes, tuple[str, ...]]] = [
    ("invalid UTF-8", b"tp = 2\n\xff\xfe = 1\n", ("not UTF-8 text (byte 7)",)),
    ("nested 5,000 levels", b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
     ("nested too deeply",)),
    ("inline tables 5,000 deep", b"a = " + b"{b = " * 5000 + b"}" * 5000 + b"\n",
     ("nested too deeply",)),
    ("overhead inf", b"overhead = inf\n", ("'overhead'", "got inf")),
    ("overhead nan", b"overhead = nan\n", ("'overhead'", "got nan")),
    ("overhead negative", b"overhead = -100.0\n", ("'overhead'", "got -100.0")),
    ("tp true", b"tp = true\n", ("'tp': expected a number, got true",)),
    ("tp float", b"tp = 2.0\n", ("'tp': expected an integer, got 2.0",)),
    ("pp 1e9", b"pp = 1000000000\n", ("'pp' must be at most 10,000",)),
    ("context huge", b"context = 99999999999999999999999999999999999\n",
     ("'context' must be at most 4,294,967,296, got a larger number",)),
    ("utilization nan", b"gpu-memory-utilization = nan\n", ("'gpu-memory-utilization'",)),
    ("per-file-ignores unknown code", b"[per-file-ignores]\n\"deploy/*.yaml\" = [\"KV999\"]\n",
     ("per-file-ignores 'deploy/*.yaml'", "'KV999'")),
    ("select unknown code", b"select = [\"KV998\"]\n", ("select", "'KV998'")),
    ("severity unknown code", b"[severity]\nKV997 = \"info\"\n", ("severity", "'KV997'")),
    ("tool = 5", b"tool = 5\n", ("unknown key 'tool'",)),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in SETTINGS],
                         ids=[i for i, _, _ in SETTINGS])
def test_hostile_settings_files(tmp_path: Path, text: bytes, expected: tuple[str, ...]) -> None:
    settings = tmp_path / ".kvlint.toml"
    settings.write_bytes(text)
    one_line_error(kvlint("check", str(CONFIGS / f"{LLAMA}.json"), cwd=tmp_path),
                   str(settings), *expected)


def test_hostile_settings_named_by_config_option(tmp_path: Path) -> None:
    settings = tmp_path / "ci.toml"
    settings.write_text("overhead = nan\n")
    one_line_error(kvlint("check", str(CONFIGS / f"{LLAMA}.json"), "--config", str(settings),
                          cwd=tmp_path), f"{settings}: 'overhead'", "got nan")


def test_pyproject_with_a_scalar_tool_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("tool = 5\n")
    model = str(CONFIGS / f"{LLAMA}.json")
    proc = kvlint("check", model, cwd=tmp_path)  # no [tool.kvlint]: defaults
    clean(proc)
    assert proc.returncode == 0
    one_line_error(kvlint("check", model, "--config", "pyproject.toml", cwd=tmp_path),
                   "has no [tool.kvlint] table")


# --------------------------------------------------------------------------- command line
CLI: list[tuple[list[str], str]] = [
    (["--tp", "0"], "kvlint: error: --tp: 0 is not in the range 1<=x<=10000"),
    (["--pp", "1000000000"], "kvlint: error: --pp: 1000000000 is not in the range"),
    (["--fail-on", "bogus"], "kvlint: error: --fail-on: 'bogus' is not one of"),
    (["-o", "."], "kvlint: error: --output: "),
    (["--overhead", "inf"], "kvlint: error: --overhead: inf is not in the range"),
    (["--overhead", "nan"], "kvlint: error: --overhead: 'nan' is not a finite number"),
    (["--gpu-memory-utilization", "nan"], "kvlint: error: --gpu-memory-utilization: 'nan'"),
    (["--context", "1" + "0" * 30], "kvlint: error: --context: "),
    (["--bogus"], "kvlint: error: No such option '--bogus'"),
]


@pytest.mark.parametrize(("args", "expected"), CLI, ids=[" ".join(a)[:30] for a, _ in CLI])
def test_usage_errors_are_one_line(tmp_path: Path, args: list[str], expected: str) -> None:
    proc = kvlint("check", str(CONFIGS / f"{LLAMA}.json"), "--isolated", *args, cwd=tmp_path)
    assert one_line_error(proc).startswith(expected)


@pytest.mark.parametrize("args", [["nosuch"], ["--bogus"], ["check"],
                                  ["compare", str(CONFIGS / f"{LLAMA}.json"), "--pp", "0"],
                                  ["lint", "--fail-on", "x", "."]])
def test_group_and_command_usage_errors_are_one_line(tmp_path: Path, args: list[str]) -> None:
    one_line_error(kvlint(*args, cwd=tmp_path))


def test_pp_above_the_layer_count(tmp_path: Path) -> None:
    proc = kvlint("check", str(CONFIGS / f"{LLAMA}.json"), "--isolated", "--pp", "64",
                  cwd=tmp_path)
    one_line_error(proc, "pp=64 is more pipeline stages than the model's 32 layers")


def test_bare_kvlint_still_prints_help(tmp_path: Path) -> None:
    proc = kvlint(cwd=tmp_path)
    assert "Usage:" in proc.stdout + proc.stderr and "Commands:" in proc.stdout + proc.stderr


@pytest.mark.parametrize("value", [[], {}, ["deepseek_v4"], 7])
def test_a_model_type_that_is_no_string_is_no_internal_error(tmp_path: Path,
                                                             value: object) -> None:
    """Found by the property suite: ``model_type: []`` reached a family refiner's set lookup
    (unhashable) as an internal error."""
    from click.testing import CliRunner

    from kvlint.cli import main

    config = json.loads((Path(__file__).parent.parent / "fixtures" / "configs" /
                         "01-ai--Yi-34B.json").read_text(encoding="utf-8"))
    config["model_type"] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(path), "--no-plugins", "--isolated"])
    assert result.exit_code in (0, 1, 2)
    assert "internal error" not in result.stderr
