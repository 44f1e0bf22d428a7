"""Hostile input against what kvlint prints and writes, through the real CLI.

Every fixture is generated here, at run time: plugins planted in the working directory,
file and model names carrying terminal escapes, newlines and workflow commands, Markdown and
HTML in model names, event payloads whose SHAs are git options, packages whose import would
leave a marker, sources Python cannot parse, and outputs that would overwrite an input.
Each command runs as a child process under a time limit and an address-space cap.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jsonschema
import pytest

from tests.helpers import CONFIGS, GQA_SOURCE, ROOT

TIMEOUT_S = 60
MEMORY_CAP = 2 * 1024**3
LLAMA = CONFIGS / "meta-llama--Llama-2-7b-hf.json"
PHI3 = CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"
REFUSED = (ROOT / "fixtures" / "cases" / "vllm-phi3-medium-tp8.yaml").read_text()
SARIF_SCHEMA = ROOT / "fixtures" / "schemas" / "sarif-schema-2.1.0.json"
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\r\x9b\u202e"
"""Retitles and clears a terminal, returns the carriage, a C1 CSI, a bidi override."""


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def kvlint(*args: str, cwd: Path, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[bytes]:
    """``python -m kvlint ARGS`` in ``cwd``, bytes out (what a terminal would receive)."""
    base = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
            "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-m", "kvlint", *args], cwd=cwd,
                          env={**base, **(env or {})}, capture_output=True,
                          timeout=TIMEOUT_S, preexec_fn=_limits, check=False)


def one_error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    """Exit 2 with exactly one line on stderr: returned."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "internal error" not in lines[0]
    return lines[0]


# ------------------------------------------------------------------------------ plugins
def _plant_plugin(folder: Path, marker: Path) -> None:
    dist = folder / "evil-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[kvlint]\nevil = evil_plugin\n")
    (folder / "evil_plugin.py").write_text(f"open({str(marker)!r}, 'w').write('plugin')\n")
    for module in ("yaml", "tabulate", "pluggy"):  # modules kvlint imports lazily
        (folder / f"{module}.py").write_text(
            f"open({str(marker)!r} + '.{module}', 'w').write('shadowed')\n")


def test_plugins_never_come_from_the_working_directory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    marker = tmp_path / "MARKER"
    _plant_plugin(repo, marker)
    (repo / "deploy.yaml").write_text(REFUSED)
    autoload = {"KVLINT_DISABLE_PLUGIN_AUTOLOAD": ""}
    assert kvlint("rules", cwd=repo, env=autoload).returncode == 0
    linted = kvlint("lint", "deploy.yaml", "--isolated", cwd=repo, env=autoload)
    # exit 2: the manifest's Hub model is not in the (offline) cache, so it was not checked
    assert linted.returncode == 2 and b"could not be fetched" in linted.stderr
    # The working directory named explicitly on PYTHONPATH is still not a plugin source
    # (modules there are importable then, by the user's choice: the shadows go).
    for module in ("yaml", "tabulate", "pluggy"):
        (repo / f"{module}.py").unlink()
    proc = kvlint("rules", cwd=repo, env={**autoload,
                                         "PYTHONPATH": os.pathsep.join([".", str(ROOT)])})
    assert proc.returncode == 0
    assert b"evil" not in proc.stdout
    assert sorted(p.name for p in tmp_path.glob("MARKER*")) == []
    # Control: the same distribution installed elsewhere on the path is loaded.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    kvlint("rules", cwd=elsewhere,
           env={**autoload, "PYTHONPATH": os.pathsep.join([str(ROOT), str(repo)])})
    assert marker.read_text() == "plugin"


# ------------------------------------------------------------------------- text output
def _hostile_config(folder: Path) -> Path:
    config = json.loads(LLAMA.read_text())
    config["model_type"] = "llama" + ESCAPES + "\ud800\nkvlint: 0 errors"
    config["torch_dtype"] = "bfloat16" + ESCAPES
    path = folder / f"evil{ESCAPES}\n.json"
    path.write_text(json.dumps(config))  # \ud800 stays a JSON escape
    return path


