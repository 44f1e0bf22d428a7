"""Fail fast and loud on the network, through the real CLI (``python -m kvlint`` in a child
process, empty Hugging Face cache, loopback servers only).

The time bounds are coarse upper bounds: they catch the old behaviour (11 minutes for the
corpus without network, ~394 s per model against a stalled Hub), not small regressions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.hub_server import FakeHub, StallServer, unused_port

CORPUS = ROOT / "fixtures" / "manifests"
CASES = ROOT / "fixtures" / "cases"
MODELS = ("Qwen/Qwen3-32B", "facebook/opt-125m", "meta-llama/Llama-3.1-8B-Instruct",
          "google/gemma-3-27b-it", "openai/gpt-oss-20b")
"""Some of the Hub models the corpus names."""


def kvlint(args: list[str], tmp_path: Path, endpoint: str,
           **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("HF_", "HUGGING", "KVLINT_HUB", "TRANSFORMERS_OFFLINE"))}
    environ.update(PYTHONPATH=str(ROOT), HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"),
                   HF_HUB_DISABLE_PROGRESS_BARS="1", **env)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kvlint", *args], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=300)
    return proc, time.monotonic() - started


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kvlint: error: ") and "Traceback" not in proc.stderr
    return lines[0]


def test_corpus_without_network_exits_2_naming_the_models(tmp_path: Path) -> None:
    proc, seconds = kvlint(["lint", str(CORPUS), "--format", "json"], tmp_path,
                           f"http://127.0.0.1:{unused_port()}")
    print(f"corpus, connection refused, empty cache: {seconds:.2f} s")
    assert proc.returncode == 2
    assert seconds < 60  # measured ~2.5 s; it was 11 minutes
    line = one_line(proc)
    assert "models could not be fetched from the Hugging Face Hub: " in line
    assert "Connection refused" in line
    unavailable = [r["target"]["ref"] for r in json.loads(proc.stdout)["results"]
                   if r.get("unavailable")]
    assert set(MODELS) <= set(unavailable)
    assert all(ref in line for ref in unavailable)
    assert not (tmp_path / "hf" / "hub").exists() or \
        not any((tmp_path / "hf" / "hub").rglob("*.json"))


def test_corpus_against_a_stalled_hub_ends_within_the_deadline(tmp_path: Path) -> None:
    with StallServer() as server:
        proc, seconds = kvlint(["lint", str(CORPUS)], tmp_path, server.url)
        connections = server.connections
    print(f"corpus, Hub accepts and never answers: {seconds:.2f} s, "
          f"{connections} connection(s)")
    assert proc.returncode == 2
    assert seconds < 30  # the default deadline; one 5 s read timeout in fact
    assert connections == 1  # one request for the endpoint, whatever the number of models
    assert "no answer within 5 s (ReadTimeout)" in one_line(proc)


def test_deadline_holds_against_a_trickling_hub(tmp_path: Path) -> None:
    with FakeHub() as hub:
        for model in MODELS:
            hub.add_repo(model, {"config.json": b"{}"})
        hub.misbehave = "trickle"
        proc, seconds = kvlint(["lint", str(CORPUS)], tmp_path, hub.url,
                               KVLINT_HUB_DEADLINE="3")
    assert proc.returncode == 2
    assert seconds < 20
    assert "kvlint's 3 s for Hub access in this run are spent" in one_line(proc)


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    text = (CASES / "vllm-phi3-medium-tp8.yaml").read_text()
    root = tmp_path / "deploy"
    root.mkdir()
    for name in ("org/gated", "org/missing", "org/public"):
        (root / f"{name.replace('/', '-')}.yaml").write_text(
            text.replace("microsoft/Phi-3-medium-4k-instruct", name))
    return root


def test_auth_failure_exits_2_and_a_missing_repo_is_kv902(tmp_path: Path,
                                                         manifests: Path) -> None:
    config = (ROOT / "fixtures" / "configs" / "microsoft--Phi-3-medium-4k-instruct.json"
              ).read_bytes()
    with FakeHub() as hub:
        hub.add_repo("org/gated", {"config.json": config}, gated=True)
        hub.add_repo("org/public", {"config.json": config})
        proc, _ = kvlint(["lint", str(manifests), "--format", "json", "--isolated"], tmp_path,
                         hub.url)
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith("kvlint: error: 1 model could not be fetched from the Hugging Face "
                           "Hub: org/gated; first error: Hugging Face repo 'org/gated' is gated")
    by_ref = {r["target"]["ref"]: r for r in json.loads(proc.stdout)["results"]}
    assert ("KV902", "warning") in \
        [(f["code"], f["severity"]) for f in by_ref["org/missing"]["findings"]]
    assert "KV202" in {f["code"] for f in by_ref["org/public"]["findings"]}  # still checked
    gated = by_ref["org/gated"]
    # no model finding (no KV902); the GPU count is still checked
    assert [f["code"] for f in gated["findings"]] == ["KV206"] and gated["unavailable"]


def test_check_without_network_is_one_line(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{unused_port()}"
    proc, seconds = kvlint(["check", "org/a", "org/b"], tmp_path, endpoint)
    assert proc.returncode == 2 and seconds < 30
    assert one_line(proc).startswith(f"kvlint: error: Could not reach the Hugging Face Hub at "
                                     f"{endpoint} to fetch org/a")
