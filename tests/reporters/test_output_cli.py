"""The human formats through the command line: text and concise, on a terminal (a real
pseudo-terminal) and into a pipe, with COLUMNS, NO_COLOR and FORCE_COLOR; --statistics,
-q, -v, --show-settings; findings in file order, each once; infos counted in one line."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS, ROOT

CASES = ROOT / "fixtures" / "cases"
PHI3 = str(CASES / "vllm-phi3-medium-tp8.yaml")
MAP = ["--model-map", f"microsoft/Phi-3-medium-4k-instruct="
                      f"{CONFIGS / 'microsoft--Phi-3-medium-4k-instruct.json'}",
       "--model-map", f"deepseek-ai/DeepSeek-V3={CONFIGS / 'deepseek-ai--DeepSeek-V3.json'}",
       "--model-map", f"meta-llama/Llama-3.1-8B-Instruct="
                      f"{CONFIGS / 'meta-llama--Meta-Llama-3.1-8B.json'}"]
DSV3 = str(CONFIGS / "deepseek-ai--DeepSeek-V3.json")
DSV3_TP8 = ["check", DSV3, "--tp", "8", "--no-plugins", "--isolated"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CONCISE = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<col>\d+): (?P<code>KV\d{3}) (?P<msg>.+)$")


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


def run(*args: str, **env: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def on_tty(*args: str, **env: str) -> str:
    """``kvlint ARGS`` with stdout on a pseudo-terminal (as an interactive shell runs it)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "kvlint", *args], stdout=slave,
                            stderr=subprocess.DEVNULL, env={**os.environ, **env}, cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=120) in (0, 1)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def phi3_json() -> dict[str, Any]:
    result = run("lint", PHI3, *MAP, "--no-plugins", "--format", "json")
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# --- concise --------------------------------------------------------------------------------
def test_concise_is_one_line_per_finding_in_file_order() -> None:
    result = run("lint", str(CASES), *MAP, "--no-plugins", "--format", "concise", "--verbose")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    found = [m for line in lines if (m := CONCISE.match(line))]
    assert [(Path(m["path"]).name, int(m["line"]), int(m["col"]), m["code"]) for m in found] == [
        ("billion-laughs.yaml", 6, 1, "KV903"),
        ("invalid.yaml", 5, 2, "KV903"),  # the key YAML stopped at
        ("sglang-deepseek-tp8-old.yaml", 4, 5, "KV301"),
        ("tgi-llama31-numshard16.yaml", 16, 15, "KV202"),
        ("vllm-phi3-medium-tp8.yaml", 11, 18, "KV303"),
        ("vllm-phi3-medium-tp8.yaml", 14, 15, "KV202"),
        ("vllm-phi3-medium-tp8.yaml", 20, 15, "KV206"),
    ]
    # the message is the JSON's, on the line (nothing wrapped, nothing else per finding)
    messages = {(f["line"], f["code"]): f["message"]
                for r in phi3_json()["results"] for f in r["findings"]}
    assert found[5]["msg"] == messages[(14, "KV202")]
    assert lines[len(found):] == ["6 errors · 1 info · exit 1 (fail-on: error)"]


def test_concise_quiet_prints_findings_only() -> None:
    result = run("lint", PHI3, *MAP, "--no-plugins", "--format", "concise", "-q")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [CONCISE.match(line)["code"] for line in lines] == ["KV202", "KV206"]  # type: ignore[index]


def test_concise_without_a_file_uses_the_reference() -> None:
    result = run(*DSV3_TP8, "--format", "concise")
    assert result.stdout.splitlines()[0].startswith(f"{DSV3}:1:1: KV204 The MLA latent is")


def test_concise_is_the_default_under_pre_commit() -> None:
    out = run("lint", PHI3, *MAP, "--no-plugins", PRE_COMMIT="1").stdout
    assert out.startswith(f"{PHI3}:14:15: KV202 vLLM 0.8.5 refuses tp=8")
    # GitHub Actions keeps its annotations; an explicit --format wins over both
    assert run("lint", PHI3, *MAP, "--no-plugins", PRE_COMMIT="1",
               GITHUB_ACTIONS="true").stdout.startswith("::error file=")
    assert run("lint", PHI3, *MAP, "--no-plugins", "--format", "text",
               PRE_COMMIT="1").stdout.startswith(f"{PHI3}:14:15: microsoft/Phi-3")


def test_pre_commit_hook_file_names_the_default() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "PRE_COMMIT=1" in hooks and "concise" in hooks


# --- text: order, wrapping ------------------------------------------------------------------
def test_text_is_in_file_order() -> None:
    out = run("lint", str(CASES), *MAP, "--no-plugins", "--verbose").stdout
    heads = [line.split(": ")[0] for line in out.splitlines() if re.match(r"^/\S+:\d+:\d+:", line)]
    keys = [(Path(h.split(":")[0]).name, int(h.split(":")[1]), int(h.split(":")[2]))
            for h in heads]
    assert keys == sorted(keys) and len(keys) == 7