@pytest.mark.parametrize("fmt", ["text", "markdown", "junit", "github"])
def test_human_formats_escape_control_characters(tmp_path: Path, fmt: str) -> None:
    path = _hostile_config(tmp_path)
    proc = kvlint("check", path.name, "--isolated", "--tp", "16", "--format", fmt,
                  cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout.decode("utf-8")  # strict: no lone surrogate reached the bytes
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]", out), out
    assert "\\x1b]0;pwned\\x07" in out
    if fmt == "text":
        assert "\\ud800" in out
    assert not any(line.startswith("kvlint: 0 errors") for line in out.splitlines())


# ---------------------------------------------------------------------- GitHub Actions
def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True, env=env, timeout=TIMEOUT_S).stdout.strip()


HOSTILE_MODEL = ('x</td><img src=x onerror=alert(1)>![i](https://e.example/i.png)'
                 '[l](https://e.example)\n\n# Pwned\n```\n<script>alert(1)</script>')


@pytest.fixture
def pull_request(tmp_path: Path) -> dict[str, Any]:
    """A PR adding: a refused manifest under a name carrying a workflow command, a symlink
    to /dev/null under another, a link out of the checkout, and a manifest whose model name
    is Markdown and HTML."""
    if shutil.which("git") is None:
        pytest.skip("git is needed")
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    (repo / ".kvlint.toml").write_text(
        f'[models]\n"microsoft/Phi-3-medium-4k-instruct" = "{PHI3}"\n')
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    injected = "deploy/a\n::error file=forged.yaml,line=1::forged\n%0A::warning::x,y:z.yaml"
    (repo / injected).write_text(REFUSED)
    (repo / os.fsdecode(b"deploy/not-utf8-\xff.yaml")).write_text(REFUSED)
    (repo / "deploy" / "null\n::error::from-null.yaml").symlink_to("/dev/null")
    outside = tmp_path / "outside.yaml"
    outside.write_text(REFUSED)
    (repo / "deploy" / "out.yaml").symlink_to(outside)
    (repo / "deploy" / "model.yaml").write_text(
        REFUSED.replace('"microsoft/Phi-3-medium-4k-instruct"', json.dumps(HOSTILE_MODEL)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "hostile")
    head = git(repo, "rev-parse", "HEAD")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": base},
                                                  "head": {"sha": head}}}))
    files = {name: tmp_path / name for name in ("summary.md", "output.txt")}
    for file in files.values():
        file.write_text("")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(event), "GITHUB_STEP_SUMMARY": str(files["summary.md"]),
           "GITHUB_OUTPUT": str(files["output.txt"]), "GITHUB_WORKSPACE": str(repo)}
    return {"repo": repo, "env": env, "files": files, "tmp": tmp_path, "event": event,
            "base": base, "head": head, "injected": injected}


COMMAND = re.compile(r"::(error|warning|notice)( [^:\n]*)?::[^\n]*")


def test_file_names_cannot_inject_workflow_commands(pull_request: dict[str, Any]) -> None:
    sarif = pull_request["tmp"] / "kvlint.sarif"
    proc = kvlint("github-action", "--sarif-file", str(sarif), cwd=pull_request["repo"],
                  env=pull_request["env"])
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == b""
    lines = proc.stdout.decode().splitlines()
    *annotations, summary = lines
    assert summary.startswith("kvlint: ")
    for line in annotations:  # each line is exactly one command, its properties escaped
        assert COMMAND.fullmatch(line), line
        props = line.split("::")[1]
        assert re.fullmatch(r"(error|warning|notice) (\w+=[^,]*)(,\w+=[^,]*)*", props), line
    files = [re.search(r" file=([^,]*)", line) for line in annotations]
    shown = {m[1] for m in files if m}
    assert ("deploy/a%0A%3A%3Aerror file=forged.yaml%2Cline=1%3A%3Aforged%0A%250A%3A%3Awarning"
            "%3A%3Ax%2Cy%3Az.yaml") in shown
    assert "deploy/null%0A%3A%3Aerror%3A%3Afrom-null.yaml" in shown
    assert "deploy/not-utf8-\\udcff.yaml" in shown
    assert "deploy/out.yaml" in shown  # a finding on the link; the outside file is not read
    assert not any("outside" in line for line in lines)
    kv903 = [line for line in annotations if "KV903" in line]
    assert len(kv903) == 2
    # The summary, the outputs and the SARIF were all written.
    text = pull_request["files"]["summary.md"].read_text()
    assert "KV202" in text and "KV903" in text
    outputs = pull_request["files"]["output.txt"].read_text().splitlines()
    assert [line.split("=")[0] for line in outputs] == ["findings", "errors", "warnings",
                                                         "sarif-file"]
    validate_sarif(json.loads(sarif.read_text()), pull_request["repo"])


