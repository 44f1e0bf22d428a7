"""The real pre-commit, running this checkout's hook (`pre-commit try-repo`) on manifests.

pre-commit builds the hook's environment with virtualenv + pip. To keep the test off the
network, pip may not use an index and the hook's environment sees the site-packages of *this*
interpreter through ``PYTHONPATH`` (where kvlint's dependencies are installed, whether that is
a virtual environment or the base interpreter: virtualenv's "system site-packages" would be
the base interpreter's, which lacks them in a fresh venv). The model's config sits next to
the manifest, so no Hub access is needed either.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, ROOT

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
    from kvlint.lockfile import LockedModel, Lockfile

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