def test_text_piped_never_wraps_whatever_columns_says() -> None:
    messages = [f["message"] for r in phi3_json()["results"] for f in r["findings"]]
    for columns in ("40", "80", "300"):
        out = run("lint", PHI3, *MAP, "--no-plugins", "--verbose", COLUMNS=columns).stdout
        for message in messages:
            assert f"\n  {message}\n" in out
    assert "\x1b" not in out


def test_text_on_a_terminal_wraps_between_words_at_its_width() -> None:
    dsv3 = json.loads(run(*DSV3_TP8, "--format", "json").stdout)
    message = dsv3["results"][0]["findings"][0]["message"]
    words = [w for w in message.split() if "-" in w]  # flags, model ids
    assert {"--enable-dp-attention;", "--data-parallel-size", "--enable-expert-parallel)"} <= \
        set(words)
    for columns in (50, 72, 100):
        out = ANSI.sub("", on_tty(*DSV3_TP8, "--gpu", "H200", COLUMNS=str(columns)))
        lines = out.splitlines()
        # prose and tables wrap; a heading (a model's, a finding's) is one line, as a path
        # or an id in it cannot be split
        assert max(len(line) for line in lines if line.startswith("  ")) <= columns
        assert len(lines) > 20
        body = [line.strip() for line in lines[lines.index(next(
            line for line in lines if "KV204" in line)) + 1:] if line.startswith("  ")]
        assert " ".join(body) == message  # the whole message, split only at spaces
        text = "\n".join(lines)
        for word in words:
            assert word in text  # never split inside a flag
        assert not any(line.rstrip().endswith("-") for line in lines)
    wide = ANSI.sub("", on_tty(*DSV3_TP8, COLUMNS="1000"))
    assert f"\n  {message}\n" in wide  # a wide terminal holds the paragraph on one line


def test_table_values_wrap_on_a_terminal_too() -> None:
    out = ANSI.sub("", on_tty(*DSV3_TP8, "--gpu", "H200", COLUMNS="60"))
    decode = [line for line in out.splitlines() if line.startswith("  decode")]
    assert decode and all(len(line) <= 60 for line in out.splitlines() if line[:1] == " ")
    piped = run(*DSV3_TP8, "--gpu", "H200", COLUMNS="60").stdout
    [line] = [line for line in piped.splitlines() if line.startswith("  decode")]
    assert "uniform routing)" in line  # one line in a pipe


# --- colour ---------------------------------------------------------------------------------
def test_colour_on_a_terminal_and_not_in_a_pipe() -> None:
    tty = on_tty(*DSV3_TP8, COLUMNS="100")
    assert "\x1b[33m\x1b[1mKV204 warning\x1b[0m" in tty  # warnings yellow and bold
    assert "\x1b[1mfixtures/configs/deepseek-ai--DeepSeek-V3.json" not in tty  # (absolute)
    assert "\x1b[0m" in tty
    assert "\x1b" not in run(*DSV3_TP8).stdout


def test_no_color_turns_it_off_on_a_terminal() -> None:
    for value in ("1", "true", "0"):  # any non-empty value, "0" too (no-color.org)
        assert "\x1b" not in on_tty(*DSV3_TP8, COLUMNS="100", NO_COLOR=value)
    assert "\x1b[" in on_tty(*DSV3_TP8, COLUMNS="100", NO_COLOR="")  # empty: not set


def test_force_color_colours_a_pipe() -> None:
    out = run("lint", PHI3, *MAP, "--no-plugins", FORCE_COLOR="1").stdout
    assert "\x1b[31m\x1b[1mKV202 error\x1b[0m" in out  # errors red
    assert f"\x1b[1m{PHI3}\x1b[0m\x1b[36m:\x1b[0m14\x1b[36m:\x1b[0m15" in out
    assert "\n  vLLM 0.8.5 refuses tp=8" in out  # still not wrapped: a pipe
    assert "\x1b" not in run("lint", PHI3, *MAP, "--no-plugins", FORCE_COLOR="").stdout
    # FORCE_COLOR wins over NO_COLOR, as in ruff
    assert "\x1b[" in run("lint", PHI3, *MAP, "--no-plugins", FORCE_COLOR="1",
                          NO_COLOR="1").stdout