def test_model_names_cannot_inject_markdown(pull_request: dict[str, Any]) -> None:
    proc = kvlint("github-action", "--fail-on", "never", cwd=pull_request["repo"],
                  env=pull_request["env"])
    assert proc.returncode == 0, proc.stderr
    text = pull_request["files"]["summary.md"].read_text()
    assert "| x&lt;/td&gt;&lt;img src=x onerror=alert(1)&gt;!\\[i\\](https" in text
    spans = re.findall(r"(`+)(.*?)\1", text)  # code spans show HTML and links as text
    assert spans and all("\n" not in body for _, body in spans)
    outside = re.sub(r"(`+)(.*?)\1", "", text)
    outside = re.sub(r"\[KV\d+\]\(https://github\.com/kvlint/kvlint/[^)]*\)", "", outside)
    assert not re.search(r"<(?!br>)", outside)  # no HTML tag but the cells' line breaks
    assert not re.search(r"(?<!\\)[\[\]]", outside)  # no link or image: [ ] escaped
    assert "\n# Pwned" not in outside and "\n```" not in outside
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert set(headings) == {"## kvlint", "### Findings"}  # ours only
    assert "\n\n\n" not in text


@pytest.mark.parametrize(("side", "sha"), [
    ("base", "--output={out}"),
    ("head", "--output={out}"),
    ("base", "HEAD~1"),
    ("head", "0" * 39),
    ("base", ["not", "a", "string"]),
])
def test_event_shas_must_be_object_names(pull_request: dict[str, Any], side: str,
                                         sha: Any) -> None:
    out = pull_request["tmp"] / "written-by-git"
    event = json.loads(pull_request["event"].read_text())
    event["pull_request"][side]["sha"] = sha.format(out=out) if isinstance(sha, str) else sha
    pull_request["event"].write_text(json.dumps(event))
    proc = kvlint("github-action", cwd=pull_request["repo"], env=pull_request["env"])
    line = one_error_line(proc)
    assert f"pull_request.{side}.sha is " in line and "40 or 64 hex digits" in line
    assert not out.exists()


def test_an_unknown_but_well_formed_sha_is_one_line(pull_request: dict[str, Any]) -> None:
    event = json.loads(pull_request["event"].read_text())
    event["pull_request"]["base"]["sha"] = "f" * 40
    pull_request["event"].write_text(json.dumps(event))
    line = one_error_line(kvlint("github-action", cwd=pull_request["repo"],
                                 env=pull_request["env"]))
    assert line.startswith("kvlint: error: git diff ffffffffffff...") and "fetch-depth" in line


# ------------------------------------------------------------------------------- SARIF
def validate_sarif(log: dict[str, Any], root: Path) -> list[str]:
    """Schema-valid with formats checked (``uri-reference`` needs rfc3986-validator); each
    relative ``uri`` has no scheme and decodes to a file under ``root``. Returns them."""
    schema = json.loads(SARIF_SCHEMA.read_text())
    checker = jsonschema.Draft7Validator.FORMAT_CHECKER
    assert "uri-reference" in checker.checkers, "pip install rfc3986-validator"
    jsonschema.Draft7Validator(schema, format_checker=checker).validate(log)
    uris = []
    for result in log["runs"][0]["results"]:
        for location in result["locations"]:
            artifact = location.get("physicalLocation", {}).get("artifactLocation")
            if artifact and artifact.get("uriBaseId") == "%SRCROOT%":
                uri = artifact["uri"]
                assert urlsplit(uri).scheme == "" and not uri.startswith("/"), uri
                assert os.path.lexists(root / unquote(uri, errors="surrogateescape")), uri
                uris.append(uri)
    return uris


