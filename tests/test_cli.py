"""The command line: output, exit codes, selection, and one-line errors (DESIGN §6, §7)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from kvlint.engines import load_engines
from kvlint.report import Report
from tests.helpers import CONFIGS
from tests.hub_server import FakeHub

DSV25 = str(CONFIGS / "deepseek-ai--DeepSeek-V2.5.json")
LLAMA31 = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
PHI4 = str(CONFIGS / "microsoft--phi-4.json")
LLAMA2 = str(CONFIGS / "meta-llama--Llama-2-7b-hf.json")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["check", *args, "--no-plugins"])


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def assert_one_line_error(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kvlint: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def codes(data: dict[str, Any], index: int = 0) -> list[str]:
    return [f["code"] for f in data["results"][index]["findings"]]


# --- text output ----------------------------------------------------------------------------


def test_text_output_deepseek_tp16() -> None:
    result = run(DSV25, "--tp", "16")
    assert result.exit_code == 0
    out = result.stdout
    assert "MLA latent 512 + rope 64 per token per layer" in out
    assert "69,120 B (67.5 KiB)" in out
    assert "69,120 B at tp=16" in out
    assert "16x · the group holds 1,105,920 B/token" in out
    assert "8,192 tokens → 540 MiB" in out
    assert "KV204 warning  mla-latent-replicated" in out
    assert "1,036,800 B/token are copies (7.9 GiB per 8K-token sequence" in out
    assert out.rstrip().endswith("1 warning · exit 0 (fail-on: error)")


def test_text_output_kv201_message_numbers() -> None:
    out = run(LLAMA31, "--tp", "16").stdout
    assert ("8 KV heads over tp=16: each head is stored on 2 GPUs; the group holds 262,144 "
            "B/token for 131,072 B of KV, 131,072 of them duplicates (1.0 GiB per 8K-token "
            "sequence; replication 2x)") in " ".join(out.split())


def test_text_output_layers_with_windows_and_none() -> None:
    out = run(str(CONFIGS / "openai--gpt-oss-20b.json"),
              str(CONFIGS / "ai21labs--AI21-Jamba-1.5-Mini.json")).stdout
    assert "24 of 24 hold KV · 12 sliding (window 128)" in out
    assert "4 of 32 hold KV · 28 recurrent" in out


def test_text_output_says_when_mha_was_assumed() -> None:
    out = run(str(CONFIGS / "baichuan-inc--Baichuan2-7B-Chat.json")).stdout
    assert "assumed MHA (32 KV heads)" in out
    assert "(assumed: the config has no KV-head field)" in " ".join(out.split())


# --- exit codes and selection ---------------------------------------------------------------


@pytest.mark.parametrize(("args", "code"), [
    ((PHI4, "--tp", "8"), 1),  # KV202 error
    ((PHI4, "--tp", "8", "--fail-on", "never"), 0),
    ((DSV25, "--tp", "16"), 0),  # KV204 is a warning
    ((DSV25, "--tp", "16", "--fail-on", "warning"), 1),
    ((LLAMA31, "--fail-on", "info"), 0),
    ((PHI4, "--tp", "8", "--ignore", "KV202"), 0),
])
def test_exit_codes(args: tuple[str, ...], code: int) -> None:
    assert run(*args).exit_code == code


def test_select_and_ignore_by_code_prefix_and_name() -> None:
    assert codes(as_json(LLAMA2, "--tp", "16")) == ["KV101"]
    assert codes(as_json(LLAMA31, "--tp", "16")) == ["KV201"]
    assert codes(as_json(PHI4, "--tp", "16", "--select", "KV2")) == ["KV202", "KV203"]
    assert codes(as_json(PHI4, "--tp", "16", "--select", "tp-indivisible-kv-heads")) == ["KV202"]
    assert codes(as_json(PHI4, "--tp", "16", "--ignore", "KV203,kv202")) == []


def test_unknown_rule_in_select_is_a_usage_error() -> None:
    assert_one_line_error(run(LLAMA31, "--select", "KV999"), "unknown rule or prefix 'KV999'")


def test_several_models_one_result_each() -> None:
    data = as_json(LLAMA31, DSV25, PHI4, "--tp", "8")
    assert [r["geometry"]["attention"] for r in data["results"]] == ["gqa", "mla", "gqa"]
    assert data["summary"] == {"error": 1, "warning": 1, "info": 0}


def test_model_directory(tmp_path: Path) -> None:
    shutil.copy(LLAMA31, tmp_path / "config.json")
    data = as_json(str(tmp_path))
    assert data["results"][0]["kv"]["bytes_per_token"] == 131_072
    assert data["results"][0]["target"]["path"] == str(tmp_path / "config.json")


def test_output_file(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run(LLAMA31, "--format", "json", "--output", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(out.read_text())["results"][0]["geometry"]["num_kv_heads"] == 8


# --- JSON output ----------------------------------------------------------------------------


def schema() -> dict[str, Any]:
    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_json_output_is_exact_and_valid() -> None:
    data = as_json(DSV25, "--tp", "16", "--context", "4096")
    jsonschema.validate(data, schema())
    assert Report.model_validate(data).model_dump(mode="json", exclude_unset=True) == data
    assert "probe" not in data["results"][0]  # kvlint probe only
    assert data["schema_version"] == 2
    result = data["results"][0]
    assert result["target"] == {"kind": "model", "ref": DSV25, "revision": None, "path": DSV25,
                                "line": None}
    newest = str(load_engines()["vllm"].latest)
    assert result["serving"] == {"engine": "vllm", "engine_version": newest, "tp": 16, "pp": 1,
                                 "dp": 1, "dp_attention": False, "kv_cache_dtype": "auto",
                                 "gpu": None, "max_model_len": None, "max_num_seqs": None}
    assert result["geometry"] == {
        "model_type": "deepseek_v2", "attention": "mla", "num_layers": 60, "num_kv_layers": 60,
        "num_sliding_layers": 0, "sliding_window": None, "num_attention_heads": 128,
        "num_kv_heads": 128, "head_dim": 192, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "dtype": "bfloat16", "architecture": "DeepseekV2ForCausalLM",
        "num_shared_kv_layers": 0, "num_state_layers": 0,
        "layer_groups": [{"count": 60, "kind": "full", "num_kv_heads": 128, "k_head_dim": 192,
                          "v_head_dim": 128, "window": None, "kv_lora_rank": 512,
                          "kv_shared": False, "entry_bytes": None}],
        "notes": []}
    assert result["kv"] == {
        "dtype": "bfloat16", "bytes_per_element": 2.0, "bytes_per_token": 69_120,
        "bytes_per_token_per_gpu": 69_120, "kv_heads_per_gpu": None,
        "replication_factor": 16.0, "bytes_per_token_cluster": 16 * 69_120, "context": 4096,
        "bytes_per_sequence": 4096 * 69_120, "state_bytes_per_sequence_per_gpu": 0}
    assert result["capacity"] is None
    [finding] = result["findings"]
    assert (finding["code"], finding["name"], finding["severity"]) == \
        ("KV204", "mla-latent-replicated", "warning")
    assert finding["data"]["duplicate_bytes_per_token"] == 1_036_800


def test_json_sliding_windows_and_fp8() -> None:
    data = as_json(str(CONFIGS / "openai--gpt-oss-20b.json"), "--kv-cache-dtype", "fp8")
    jsonschema.validate(data, schema())
    g, k = data["results"][0]["geometry"], data["results"][0]["kv"]
    assert (g["num_sliding_layers"], g["sliding_window"], g["dtype"]) == (12, 128, "unspecified")
    assert (k["dtype"], k["bytes_per_element"], k["bytes_per_token"]) == ("fp8", 1.0, 24_576)
    assert k["bytes_per_sequence"] == 204_472_320 // 2


def test_json_fp8_ds_mla() -> None:
    k = as_json(str(CONFIGS / "deepseek-ai--DeepSeek-V3.json"),
                "--kv-cache-dtype", "fp8_ds_mla")["results"][0]["kv"]
    assert k["bytes_per_token"] == 61 * 656
    assert k["bytes_per_element"] == pytest.approx(656 / 576)


def test_json_dp_attention() -> None:
    data = as_json(str(CONFIGS / "deepseek-ai--DeepSeek-V3.json"), "--tp", "8", "--dp", "8",
                   "--dp-attention")
    assert data["results"][0]["kv"]["replication_factor"] == 1.0
    assert codes(data) == []  # KV204 is silent: attention TP is 1


def test_json_refused_tp_has_null_kv() -> None:
    data = as_json(PHI4, "--tp", "8")
    jsonschema.validate(data, schema())
    assert data["results"][0]["kv"] is None
    assert codes(data) == ["KV202"]


def test_json_output_is_deterministic() -> None:
    assert run(LLAMA31, DSV25, "--format", "json").stdout == \
        run(LLAMA31, DSV25, "--format", "json").stdout


# --- rules, rule, schema --------------------------------------------------------------------


def test_rules_lists_every_builtin() -> None:
    result = CliRunner().invoke(main, ["rules", "--format", "json", "--no-plugins"])
    rows = json.loads(result.stdout)
    assert [r["code"] for r in rows] == [
        "KV101", "KV102", "KV201", "KV202", "KV203", "KV204", "KV205", "KV206", "KV207",
        "KV301", "KV302", "KV303", "KV304", "KV305", "KV306", "KV307", "KV308", "KV401", "KV402",
        "KV403", "KV404", "KV501", "KV502", "KV503", "KV504", "KV601", "KV602", "KV701", "KV702",
        "KV703", "KV704", "KV705", "KV706", "KV707", "KV708", "KV709", "KV900", "KV901", "KV902",
        "KV903", "KV904"]
    text = CliRunner().invoke(main, ["rules", "--no-plugins"]).stdout
    assert "KV204   mla-latent-replicated" in text


@pytest.mark.parametrize("key", ["KV201", "kv201", "tp-replicates-kv-heads"])
def test_rule_docs(key: str) -> None:
    result = CliRunner().invoke(main, ["rule", key, "--no-plugins"])
    assert result.exit_code == 0
    assert result.stdout.startswith("# KV201 tp-replicates-kv-heads (warning)")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in result.stdout


def test_unknown_rule() -> None:
    assert_one_line_error(CliRunner().invoke(main, ["rule", "KV999", "--no-plugins"]),
                          "unknown rule 'KV999'")


# --- bad input: exit 2, one line, no traceback ----------------------------------------------


def test_invalid_json(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 32,\n "num_attention_heads": }')
    assert_one_line_error(run(str(bad)), str(bad), "invalid JSON at line 2, column 25")


def test_not_a_json_object(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2]")
    assert_one_line_error(run(str(bad)), "expected a JSON object, got list")


def test_directory_without_config(tmp_path: Path) -> None:
    assert_one_line_error(run(str(tmp_path)), "directory has no config.json")


def test_missing_file_that_cannot_be_a_hub_id() -> None:
    assert_one_line_error(run("no/such/config.json"),
                          "no such file or directory, and not a Hugging Face repo id")


def test_impossible_config_is_kv900_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 32,
                               "num_attention_heads": 32, "num_key_value_heads": 48,
                               "hidden_size": 4096}))
    result = run(str(bad), LLAMA31, "--format", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    jsonschema.validate(data, schema())
    first, second = data["results"]
    assert (first["geometry"], first["kv"]) == (None, None)
    assert first["findings"][0]["code"] == "KV900"
    assert first["findings"][0]["data"] == {"field": "num_key_value_heads"}
    assert second["kv"]["bytes_per_token"] == 131_072  # the other model still got its result
    [line] = result.stderr.strip().splitlines()
    assert line == (f"kvlint: error: {bad}: num_key_value_heads (48) exceeds "
                    "num_attention_heads (32)")


def test_wrong_type_is_kv900(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "num_hidden_layers": "32",
                               "num_attention_heads": 32, "hidden_size": 4096}))
    result = run(str(bad))
    assert result.exit_code == 2
    assert "KV900 error  config-unresolved" in result.stdout
    assert "field 'num_hidden_layers' must be an integer, got '32' (str)" in result.stderr


@pytest.mark.parametrize(("args", "fragment"), [
    ((LLAMA31, "--kv-cache-dtype", "fp8_ds_mla"), "fp8_ds_mla needs an MLA model"),
    ((LLAMA31, "--tp", "8", "--dp", "3", "--dp-attention"), "DP attention needs tp divisible"),
    ((LLAMA31, "--revision", "main"), "--revision applies to Hub models"),
    ((LLAMA31, "--format", "yaml"), "unknown format 'yaml'"),
])
def test_usage_errors(args: tuple[str, ...], fragment: str) -> None:
    assert_one_line_error(run(*args), fragment)


def test_click_usage_errors_exit_2() -> None:
    result = run(LLAMA31, "--tp", "0")
    assert result.exit_code == 2
    assert "Traceback" not in result.output


# --- the Hub, on loopback -------------------------------------------------------------------


def test_check_deepseek_v2_from_the_hub(fake_hub: FakeHub) -> None:
    commit = fake_hub.add_repo("deepseek-ai/DeepSeek-V2",
                               {"config.json": Path(DSV25).read_bytes()})
    result = CliRunner().invoke(main, ["check", "deepseek-ai/DeepSeek-V2", "--tp", "16",
                                       "--no-plugins"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith(f"deepseek-ai/DeepSeek-V2 @ {commit} · deepseek_v2 · bfloat16")
    assert "MLA latent 512 + rope 64" in out
    assert "69,120 B (67.5 KiB)" in out and "69,120 B at tp=16" in out
    assert "16x" in out and "KV204 warning  mla-latent-replicated" in out

    data = json.loads(CliRunner().invoke(main, [
        "check", "deepseek-ai/DeepSeek-V2@main", "--tp", "16", "--format", "json", "--offline",
        "--no-plugins"]).stdout)
    assert data["results"][0]["target"]["revision"] == "main"
    assert data["results"][0]["kv"]["bytes_per_token_per_gpu"] == 69_120


def test_gated_repo_says_how_to_authenticate(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("meta-llama/Llama-3.1-8B", {"config.json": b"{}"}, gated=True)
    result = CliRunner().invoke(main, ["check", "meta-llama/Llama-3.1-8B", "--no-plugins"])
    assert_one_line_error(result, "gated", "HF_TOKEN")


def test_hub_revision_not_found(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": Path(LLAMA31).read_bytes()})
    assert_one_line_error(run("org/model", "--revision", "v9"), "'v9'")


def test_hub_repo_without_config(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"README.md": b"hi"})
    assert_one_line_error(run("org/model"), "has no config.json")


def test_hub_invalid_json_names_the_repo(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {"config.json": b"{oops"})
    assert_one_line_error(run("org/model"), "invalid JSON at line 1")


def test_offline_without_cache(fake_hub: FakeHub) -> None:
    assert_one_line_error(run("org/model", "--offline"), "cache")
    assert fake_hub.requests == []


def test_batch_in_text_output() -> None:
    out = run(LLAMA31, "--batch", "4", "--context", "4096").stdout
    assert "4,096 tokens → 512 MiB · batch 4: 2.0 GiB" in out


def test_unreachable_hub_is_one_line(dead_endpoint: str) -> None:
    assert_one_line_error(run("org/model"), f"Could not reach the Hugging Face Hub at "
                          f"{dead_endpoint}", "--offline")


def test_kv205_uneven_pipeline() -> None:
    data = as_json(str(CONFIGS / "deepseek-ai--DeepSeek-V3.json"), "--tp", "8", "--pp", "4",
                   "--select", "KV205")
    [finding] = data["results"][0]["findings"]
    assert finding["message"].startswith("61 layers over pp=4 split 15/15/16/15")
    assert "the fullest stage holds 16 layers and 18,432 B/token per GPU" in finding["message"]
    assert finding["data"] == {"pp": 4, "stages": [15, 15, 16, 15],
                               "bytes_per_token_per_gpu": 16 * 1152}
    refused = as_json(PHI4, "--tp", "8", "--pp", "3", "--select", "KV205")
    assert "B/token per GPU" not in refused["results"][0]["findings"][0]["message"]


def test_github_format_is_the_default_under_github_actions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    out = run(PHI4, "--tp", "8").stdout
    assert out.startswith("::error ") and "title=KV202 tp-indivisible-kv-heads" in out
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    assert not run(PHI4, "--tp", "8").stdout.startswith("::")
