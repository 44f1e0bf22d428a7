"""`kvlint lint -` (a manifest on stdin, named by --stdin-filename) and runs that find no
manifest, through the real command line (a subprocess, as a shell pipe runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CONFIGS, ROOT

CASE = (ROOT / "fixtures" / "cases" / "vllm-phi3-medium-tp8.yaml").read_text()
PHI = f"microsoft/Phi-3-medium-4k-instruct={CONFIGS / 'microsoft--Phi-3-medium-4k-instruct.json'}"


def kvlint(*args: str, stdin: str | bytes = b"", cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cwd / "hf-cache"),
           "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("GITHUB_ACTIONS", None)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([sys.executable, "-m", "kvlint", *args], input=data, cwd=cwd,
                          env=env, capture_output=True, check=False, timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode(), proc.stderr.decode())


def findings(stdout: str) -> list[tuple[str, int, str]]:
    data: dict[str, Any] = json.loads(stdout)
    return sorted((f["path"], f["line"], f["code"]) for r in data["results"]
                  for f in r["findings"])


def test_stdin_without_a_name_is_dash(tmp_path: Path) -> None:
    proc = kvlint("lint", "-", "--isolated", "--model-map", PHI, stdin=CASE, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("-:14:15: microsoft/Phi-3-medium-4k-instruct  KV202 error")
    assert "1 served model in 1 file" in proc.stdout


def test_stdin_filename_names_locations_finds_settings_and_applies_them(
        tmp_path: Path) -> None:
    """helm template ... | kvlint lint - --stdin-filename deploy/phi.yaml: the settings file
    above deploy/ maps the model and ignores KV206 for deploy/*; the inline suppression in
    the piped text is honoured; the file itself need not exist."""
    (tmp_path / "deploy").mkdir()
    (tmp_path / ".kvlint.toml").write_text(
        '[models]\n"microsoft/Phi-3-medium-4k-instruct" = '
        f'"{CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"}"\n'
        '[per-file-ignores]\n"deploy/*.yaml" = ["KV206"]\n')
    text = CASE.replace('            - "8"\n',
                        '            - "8"  # kvlint: ignore[KV202] pinned for the move\n')
    proc = kvlint("lint", "-", "--stdin-filename", "deploy/phi.yaml", "--format", "json",
                  stdin=text, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert findings(proc.stdout) == [("deploy/phi.yaml", 11, "KV303")]
    # the same text piped under another name: the per-file-ignores no longer apply
    proc = kvlint("lint", "-", "--stdin-filename", "other/phi.yaml", "--format", "json",
                  stdin=text, cwd=tmp_path)
    assert findings(proc.stdout) == [("other/phi.yaml", 11, "KV303"),
                                     ("other/phi.yaml", 20, "KV206")]


@pytest.mark.parametrize(("args", "stdin", "message"), [
    (("-", "deploy.yaml"), "", "PATH '-' reads one manifest from stdin: give it alone"),
    (("deploy.yaml", "--stdin-filename", "x.yaml"), "",
     "--stdin-filename applies to PATH '-' (the manifest on stdin)"),
    (("-",), b"\xff\xfe", "- (stdin): not UTF-8 text (invalid start byte at byte 0)"),
])
def test_stdin_misuse_is_one_line_exit_2(tmp_path: Path, args: tuple[str, ...],
                                         stdin: str | bytes, message: str) -> None:
    (tmp_path / "deploy.yaml").write_text(CASE)
    proc = kvlint("lint", *args, "--isolated", stdin=stdin, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, f"kvlint: error: {message}\n")


def test_stdin_that_is_not_yaml_is_a_finding(tmp_path: Path) -> None:
    proc = kvlint("lint", "-", "--isolated", "--format", "json", stdin="a: [1\n",
                  cwd=tmp_path)
    assert [code for _, _, code in findings(proc.stdout)] == ["KV903"]


def test_a_run_with_nothing_to_lint_says_so(tmp_path: Path) -> None:
    """As ruff: a warning on stderr, exit 0; a path that does not exist is exit 2."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("no manifests\n")
    proc = kvlint("lint", "docs", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == ("kvlint: warning: no manifest files found under the given "
                           "path(s) (include: *.yaml, *.yml, *.json, config.pbtxt)\n")
    proc = kvlint("lint", "docs", "--include", "*.md", "--format", "json", cwd=tmp_path)
    assert proc.stderr == ""  # a .md file was linted (it holds no served model)
    proc = kvlint("lint", "typo", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (2, "kvlint: error: typo: no such file or "
                                                 "directory\n")
