"""Hostile files through the real CLI: FIFOs, devices, link loops, links out of the tree, huge
or deeply nested JSON and YAML. Each run is a child process with a time limit and a memory
cap; every malicious fixture is generated here, in tmp_path, never committed."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CONFIGS, ROOT

MEMORY_CAP = 2 << 30
"""Address space of the child: a hang on /dev/zero or a quadratic blow-up hits it."""

CASE = ROOT / "fixtures" / "cases" / "vllm-phi3-medium-tp8.yaml"
PHI = CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def kvlint(*args: str, cwd: Path, timeout: float = 60,
           prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cwd / ".hf-cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([*prefix, sys.executable, "-m", "kvlint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=_cap_memory, check=False)


def lint_json(*args: str, cwd: Path, timeout: float = 60,
              prefix: tuple[str, ...] = ()) -> tuple[int, dict[str, Any]]:
    done = kvlint("lint", *args, "--isolated", "--no-plugins", "--offline", "--format", "json",
                  cwd=cwd, timeout=timeout, prefix=prefix)
    # exit 2 only for Hub models the (empty, offline) cache cannot give: not checked
    assert done.returncode in (0, 1) or (done.returncode == 2 and
                                         "could not be fetched" in done.stderr), done.stderr
    assert "internal error" not in done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, data


def problems(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Path -> (kind, message) of every KV903 finding."""
    return {Path(f["path"]).as_posix(): (f["data"]["kind"], f["message"])
            for r in data["results"]
            for f in r["findings"] if f["code"] == "KV903"}


def one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvlint: error: "), done.stderr
    assert "internal error" not in lines[0]
    for word in words:
        assert word in lines[0], lines[0]


# --- check: only regular files, capped, one-line errors --------------------------------------


def test_check_refuses_devices_and_fifos_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.json")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").symlink_to("/dev/zero")
    start = time.monotonic()
    one_line_error(kvlint("check", "/dev/zero", cwd=tmp_path), "/dev/zero",
                   "not a regular file (a character device)")
    one_line_error(kvlint("check", "fifo.json", cwd=tmp_path), "fifo.json", "a FIFO")
    one_line_error(kvlint("check", "model", cwd=tmp_path), "model/config.json",
                   "a character device")
    assert time.monotonic() - start < 60


def test_check_caps_the_size_of_a_config(tmp_path: Path) -> None:
    big = tmp_path / "config.json"
    with big.open("w", encoding="utf-8") as out:
        out.write('{"pad": "')
        out.write("x" * (17 << 20))
        out.write('"}')
    one_line_error(kvlint("check", str(big), cwd=tmp_path), "larger than 16 MiB")


def test_check_hostile_json(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "long.json").write_text('{"num_hidden_layers": ' + "9" * 5000 + "}")
    one_line_error(kvlint("check", "deep.json", cwd=tmp_path), "deep.json",
                   "nested too deeply")
    one_line_error(kvlint("check", "long.json", cwd=tmp_path), "long.json",
                   "a number longer than 4300 digits")


def test_check_reads_a_config_with_a_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + PHI.read_bytes())
    plain = kvlint("check", str(PHI), "--format", "json", "--no-plugins", cwd=tmp_path)
    bom = kvlint("check", "bom.json", "--format", "json", "--no-plugins", cwd=tmp_path)
    assert bom.returncode == plain.returncode == 0, bom.stderr
    assert json.loads(bom.stdout)["results"][0]["kv"] == \
        json.loads(plain.stdout)["results"][0]["kv"]


# --- lint: bad files are findings, the rest of the run is kept --------------------------------


