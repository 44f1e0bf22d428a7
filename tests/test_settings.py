"""Settings files: discovery, validation, precedence, per-file ignores, severity overrides."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from kvlint.settings import Settings, find, load
from tests.helpers import CONFIGS, ROOT

CASES = ROOT / "fixtures" / "cases"
PHI = f"microsoft/Phi-3-medium-4k-instruct={CONFIGS / 'microsoft--Phi-3-medium-4k-instruct.json'}"


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def run(cwd: Path, *args: str) -> Result:
    with pytest.MonkeyPatch.context() as m:
        m.chdir(cwd)
        return CliRunner().invoke(main, [*args, "--no-plugins"])


def data(result: Result) -> dict[str, Any]:
    assert result.exit_code in (0, 1), result.output
    value: dict[str, Any] = json.loads(result.stdout)
    return value


def codes(result: Result) -> list[str]:
    return sorted(f["code"] for r in data(result)["results"] for f in r["findings"])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "deploy" / "legacy").mkdir(parents=True)
    shutil.copy(CASES / "vllm-phi3-medium-tp8.yaml", root / "deploy" / "phi.yaml")
    shutil.copy(CASES / "vllm-phi3-medium-tp8.yaml", root / "deploy" / "legacy" / "phi.yaml")
    shutil.copy(CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json", root / "phi.json")
    return root


def test_defaults_without_a_file(repo: Path) -> None:
    assert find([repo / "deploy"]) is None or not str(find([repo / "deploy"])).startswith(
        str(repo))
    assert load([repo], isolated=True).settings == Settings()


def test_pyproject_tool_kvlint_is_found_from_the_linted_files(repo: Path) -> None:
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.kvlint]\nignore = ["KV303"]\nfail-on = "warning"\n'
        '[tool.kvlint.models]\n"microsoft/Phi-3-medium-4k-instruct" = "phi.json"\n')
    assert find([repo / "deploy" / "phi.yaml"]) == (repo / "pyproject.toml").resolve()
    result = run(repo, "lint", "deploy/phi.yaml", "--format", "json")
    assert result.exit_code == 1
    assert codes(result) == ["KV202", "KV206"]  # KV303 ignored; the models map resolved


def test_kvlint_toml_wins_over_pyproject_in_the_same_directory(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.kvlint]\nignore = ["KV2"]\n')
    (repo / ".kvlint.toml").write_text('ignore = ["KV303"]\n[models]\n'
                                       '"microsoft/Phi-3-medium-4k-instruct" = "phi.json"\n')
    assert codes(run(repo, "lint", "deploy/phi.yaml", "--format", "json")) == ["KV202", "KV206"]


def test_cli_overrides_and_isolated(repo: Path) -> None:
    (repo / ".kvlint.toml").write_text('select = ["KV206"]\n')
    args = ("lint", "deploy/phi.yaml", "--model-map", PHI, "--format", "json")
    assert codes(run(repo, *args)) == ["KV206"]
    assert codes(run(repo, *args, "--select", "KV202")) == ["KV202"]
    assert codes(run(repo, *args, "--isolated")) == ["KV202", "KV206", "KV303"]
    other = repo / "other.toml"
    other.write_text("[tool.kvlint]\nselect = ['KV303']\n".replace("[tool.kvlint]\n", ""))
    assert codes(run(repo, *args, "--config", str(other))) == ["KV303"]


def test_per_file_ignores_and_severity(repo: Path) -> None:
    (repo / ".kvlint.toml").write_text(
        '[per-file-ignores]\n"deploy/legacy/*.yaml" = ["KV2"]\n'
        '[severity]\nKV202 = "warning"\nKV206 = "warning"\n')
    result = run(repo, "lint", "deploy", "--model-map", PHI, "--format", "json")
    found = sorted((Path(f["path"]).parent.name, f["code"], f["severity"])
                   for r in data(result)["results"] for f in r["findings"])
    assert found == [("deploy", "KV202", "warning"), ("deploy", "KV206", "warning"),
                     ("deploy", "KV303", "info"), ("legacy", "KV303", "info")]
    assert result.exit_code == 0  # KV202 and KV206 downgraded below the default fail-on


def test_check_takes_serving_defaults_from_settings(repo: Path) -> None:
    (repo / ".kvlint.toml").write_text('tp = 8\ncontext = 4096\nengine = "tgi"\n'
                                       'engine-version = "3.3.4"\n')
    result = run(repo, "check", "phi.json", "--format", "json")
    r = data(result)["results"][0]
    assert (r["serving"]["tp"], r["serving"]["engine"], r["kv"]) == (8, "tgi", None)
    assert [f["code"] for f in r["findings"]] == ["KV202", "KV303"]  # TGI: no SWA windows
    assert data(run(repo, "check", "phi.json", "--tp", "2", "--format", "json"))[
        "results"][0]["serving"]["tp"] == 2


@pytest.mark.parametrize(("text", "message"), [
    ("selekt = ['KV2']\n", ".kvlint.toml: unknown key 'selekt'"),
    ("tp = 'two'\n", ".kvlint.toml: 'tp': Input should be a valid integer"),
    ("tp = '2'\n", ".kvlint.toml: 'tp': expected a number, got '2'"),
    ("tp = 0\n", ".kvlint.toml: 'tp' must be at least 1, got 0"),
    ("fail-on = 'sometimes'\n", ".kvlint.toml: 'fail-on': Input should be"),
    ("select = 'KV2'\n", ".kvlint.toml: 'select': Input should be a valid list"),
    ("[severity]\nKV999 = 'error'\n", "unknown rule 'KV999'"),
    ("select = [\n", ".kvlint.toml: invalid TOML"),
])
def test_bad_settings_are_exit_2_naming_key_and_file(repo: Path, text: str,
                                                    message: str) -> None:
    (repo / ".kvlint.toml").write_text(text)
    result = run(repo, "lint", "deploy/phi.yaml")
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert message in line and "Traceback" not in result.output


def test_several_outputs_in_one_run(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run(repo, "lint", "deploy/phi.yaml", "--model-map", PHI, "--format", "text",
                 "--format", "json", "--output", str(out))
    assert "KV202 error" in result.stdout
    assert json.loads(out.read_text())["summary"]["error"] == 2  # KV202 and KV206 (4 GPUs for tp=8)
    both = run(repo, "lint", "deploy/phi.yaml", "--format", "text", "--format", "json")
    assert both.exit_code == 2
    assert "only one --format can print to stdout" in both.stderr