def test_concise_colour_follows_the_same_switches(tmp_path: Path) -> None:
    args = ("lint", PHI3, *MAP, "--no-plugins", "--format", "concise", "-q")
    assert "\x1b" not in run(*args).stdout
    forced = run(*args, FORCE_COLOR="1").stdout
    assert "\x1b[31m\x1b[1mKV202\x1b[0m vLLM 0.8.5" in forced
    assert ANSI.sub("", forced) == run(*args).stdout
    tty = on_tty(*args, COLUMNS="40")
    assert "\x1b[31m\x1b[1mKV202" in tty
    assert ANSI.sub("", tty) == run(*args).stdout  # concise never wraps, even on a terminal
    assert "\x1b" not in on_tty(*args, NO_COLOR="1")
    # a report written to a file is never coloured
    report = tmp_path / "r.txt"
    run(*args, "-o", str(report), FORCE_COLOR="1")
    assert report.read_text() == run(*args).stdout


# --- folding: duplicates, infos -------------------------------------------------------------
TINYLLAMA = str(ROOT / "fixtures" / "manifests" / "tensorrt-llm" /
                "trtllm-serve-disagg-config-tinyllama.yaml")
TINY_MAP = ["--model-map", f"TinyLlama/TinyLlama-1.1B-Chat-v1.0="
                           f"{CONFIGS / 'meta-llama--Llama-3.2-1B-Instruct.json'}"]


def test_the_same_finding_twice_on_a_line_is_printed_once() -> None:
    """Two servers (context and generation) of one config file: the one KV304 at the model's
    line is one line of text and concise; JSON keeps it in each served model's result."""
    args = ("lint", TINYLLAMA, *TINY_MAP, "--no-plugins", "--isolated", "--select", "KV304")
    data = json.loads(run(*args, "--format", "json").stdout)
    assert [f["code"] for r in data["results"] for f in r["findings"]] == ["KV304", "KV304"]
    concise = run(*args, "--format", "concise").stdout.splitlines()
    assert [line.split(": ")[0] for line in concise[:-1]] == [f"{TINYLLAMA}:3:1"]
    text = run(*args).stdout
    assert text.count("KV304 info") == 1
    assert "1 info · exit 0" in text
    assert run(*args, "--statistics").stdout == "1\tKV304\tengine-version-unpinned\n"


def test_infos_are_counted_in_one_line_unless_shown() -> None:
    base = ("lint", PHI3, *MAP, "--no-plugins")
    hidden = "1 info hidden (KV303 x1); use --verbose or --select to show"
    for fmt in ("text", "concise"):
        out = run(*base, "--format", fmt).stdout
        assert hidden in out and "KV303" not in out.replace(hidden, "")
        for shown in (("--verbose",), ("-v",), ("--select", "KV202,KV303"),
                      ("--fail-on", "info"),
                      ("--extend-select", "KV3"), ("--select", "sliding-window-full-allocation")):
            out = run(*base, "--format", fmt, *shown).stdout
            assert "hidden" not in out and ":11:18: " in out, shown
    # machine formats carry every info
    assert any(f["code"] == "KV303" for r in phi3_json()["results"] for f in r["findings"])


# --- statistics, quiet, show-settings -------------------------------------------------------
def test_statistics_counts_per_code() -> None:
    result = run("lint", str(CASES), *MAP, "--no-plugins", "--statistics")
    assert result.exit_code == 1  # the exit code is the run's
    assert result.stdout == ("2\tKV202\ttp-indivisible-kv-heads\n"
                             "2\tKV903\tmanifest-unparsable\n"
                             "1\tKV206\tgpu-count-mismatch\n"
                             "1\tKV301\tmla-without-latent-cache\n"
                             "1\tKV303\tsliding-window-full-allocation\n")
    assert run(*DSV3_TP8, "--statistics").stdout == "1\tKV204\tmla-latent-replicated\n"
    forced = run(*DSV3_TP8, "--statistics", FORCE_COLOR="1").stdout
    assert forced == "\x1b[1m1\x1b[0m\t\x1b[33m\x1b[1mKV204\x1b[0m\tmla-latent-replicated\n"


def test_statistics_aligns_counts_and_codes(tmp_path: Path) -> None:
    pad = run("lint", str(ROOT / "fixtures" / "manifests"), "--offline", "--no-plugins",
              "--isolated", "--statistics").stdout.splitlines()
    counts = [line.split("\t")[0] for line in pad]
    assert len({len(c) for c in counts}) == 1 and counts[0].strip().isdigit()
    assert [int(c) for c in counts] == sorted((int(c) for c in counts), reverse=True)


def test_quiet_text_prints_findings_only() -> None:
    out = run(*DSV3_TP8, "-q").stdout
    assert out.startswith(f"{DSV3}  KV204 warning  mla-latent-replicated\n  The MLA latent")
    assert "  attention  " not in out and "exit" not in out
    assert out.count("\n\n") == 0
    assert run(*DSV3_TP8, "--select", "KV1", "-q").stdout == ""