def test_lint_directory_with_fifo_device_and_link_loop(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    shutil.copy(CASE, deploy / "good.yaml")
    os.mkfifo(deploy / "fifo.yaml")
    (deploy / "a.yaml").symlink_to("b.yaml")
    (deploy / "b.yaml").symlink_to("a.yaml")
    (deploy / "zero.yaml").symlink_to("/dev/zero")
    start = time.monotonic()
    code, data = lint_json("deploy", "--model-map",
                           f"microsoft/Phi-3-medium-4k-instruct={PHI}", cwd=tmp_path)
    assert time.monotonic() - start < 60
    assert code == 1
    found = problems(data)
    assert found["deploy/fifo.yaml"][0] == "unreadable"
    assert "a FIFO" in found["deploy/fifo.yaml"][1]
    assert found["deploy/a.yaml"][0] == found["deploy/b.yaml"][0] == "unreadable"
    assert found["deploy/zero.yaml"][0] == "outside-tree"  # /dev/zero is not in the tree
    good = [r for r in data["results"] if r["target"]["path"] == "deploy/good.yaml"]
    assert good and good[0]["geometry"] is not None  # the rest of the run is kept


def test_links_out_of_the_tree_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = CASE.read_text(encoding="utf-8").replace(
        "microsoft/Phi-3-medium-4k-instruct", "ORG/SECRET-OUTSIDE-MODEL")
    (outside / "secret.yaml").write_text(secret, encoding="utf-8")
    repo = tmp_path / "repo"
    deploy = repo / "deploy"
    deploy.mkdir(parents=True)
    (deploy / "file.yaml").symlink_to(outside / "secret.yaml")
    (deploy / "dir.yaml").symlink_to(outside)  # a directory link named like a manifest
    (deploy / "sub").symlink_to(outside)
    (deploy / "root.yaml").symlink_to("/")
    (deploy / "inner.yaml").symlink_to("../real.yaml")  # inside the tree: read
    (repo / "real.yaml").write_text(secret.replace("SECRET-OUTSIDE", "INSIDE"))
    for args in (("deploy",), ("deploy/file.yaml", "deploy/root.yaml", "deploy/dir.yaml",
                               "deploy/inner.yaml")):
        start = time.monotonic()
        _, data = lint_json(*args, cwd=repo)
        assert time.monotonic() - start < 60  # a link to / is not walked
        text = json.dumps(data)
        assert "SECRET-OUTSIDE" not in text and str(outside) not in text
        assert "ORG/INSIDE-MODEL" in text
        found = problems(data)
        assert found["deploy/file.yaml"][0] == "outside-tree"
        if args != ("deploy",):  # links given by name are reported; walks skip dir links
            assert found["deploy/root.yaml"][0] == found["deploy/dir.yaml"][0] == \
                "outside-tree"
        paths = {r["target"]["path"] for r in data["results"]}
        assert not any(p.startswith(("deploy/sub", "deploy/dir.yaml/")) for p in paths)
    sarif = kvlint("lint", "deploy", "--isolated", "--no-plugins", "--offline", "--format",
                   "sarif", cwd=repo)
    assert "SECRET-OUTSIDE" not in sarif.stdout and str(outside) not in sarif.stdout


def test_a_local_model_path_outside_the_tree_is_not_read(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(PHI, model / "config.json")
    (repo / "deploy.yaml").write_text(CASE.read_text(encoding="utf-8").replace(
        "microsoft/Phi-3-medium-4k-instruct", str(model)), encoding="utf-8")
    _, data = lint_json("deploy.yaml", cwd=repo)
    [result] = data["results"]
    assert result["geometry"] is None
    assert any("outside the linted tree" in f["message"] for f in result["findings"])


def _without_root_powers() -> tuple[str, ...]:
    """A command prefix under which a directory with mode 000 cannot be listed."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("root reads any directory, and setpriv is not there to drop that")
    caps = "-dac_override,-dac_read_search"
    return ("setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", "--")


def test_an_unreadable_subdirectory_is_reported(tmp_path: Path) -> None:
    prefix = _without_root_powers()
    locked = tmp_path / "deploy" / "locked"
    locked.mkdir(parents=True)
    shutil.copy(CASE, tmp_path / "deploy" / "a.yaml")
    locked.chmod(0)
    try:
        _, data = lint_json("deploy", cwd=tmp_path, prefix=prefix)
    finally:
        locked.chmod(0o755)
    kind, message = problems(data)["deploy/locked"]
    assert kind == "unreadable" and "Permission denied" in message
    assert any(r["target"]["path"] == "deploy/a.yaml" for r in data["results"])


def test_ray_serve_references_stay_in_the_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "outside.yaml").write_text(
        "model_loading_config: {model_id: ORG/SECRET-OUTSIDE-MODEL}\n", encoding="utf-8")
    (repo / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    os.mkfifo(repo / "fifo.yaml")
    (repo / "serve.yaml").write_text("""applications:
- import_path: ray.serve.llm:build_openai_app
  args:
    llm_configs:
      - ../outside.yaml
      - ./link.yaml
      - ./fifo.yaml
""", encoding="utf-8")
    _, data = lint_json("serve.yaml", cwd=repo)
    text = json.dumps(data)
    assert "SECRET-OUTSIDE" not in text
    assert text.count("outside the linted tree") >= 2 and "a FIFO" in text


# --- JSON and YAML content ------------------------------------------------------------------


def test_lint_hostile_yaml_content(tmp_path: Path) -> None:
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + CASE.read_bytes())
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    (tmp_path / "deep.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "block.yaml").write_text(
        "".join(" " * i + f"k{i}:\n" for i in range(3000)) + " " * 3000 + "x: 1\n")
    (tmp_path / "long.yaml").write_text("a: " + "9" * 5000 + "\n")
    (tmp_path / "base60.yaml").write_text("a: " + ":".join(["1"] * 100_000) + "\n")
    (tmp_path / "date.yaml").write_text("a: 2024-13-01\n")
    start = time.monotonic()
    _, data = lint_json(".", "--model-map", f"microsoft/Phi-3-medium-4k-instruct={PHI}",
                        cwd=tmp_path)
    assert time.monotonic() - start < 60
    found = problems(data)
    assert "bom.yaml" not in found and "date.yaml" not in found
    for name in ("deep.yaml", "deep.json", "block.yaml"):
        assert found[name] == ("invalid-yaml",
                                      "invalid YAML: nesting deeper than 500 levels")
    assert found["long.yaml"][0] == found["base60.yaml"][0] == "invalid-yaml"
    assert "5,000 characters" in found["long.yaml"][1]
    bom = [r for r in data["results"] if r["target"]["path"] == "bom.yaml"]
    assert bom and bom[0]["geometry"] is not None


def _multi_document(count: int) -> str:
    return "---\n".join(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\n"
                        f"data:\n  k: v{i}\n" for i in range(count))


def test_multi_document_yaml_is_linear(tmp_path: Path) -> None:
    (tmp_path / "small.yaml").write_text(_multi_document(5_000))
    (tmp_path / "large.yaml").write_text(_multi_document(40_000))
    timings = []
    for name in ("small.yaml", "large.yaml"):
        start = time.monotonic()
        code, data = lint_json(name, cwd=tmp_path, timeout=120)
        timings.append(time.monotonic() - start)
        assert code == 0 and data["results"] == []
    # 8x the documents: linear is ~8x the time (less, with start-up); quadratic was ~64x
    assert timings[1] < 20 * timings[0], timings


def test_a_large_document_without_aliases_is_not_a_bomb(tmp_path: Path) -> None:
    args = "\n".join(f"            - --arg{i}=v" for i in range(100_000))
    text = CASE.read_text(encoding="utf-8").replace("          args:\n",
                                                    f"          args:\n{args}\n")
    assert args in text
    (tmp_path / "big.yaml").write_text(text, encoding="utf-8")
    _, data = lint_json("big.yaml", "--model-map",
                        f"microsoft/Phi-3-medium-4k-instruct={PHI}", cwd=tmp_path,
                        timeout=120)
    assert problems(data) == {}
    assert data["results"][0]["geometry"] is not None


def test_aliases_are_counted_by_what_they_reach(tmp_path: Path) -> None:
    lines = ["a: &a [" + ", ".join(["x"] * 1000) + "]"]
    lines.append("b: [" + ", ".join(["*a"] * 200) + "]")  # 200 x 1,001 nodes reached
    (tmp_path / "fanout.yaml").write_text("\n".join(lines) + "\n")
    (tmp_path / "strings.yaml").write_text(
        "s: &s " + "y" * 1_000_000 + "\nl: [" + ", ".join(["*s"] * 1000) + "]\n")
    _, data = lint_json(".", cwd=tmp_path)
    found = problems(data)
    assert found["fanout.yaml"][0] == found["strings.yaml"][0] == "alias-bomb"


# --- scan and settings ----------------------------------------------------------------------


def test_scan_reports_an_unreadable_source_and_keeps_scanning(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    os.mkfifo(src / "fifo.py")
    (src / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n")
    (src / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")
    done = kvlint("scan", "src", "--isolated", "--no-plugins", "--format", "json",
                  cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    found = {f["path"]: f["message"] for r in json.loads(done.stdout)["results"]
             for f in r["findings"] if f["code"] == "KV903"}
    assert set(found) == {"src/fifo.py"} and "a FIFO" in found["src/fifo.py"]


def test_a_settings_file_that_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "kvlint.toml")
    one_line_error(kvlint("check", str(PHI), "--config", "kvlint.toml", cwd=tmp_path,
                          timeout=30), "kvlint.toml")
    os.mkfifo(tmp_path / ".kvlint.toml")  # found by discovery, next to the linted files
    done = kvlint("check", str(PHI), cwd=tmp_path, timeout=30)
    assert done.returncode in (0, 1, 2) and "internal error" not in done.stderr
