"""The GitHub Action: its package-side logic in a simulated runner, and every `run:` step of
action.yml executed in order with the `${{ }}` expressions substituted as a runner would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from kvlint.cache import results as result_cache
from kvlint.cli import main
from tests.helpers import CONFIGS, ROOT

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")

REFUSED = (ROOT / "fixtures" / "cases" / "vllm-phi3-medium-tp8.yaml").read_text()
CLEAN = REFUSED.replace('- "8"', '- "2"').replace('nvidia.com/gpu: "4"', 'nvidia.com/gpu: "2"')


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


@pytest.fixture
def pull_request(tmp_path: Path) -> dict[str, Any]:
    """A repository whose PR adds deploy/phi.yaml (tp=8: refused) next to an unchanged,
    already-refused deploy/old.yaml, and the runner files of a job."""
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    (repo / ".kvlint.toml").write_text(
        '[models]\n"microsoft/Phi-3-medium-4k-instruct" = '
        f'"{CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"}"\n')
    (repo / "deploy" / "old.yaml").write_text(REFUSED)
    (repo / "deploy" / "clean.yaml").write_text(CLEAN)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "deploy" / "phi.yaml").write_text(REFUSED)
    (repo / "README.md").write_text("docs change\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "serve phi-3 on 8 GPUs")
    head = git(repo, "rev-parse", "HEAD")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": base},
                                                  "head": {"sha": head}}}))
    files = {name: tmp_path / name for name in ("summary.md", "output.txt", "env.txt")}
    for file in files.values():
        file.write_text("")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(event), "GITHUB_STEP_SUMMARY": str(files["summary.md"]),
           "GITHUB_OUTPUT": str(files["output.txt"]), "GITHUB_ENV": str(files["env.txt"]),
           "GITHUB_WORKSPACE": str(repo), "HF_HUB_OFFLINE": "1",
           "HF_HUB_CACHE": str(tmp_path / "hf-cache"), "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return {"repo": repo, "env": env, "files": files, "tmp": tmp_path}


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_action_logic_on_a_pull_request(pull_request: dict[str, Any],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in pull_request["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(pull_request["repo"])
    sarif = pull_request["tmp"] / "out" / "kvlint.sarif"
    result = CliRunner().invoke(main, ["github-action", "--sarif-file", str(sarif)])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    # the column of the flag (`- --tensor-parallel-size`: the `--` is column 15)
    assert lines[0].startswith("::error file=deploy/phi.yaml,line=14,col=15,title=KV202 "
                               "tp-indivisible-kv-heads")
    assert not any("old.yaml" in line or "clean.yaml" in line for line in lines)
    summary = pull_request["files"]["summary.md"].read_text()
    assert summary.startswith("## kvlint\n\n1 manifest changed between ")
    assert summary.count("## kvlint") == 1
    assert "microsoft/Phi-3-medium-4k-instruct" in summary and "KV202" in summary
    assert outputs(pull_request["files"]["output.txt"]) == {
        "findings": "3", "errors": "2", "warnings": "0", "sarif-file": str(sarif)}
    schema = json.loads((ROOT / "fixtures" / "schemas" / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft7Validator(schema).validate(json.loads(sarif.read_text()))


def test_push_event_lints_the_whole_repository(pull_request: dict[str, Any],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {**pull_request["env"], "GITHUB_EVENT_NAME": "push"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(pull_request["repo"])
    result = CliRunner().invoke(main, ["github-action", "--summary", "false",
                                       "--fail-on", "never"])
    assert result.exit_code == 0
    errors = set(re.findall(r"::error file=deploy/(\w+)\.yaml", result.stdout))
    assert errors == {"phi", "old"}  # clean.yaml only gets a notice (KV303)
    assert pull_request["files"]["summary.md"].read_text() == ""


def _substitute(text: str, inputs: dict[str, str], runner_temp: Path = Path("/tmp")) -> str:
    def value(match: re.Match[str]) -> str:
        expr = match[1].strip()
        if expr.startswith("inputs."):
            return inputs[expr.removeprefix("inputs.")]
        if expr == "github.action_path":
            return str(ROOT)
        if expr == "runner.temp":
            return str(runner_temp)
        raise AssertionError(f"unexpected expression {expr}")
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def run_action_steps(pull_request: dict[str, Any], **given: str
                     ) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """Every `run:` step of action.yml in order, with the inputs' defaults and ``given``
    (input names with `_` for `-`); the steps before the kvlint step must succeed."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({"offline": "true", "hf-token": "hf_secret_value"})
    inputs.update({name.replace("_", "-"): value for name, value in given.items()})
    target = pull_request["tmp"] / "site"
    runner_env = {**os.environ, **pull_request["env"],
                  # install into a scratch dir, offline, without touching this interpreter
                  "PIP_TARGET": str(target), "PIP_NO_INDEX": "1", "PIP_NO_DEPS": "1",
                  "PIP_NO_BUILD_ISOLATION": "false",
                  "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = []
    temp = pull_request["tmp"] / "runner-temp"
    for step in action["runs"]["steps"]:
        if "uses" in step:  # a runner's own actions: Python is here; the cache starts empty
            assert step["uses"].startswith(("actions/setup-python@v", "actions/cache@v"))
            if step["uses"].startswith("actions/cache@v"):
                assert step["if"] == "inputs.cache == 'true'"
                assert _substitute(step["with"]["path"], inputs, temp) == \
                    str(temp / "kvlint-cache")
            continue
        env = {**runner_env, **{k: _substitute(str(v), inputs, temp)
                                for k, v in step.get("env", {}).items()}}
        proc = subprocess.run(["bash", "-e", "-c", _substitute(step["run"], inputs)],
                              cwd=pull_request["repo"], env=env, capture_output=True,
                              text=True, timeout=600, check=False)
        ran.append((step["name"], proc))
        if step.get("id") != "kvlint":
            assert proc.returncode == 0, proc.stderr
    return ran


def test_action_yml_run_steps_in_order(pull_request: dict[str, Any]) -> None:
    target = pull_request["tmp"] / "site"
    ran = run_action_steps(pull_request)
    assert [name for name, _ in ran] == ["Install kvlint", "Run kvlint"]
    assert list(target.glob("kvlint-*.dist-info")), "the action installed its own checkout"
    run = ran[-1][1]
    assert run.returncode == 1  # the action fails the check
    assert "::error file=deploy/phi.yaml,line=14,col=15,title=KV202" in run.stdout
    assert "old.yaml" not in run.stdout  # unchanged files are not reported
    assert "hf_secret_value" not in run.stdout + run.stderr
    assert outputs(pull_request["files"]["output.txt"])["errors"] == "2"  # KV202, KV206


def _sarif_files(path: Path) -> dict[str, list[str]]:
    """SARIF result rule ids by file."""
    found: dict[str, list[str]] = {}
    for result in json.loads(path.read_text())["runs"][0]["results"]:
        uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        found.setdefault(uri, []).append(result["ruleId"])
    return found


def test_pull_request_sarif_covers_the_whole_repository(
        pull_request: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Code scanning closes alerts a PR's analysis omits: the SARIF keeps old.yaml's KV202
    although the PR does not touch it; annotations, summary, outputs and exit code stay on
    the changed file."""
    for key, value in pull_request["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(pull_request["repo"])
    sarif = pull_request["tmp"] / "kvlint.sarif"
    result = CliRunner().invoke(main, ["github-action", "--sarif-file", str(sarif)])
    assert result.exit_code == 1, result.output
    files = _sarif_files(sarif)
    assert set(files) == {"deploy/phi.yaml", "deploy/old.yaml", "deploy/clean.yaml"}
    assert files["deploy/old.yaml"] == files["deploy/phi.yaml"]
    assert "KV202" in files["deploy/old.yaml"] and "KV202" not in files["deploy/clean.yaml"]
    assert set(re.findall(r"file=(deploy/\w+\.yaml)", result.stdout)) == {"deploy/phi.yaml"}
    summary = pull_request["files"]["summary.md"].read_text()
    assert "the SARIF report covers the whole repository (3 results)" in summary
    assert "old.yaml" not in summary.split("the whole repository", 1)[1]
    assert outputs(pull_request["files"]["output.txt"])["findings"] == "3"
    # without --sarif-file only the changed files are linted (nothing else to report)
    second = CliRunner().invoke(main, ["github-action", "--summary", "false"])
    assert second.exit_code == 1 and "old.yaml" not in second.stdout


def test_summary_counts_manifests_in_words(pull_request: dict[str, Any],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo = pull_request["repo"]
    for key, value in pull_request["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(repo)
    base = git(repo, "rev-parse", "HEAD")
    (repo / "deploy" / "two.yaml").write_text(CLEAN)
    (repo / "deploy" / "three.yaml").write_text(CLEAN)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two more")
    for head, words in ((base, "no manifests changed"),
                        (git(repo, "rev-parse", "HEAD"), "2 manifests changed")):
        event = pull_request["tmp"] / "event.json"
        event.write_text(json.dumps({"pull_request": {"base": {"sha": base},
                                                      "head": {"sha": head}}}))
        summary = pull_request["files"]["summary.md"]
        summary.write_text("")
        result = CliRunner().invoke(main, ["github-action", "--fail-on", "never"])
        assert result.exit_code == 0, result.output
        assert summary.read_text().startswith(f"## kvlint\n\n{words} between ")


@pytest.mark.parametrize(("paths", "message"), [
    ("typo.yaml", "--paths: typo.yaml: no such file or directory"),
    ("deploy/phi.yaml depoly", "--paths: depoly: no such file or directory"),
    ("docs", "--paths docs: no manifest files (*.yaml, *.yml, *.json, config.pbtxt) to lint"),
])
def test_paths_that_match_nothing_fail_the_action(
        pull_request: dict[str, Any], paths: str, message: str) -> None:
    """A typo in `paths:` must not pass as "0 results": exit 2, an ::error annotation on
    stdout (where the runner reads workflow commands) and one line on stderr."""
    (pull_request["repo"] / "docs").mkdir()
    (pull_request["repo"] / "docs" / "notes.md").write_text("no manifests here\n")
    proc = subprocess.run([sys.executable, "-m", "kvlint", "github-action", "--paths", paths],
                          cwd=pull_request["repo"], env={**os.environ, **pull_request["env"]},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stdout == f"::error title=kvlint::{message}\n"
    assert proc.stderr == f"kvlint: error: {message}\n"
    assert outputs(pull_request["files"]["output.txt"]) == {}


def test_action_yml_pull_request_sarif_and_a_typo_in_paths(
        pull_request: dict[str, Any]) -> None:
    """Through action.yml's own steps: with `sarif-file` on a PR the SARIF holds the
    unchanged old.yaml's alerts too (annotations do not); `paths: typo.yaml` fails."""
    sarif = pull_request["tmp"] / "results" / "kvlint.sarif"
    run = run_action_steps(pull_request, sarif_file=str(sarif))[-1][1]
    assert run.returncode == 1
    assert "old.yaml" not in run.stdout
    assert set(_sarif_files(sarif)) == {"deploy/phi.yaml", "deploy/old.yaml",
                                        "deploy/clean.yaml"}
    assert outputs(pull_request["files"]["output.txt"])["sarif-file"] == str(sarif)
    typo = run_action_steps(pull_request, paths="typo.yaml")[-1][1]
    assert typo.returncode == 2
    assert typo.stdout == "::error title=kvlint::--paths: typo.yaml: no such file or directory\n"


def test_action_yml_keeps_results_in_its_cache_between_runs(
        pull_request: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """With the `cache` input on (the default), the kvlint step writes its result cache
    where actions/cache restores it from (runner.temp); a second run with that directory
    restored reads every file from it (the same SARIF and annotations); `cache: false`
    neither reads nor writes it."""
    monkeypatch.delenv("KVLINT_NO_CACHE")
    sarif = pull_request["tmp"] / "results" / "kvlint.sarif"
    cache = pull_request["tmp"] / "runner-temp" / "kvlint-cache" / "lint"
    # files changed within RACY_NS of a run are not recorded by their stat signature; were
    # they still that young in the first run and not in the second, the second would write
    # their signatures: both runs see them old enough
    newest = max(f.stat().st_ctime_ns for f in pull_request["repo"].rglob("*") if f.is_file())
    time.sleep(max(0.0, (newest + result_cache.RACY_NS - time.time_ns()) / 1e9 + 0.1))
    first = run_action_steps(pull_request, sarif_file=str(sarif))[-1][1]
    (written,) = cache.glob("*.pickle")
    stamp = written.stat().st_mtime_ns
    report = sarif.read_text()
    second = run_action_steps(pull_request, sarif_file=str(sarif))[-1][1]
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout) == \
        (1, first.stdout)
    assert sarif.read_text() == report
    assert written.stat().st_mtime_ns == stamp  # every file hit: nothing to write
    shutil.rmtree(cache)
    off = run_action_steps(pull_request, sarif_file=str(sarif), cache="false")[-1][1]
    assert off.stdout == first.stdout and not cache.exists()


def test_unreachable_hub_fails_the_action_with_one_line(pull_request: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.hub_server import unused_port

    (pull_request["repo"] / ".kvlint.toml").write_text("")  # the model must come from the Hub
    endpoint = f"http://127.0.0.1:{unused_port()}"
    for key, value in {**pull_request["env"], "HF_ENDPOINT": endpoint}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.chdir(pull_request["repo"])
    result = CliRunner().invoke(main, ["github-action", "--summary", "false",
                                       "--fail-on", "never"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "kvlint: error: 1 model could not be fetched from the Hugging Face Hub: "
        "microsoft/Phi-3-medium-4k-instruct; first error: Could not reach the Hugging Face "
        f"Hub at {endpoint} to fetch microsoft/Phi-3-medium-4k-instruct ([Errno 111] "
        "Connection refused); check your network, proxy or HF_ENDPOINT, or pass --offline to "
        f"read the local cache ({pull_request['tmp'] / 'hf-cache'})"]