def test_show_settings(tmp_path: Path) -> None:
    settings = tmp_path / "kvlint.toml"
    settings.write_text('tp = 4\nengine = "sglang"\nignore = ["KV3"]\nfail-on = "warning"\n'
                        '[models]\n"/data/" = "org/model"\n')
    manifest = tmp_path / "m.yaml"
    manifest.write_text("model: x\n")
    result = run("lint", str(manifest), "--show-settings", "--select", "KV2", "--no-plugins")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == f"Settings file: {settings}"
    assert {"tp = 4", 'engine = "sglang"', "pp = (unset)", 'models = {"/data/": "org/model"}',
            'ignore = ["KV3"]', 'fail-on = "warning"'} <= set(lines)
    [rules] = [line for line in lines if line.startswith("rules = ")]
    codes = json.loads(rules.split(" = ", 1)[1].split("  #")[0])
    assert codes and all(code.startswith("KV2") for code in codes)
    isolated = run("check", DSV3, "--show-settings", "--isolated", "--fail-on", "info").stdout
    assert isolated.startswith("Settings file: (none: defaults)\n")
    assert 'fail-on = "info"' in isolated


# --- columns --------------------------------------------------------------------------------
def test_every_manifest_finding_points_at_a_flag_or_key() -> None:
    result = run("lint", str(ROOT / "fixtures" / "manifests"), "--offline", "--no-plugins",
                 "--isolated", "--format", "json")
    findings = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    assert len(findings) >= 15
    for f in findings:
        line = Path(f["path"]).read_text(encoding="utf-8").splitlines()[f["line"] - 1]
        col = f["column"]
        assert col is not None, f
        assert line[col - 1] not in " \t", (f, line)
        assert col == 1 or line[col - 2] in " \t[\"'-=:,{", (f, line)
    where = {(Path(f["path"]).name, f["line"]): f["column"] for f in findings}
    # a served model's line: its key or flag, past the indentation and YAML dashes
    assert where[("llamacpp-rpc-llama3-8b-q5km.yaml", 19)] == 11           # command: [...]
    assert where[("k8s-prefill-deploy-envvar-bash.yaml", 141)] == 17        # --model ${MODEL_ID}
    assert where[("helm-values-tgi-chart-model-only-in-comments.yaml", 5)] == 3  # repository:


# --- the weights line -----------------------------------------------------------------------
def test_fp8_weights_are_named_once() -> None:
    out = run(*DSV3_TP8, "--gpu", "H200").stdout
    assert "(estimate: 671,026,404,352 parameters x fp8)\n" in out
    assert "fp8 (fp8)" not in out


def test_weights_line_when_only_the_config_is_cached(fake_hub: Any) -> None:
    """`check` without --gpu caches config.json only; offline with --gpu the checkpoint
    index is not there: the estimate says so in a few words, not the Hub error."""
    index = json.dumps({"metadata": {"total_size": 700_000_000_000}, "weight_map": {}})
    fake_hub.add_repo("org/fp8-model", {"config.json": Path(DSV3).read_bytes(),
                                        "model.safetensors.index.json": index.encode()})
    args = ("check", "org/fp8-model", "--tp", "8", "--no-plugins", "--isolated")
    assert run(*args).exit_code == 0
    fake_hub.close()
    offline = run(*args, "--gpu", "H200", "--offline")
    assert offline.exit_code == 0, offline.output
    [line] = [x for x in offline.stdout.splitlines() if x.startswith("  weights")]
    assert line == ("  weights       ~79.3 GiB per GPU (estimate: 671,026,404,352 parameters x "
                    "fp8; checkpoint not cached)")


# --- hostile text stays inert in colour -----------------------------------------------------
def test_colour_never_lets_a_manifest_write_escapes(tmp_path: Path) -> None:
    """Coloured output carries kvlint's own SGR codes only: an ESC, BEL or CR a manifest
    holds is printed as its visible escape, in text and concise alike."""
    manifest = tmp_path / "evil\x1b[2J.yaml"
    manifest.write_text('services:\n  llm:\n    image: vllm/vllm-openai:v0.8.5\n'
                        '    command: ["--model", "/x/\\e]0;pwned\\a\\r\\e[31mfake"]\n',
                        encoding="utf-8")
    for fmt in ("text", "concise"):
        for args in ((), ("-q",), ("--verbose",)):
            out = run("lint", str(tmp_path), "--no-plugins", "--isolated", "--format", fmt,
                      *args, FORCE_COLOR="1").stdout
            assert "KV902" in out
            assert "\x07" not in out and "\r" not in out
            assert "\x1b[" in out and "\x1b" not in ANSI.sub("", out)
            assert "\\x1b]0;pwned\\x07\\r\\x1b[31mfake" in out
            assert "evil\\x1b[2J.yaml" in out
