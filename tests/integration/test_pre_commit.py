"""The real pre-commit, running this checkout's hook (`pre-commit try-repo`) on manifests.

pre-commit builds the hook's environment with virtualenv + pip. To keep the test off the
network, pip may not use an index and the hook's environment sees the site-packages of *this*
interpreter through ``PYTHONPATH`` (where kvlint's dependencies are installed, whether that is
a virtual environment or the base interpreter: virtualenv's "system site-packages" would be
the base interpreter's, which lacks them in a fresh venv). The model's config sits next to
the manifest, so no Hub access is needed either.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import shutil
import site
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, ROOT, framed

pytestmark = pytest.mark.skipif(shutil.which("pre-commit") is None or
                                shutil.which("git") is None,
                                reason="pre-commit and git are needed")

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: phi3
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          command: ["vllm", "serve", "./models/phi-3-medium"]
          args:
            - --tensor-parallel-size
            - "{tp}"
          resources:
            limits:
              nvidia.com/gpu: "{tp}"
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("pre-commit-home")
    return {
        **os.environ,
        "PRE_COMMIT_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(_site_packages()),
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "false",  # pip reads "no-" options inverted: false = off
        "HF_HUB_OFFLINE": "1",
        "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1",
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }


def _site_packages() -> list[str]:
    """This interpreter's installed-packages directories (venv or not)."""
    found = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
             *site.getsitepackages()]
    return list(dict.fromkeys(p for p in found if os.path.isdir(p)))


def _repo(tmp_path: Path, tp: int) -> Path:
    repo = tmp_path / "deploy-repo"
    (repo / "models" / "phi-3-medium").mkdir(parents=True)
    shutil.copy(CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json",
                repo / "models" / "phi-3-medium" / "config.json")
    (repo / "phi3.yaml").write_text(MANIFEST.format(tp=tp))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    return repo


def _try_repo(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["pre-commit", "try-repo", str(ROOT), "kvlint", "--files", "phi3.yaml", "--verbose"],
        cwd=repo, env=env, text=True, capture_output=True, timeout=900, check=False)


def test_hook_fails_on_an_engine_refused_tp(tmp_path: Path, env: dict[str, str]) -> None:
    proc = _try_repo(_repo(tmp_path, 8), env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Failed" in out
    assert "phi3.yaml:13:" in out and "KV202" in out  # on the line of the tp flag
    assert "Traceback" not in out
    # PRE_COMMIT=1: one line per finding (concise), at the flag's column
    assert "phi3.yaml:13:15: KV202 vLLM 0.8.5 refuses tp=8 for 10 KV heads" in out


HUB_MANIFEST = MANIFEST.replace("./models/phi-3-medium", "microsoft/Phi-3-medium-4k-instruct")


def test_hook_reads_hub_models_from_the_lock_only(tmp_path: Path, env: dict[str, str]) -> None:
    """The hook's default `--locked`: a Hub model comes from the committed kvlint.lock (no
    network, no cache); without the lock the hook fails and says to run `kvlint lock`."""
    from kvlint.lock.format import LockedModel, Lockfile

    repo = _repo(tmp_path, 8)
    (repo / "phi3.yaml").write_text(HUB_MANIFEST.format(tp=8))
    hermetic = {**env, "HF_HUB_CACHE": str(tmp_path / "empty-cache"),
                "HF_ENDPOINT": "http://127.0.0.1:9"}
    proc = _try_repo(repo, hermetic)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert ("kvlint: error: the run is locked but there is no kvlint.lock to read "
            "microsoft/Phi-3-medium-4k-instruct from; run `kvlint lock`") in out

    config = json.loads((CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json").read_text())
    lock = Lockfile({"microsoft/Phi-3-medium-4k-instruct": LockedModel(
        "microsoft/Phi-3-medium-4k-instruct", "c" * 40, config)})
    (repo / "kvlint.lock").write_text(lock.dumps())
    proc = _try_repo(repo, hermetic)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "phi3.yaml:13:" in out and "KV202" in out  # the verdict, from the lock
    assert "KV902" not in out and "Traceback" not in out


def test_hook_passes_on_a_valid_tp(tmp_path: Path, env: dict[str, str]) -> None:
    proc = _try_repo(_repo(tmp_path, 2), env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Passed" in out


def test_scan_hook_reuses_its_result_cache(tmp_path: Path, env: dict[str, str]) -> None:
    """The `kvlint-scan` hook on a staged module that copies KV heads (KV401, a warning: the
    hook passes and prints it) fills the scan cache in kvlint's cache directory; run again, it
    reports from that cache instead of analysing the module again."""
    from tests.helpers import GQA_SOURCE

    repo = tmp_path / "engine-repo"
    repo.mkdir()
    (repo / "attn.py").write_text(GQA_SOURCE, encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    cache = tmp_path / "kvlint-cache"
    cached = {**env, "KVLINT_CACHE_DIR": str(cache)}
    cached.pop("KVLINT_NO_CACHE", None)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["pre-commit", "try-repo", str(ROOT), "kvlint-scan", "--files", "attn.py",
             "--verbose"], cwd=repo, env=cached, text=True, capture_output=True,
            timeout=900, check=False)

    first = run()
    out = first.stdout + first.stderr
    assert first.returncode == 0, out
    assert "attn.py:12:22: KV401 key_states is expanded by repeat_kv" in out
    # the entry's message marked: a second run that reads the cache prints the mark
    (written,) = (cache / "scan").glob("*.pickle")
    header = b"kvlint-scan-cache\n"
    layout, fingerprint, entries, stats = pickle.loads(written.read_bytes()[len(header) + 32:])
    [(key, entry)] = entries.items()
    marked = tuple(dataclasses.replace(f, message=f"{f.message} [from the cache]")
                   for f in entry.outcome.findings)
    entries[key] = dataclasses.replace(
        entry, outcome=dataclasses.replace(entry.outcome, findings=marked))
    written.write_bytes(framed(header, pickle.dumps((layout, fingerprint, entries, stats))))
    second = run()
    again = second.stdout + second.stderr
    assert second.returncode == 0, again
    assert "attn.py:12:22: KV401 key_states is expanded by repeat_kv" in again
    assert again.count("[from the cache]") == out.count("KV401 ") > 0