def test_sarif_uris_are_percent_encoded(tmp_path: Path) -> None:
    names = ["a b.yaml", "100%.yaml", "c:d.yaml", "x#y?z.yaml", "line\nbreak.yaml",
             "caf\u00e9 \u6a21\u578b.yaml"]
    (tmp_path / ".git").mkdir()  # the repository root
    deploy = tmp_path / "deploy dir"
    deploy.mkdir()
    for name in names:
        (deploy / name).write_text(REFUSED)
    (tmp_path / ".kvlint.toml").write_text(
        f'[models]\n"microsoft/Phi-3-medium-4k-instruct" = "{PHI3}"\n')
    proc = kvlint("lint", "deploy dir", "--format", "sarif", "-o", "out.sarif", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    uris = validate_sarif(json.loads((tmp_path / "out.sarif").read_text()), tmp_path)
    assert {unquote(u) for u in uris} == {f"deploy dir/{n}" for n in names}
    assert "deploy%20dir/100%25.yaml" in uris and "deploy%20dir/c%3Ad.yaml" in uris
    assert "deploy%20dir/line%0Abreak.yaml" in uris


# --------------------------------------------------------------------------------- scan
GQA = GQA_SOURCE


def _scan_codes(proc: subprocess.CompletedProcess[bytes]) -> dict[str, list[str]]:
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr == b""
    data = json.loads(proc.stdout)
    return {Path(r["target"]["ref"]).name: sorted(f["code"] for f in r["findings"])
            for r in data["results"]}


def test_scan_package_imports_nothing(tmp_path: Path) -> None:
    site = tmp_path / "site"
    marker = tmp_path / "IMPORTED"
    for folder in ("evilpkg", "evilpkg/sub"):
        (site / folder).mkdir(parents=True)
        (site / folder / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({folder!r})\n")
    (site / "evilpkg" / "sub" / "attention.py").write_text(GQA)
    (site / "evilmod.py").write_text(f"open({str(marker)!r}, 'a').write('mod')\n" + GQA)
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}
    for name, files in (("evilpkg.sub", {"attention.py"}), ("evilpkg", {"attention.py"}),
                        ("evilmod", {"evilmod.py"})):
        proc = kvlint("scan", "--package", name, "--isolated", "--format", "json",
                      cwd=tmp_path, env=env)
        assert set(_scan_codes(proc)) == files, name
    proc = kvlint("scan", "--package", "evilpkg.nosuch", "--isolated", cwd=tmp_path, env=env)
    assert "package 'evilpkg.nosuch' is not installed" in one_error_line(proc)
    assert not marker.exists()


def test_scan_reports_a_bad_file_and_scans_the_rest(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "a_deep_parens.py").write_text("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (src / "b_deep_unary.py").write_text("x = " + "-" * 100_000 + "1\n")
    (src / "c_deep_sum.py").write_text("x = " + "+".join(["1"] * 100_000) + "\n")
    (src / "d_latin1.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + GQA.encode())
    (src / "e_bom.py").write_bytes(b"\xef\xbb\xbf" + GQA.encode())
    (src / "f_bad_coding.py").write_bytes(b"# coding: no-such-codec\nx = 1\n")
    (src / "g_undecodable.py").write_bytes(b"x = '\xff'\n")
    (src / "h_fine.py").write_text(GQA)
    proc = kvlint("scan", "src", "--isolated", "--format", "json", cwd=tmp_path)
    codes = _scan_codes(proc)
    for name in ("a_deep_parens.py", "b_deep_unary.py", "c_deep_sum.py", "f_bad_coding.py",
                 "g_undecodable.py"):
        assert codes[name] == ["KV903"], (name, codes)
    for name in ("d_latin1.py", "e_bom.py", "h_fine.py"):
        assert "KV401" in codes[name], (name, codes)


# ---------------------------------------------------------------------------- data loss
def test_an_input_is_never_overwritten(tmp_path: Path) -> None:
    shutil.copy(LLAMA, tmp_path / "cfg.json")
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(LLAMA, model / "config.json")
    before = (tmp_path / "cfg.json").read_bytes()
    cases = [
        ("check", "cfg.json", "-o", "cfg.json"),
        ("check", "cfg.json", "--format", "json", "-o", "./cfg.json"),
        ("check", "model", "-o", "model/config.json"),
        ("compare", "cfg.json", "model", "-o", "cfg.json"),
        ("compare", "cfg.json", "model", "--format", "json", "-o", "model/config.json"),
    ]
    for args in cases:
        line = one_error_line(kvlint(*args, cwd=tmp_path))
        assert "is an input of this run" in line, (args, line)
    assert (tmp_path / "cfg.json").read_bytes() == before
    assert (model / "config.json").read_bytes() == before
    (tmp_path / "kvlint.toml").write_text("")
    line = one_error_line(kvlint("check", "cfg.json", "--config", "kvlint.toml",
                                 "-o", "kvlint.toml", cwd=tmp_path))
    assert "is an input of this run" in line


def test_the_same_output_twice_is_refused(tmp_path: Path) -> None:
    shutil.copy(LLAMA, tmp_path / "cfg.json")
    (tmp_path / "x").write_text("kept")
    for second in ("x", "./x", str(tmp_path / "x")):
        line = one_error_line(kvlint("check", "cfg.json", "--format", "json", "--format",
                                     "sarif", "-o", "x", "-o", second, cwd=tmp_path))
        assert "given twice" in line
    assert (tmp_path / "x").read_text() == "kept"


def test_a_failed_render_leaves_reports_untouched(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    dist = plugins / "boom-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: boom\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[kvlint]\nboom = boom_reporter\n")
    (plugins / "boom_reporter.py").write_text(
        "from kvlint.hookspecs import hookimpl\n"
        "from kvlint.reporters.base import Reporter\n\n\n"
        "class Boom(Reporter):\n"
        "    name = 'boom'\n\n"
        "    def render(self, run):\n"
        "        raise RuntimeError('render failed')\n\n\n"
        "@hookimpl\n"
        "def kvlint_reporters():\n"
        "    return [Boom]\n")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(LLAMA, work / "cfg.json")
    (work / "a.json").write_text("old json report")
    (work / "b.out").write_text("old boom report")
    env = {"KVLINT_DISABLE_PLUGIN_AUTOLOAD": "",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(plugins)])}
    proc = kvlint("check", "cfg.json", "--format", "json", "--format", "boom",
                  "-o", "a.json", "-o", "b.out", cwd=work, env=env)
    assert proc.returncode == 2
    assert b"render failed" in proc.stderr
    assert (work / "a.json").read_text() == "old json report"
    assert (work / "b.out").read_text() == "old boom report"
    assert sorted(p.name for p in work.iterdir()) == ["a.json", "b.out", "cfg.json"]


def test_reports_replace_files_atomically_and_keep_links(tmp_path: Path) -> None:
    shutil.copy(LLAMA, tmp_path / "cfg.json")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "r.json").write_text("old")
    os.chmod(reports / "r.json", 0o640)
    (tmp_path / "link.json").symlink_to(reports / "r.json")
    proc = kvlint("check", "cfg.json", "--format", "json", "-o", "link.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((reports / "r.json").read_text())["results"]
    assert (reports / "r.json").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in reports.iterdir()) == ["r.json"]  # no temporary left
    proc = kvlint("check", "cfg.json", "--format", "json", "-o", "/dev/stdout", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"]
    line = one_error_line(kvlint("check", "cfg.json", "-o", "no/such/dir/r.txt",
                                 cwd=tmp_path))
    assert line.startswith("kvlint: error: no/such/dir/r.txt: cannot write")


def test_error_lines_escape_what_they_quote(tmp_path: Path) -> None:
    """A usage error naming a hostile path is still one line, with nothing to act on."""
    name = "a\n::error file=x::forged\x1b]0;t\x07.yaml"
    line = one_error_line(kvlint("lint", name, cwd=tmp_path, env={"GITHUB_ACTIONS": "true"}))
    assert line == "kvlint: error: a\\n::error file=x::forged\\x1b]0;t\\x07.yaml: no such file " \
                   "or directory"
