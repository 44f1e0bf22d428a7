"""The hot path stays light: no transformers, torch or huggingface_hub at CLI start-up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CONFIGS, ROOT

HEAVY = ("transformers", "torch", "huggingface_hub", "numpy", "httpx", "prometheus_client",
         "matplotlib")


def _modules_after(code: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=120)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_imports_nothing_heavy() -> None:
    loaded = _modules_after("import sys, json, kvlint.cli; print(json.dumps(list(sys.modules)))")
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def test_checking_a_complete_local_config_imports_nothing_heavy() -> None:
    config = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
    code = (
        "import sys, json\n"
        "from click.testing import CliRunner\n"
        "from kvlint.cli import main\n"
        f"r = CliRunner().invoke(main, ['check', {config!r}, '--format', 'json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(json.dumps(list(sys.modules)))\n"
    )
    loaded = _modules_after(code)
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


@pytest.mark.skipif(shutil.which("kvlint") is None, reason="console script not installed")
def test_console_script_runs() -> None:
    env = {**os.environ, "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.run(
        ["kvlint", "check", str(CONFIGS / "deepseek-ai--DeepSeek-V2.5.json"), "--tp", "16",
         "--format", "json"], capture_output=True, text=True, env=env, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    kv = json.loads(proc.stdout)["results"][0]["kv"]
    assert (kv["bytes_per_token"], kv["replication_factor"]) == (69_120, 16.0)


def test_python_dash_m() -> None:
    proc = subprocess.run([sys.executable, "-m", "kvlint", "--version"], capture_output=True,
                          text=True, cwd=ROOT, check=False, timeout=60)
    assert proc.returncode == 0
    assert proc.stdout.startswith("kvlint, version ")


LIGHT_FORBIDDEN = ("pydantic", "yaml", "kvlint.engines", "kvlint.rules", "kvlint.registry",
                   "kvlint.settings", "kvlint.linter", "kvlint.suppress", "kvlint.plugins")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["check", "--help"]])
def test_version_and_help_import_no_engine_table_rules_or_pydantic(argv: list[str]) -> None:
    code = (
        "import sys, json\n"
        f"sys.argv = ['kvlint', *{argv!r}]\n"
        "from kvlint.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(json.dumps(list(sys.modules)))\n"
    )
    loaded = _modules_after(code)
    assert not {m for m in loaded
                if m.split(".")[0] in HEAVY or m.startswith(LIGHT_FORBIDDEN)}


LINT_MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llama
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command: ["vllm", "serve"]
          args: ["meta-llama/Llama-3.1-8B", "--tensor-parallel-size", "2"]
          resources:
            limits:
              nvidia.com/gpu: 2
"""

LINT_LAZY = ("kvlint.manifests.kubernetes_crds", "kvlint.manifests.compose",
             "kvlint.manifests.launchers", "kvlint.manifests.helm",
             "kvlint.reporters.text",
             "kvlint.reporters.concise", "kvlint.reporters.sarif", "kvlint.reporters.github",
             "kvlint.reporters.markdown", "kvlint.reporters.junit",
             "kvlint.reporters.geometry_text", "kvlint.loaders.hub_guard", "multiprocessing",
             "packaging.requirements", "logging", "pydantic", "tabulate", "email",
             "jsonschema", "importlib.metadata")


def _lint_code(tmp_path: Path, cache: Path | None = None) -> str:
    """A script that lints one Deployment (``--format json``) whose model config is a local
    file, then prints the modules it imported; ``cache``: with the result cache there."""
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(LINT_MANIFEST, encoding="utf-8")
    config = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
    setup = "" if cache is None else (
        f"os.environ['KVLINT_CACHE_DIR'] = {str(cache)!r}\n"
        "os.environ.pop('KVLINT_NO_CACHE', None)\n")
    return (
        "import sys, json, os\n"
        f"{setup}"
        f"sys.argv = ['kvlint', 'lint', {str(manifest)!r}, '--format', 'json', "
        f"'--model-map', 'meta-llama/Llama-3.1-8B={config}']\n"
        "from kvlint.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert e.code in (0, 1), e.code\n"
        "print()\n"
        "print(json.dumps(list(sys.modules)))\n"
    )


def test_one_manifest_lint_imports_only_what_it_uses(tmp_path: Path) -> None:
    """``kvlint lint`` of one Deployment (``--format json``) whose model config is a local
    file: the other manifest parsers, the other formats, the Hub guard, multiprocessing and
    pip-requirement parsing stay unimported (bench/startup_ratios.py's scenario)."""
    code = _lint_code(tmp_path)
    loaded = _modules_after(code)
    assert "kvlint.manifests.kubernetes" in loaded  # the parser it needs
    assert "kvlint.reporters.json" in loaded
    assert not {m for m in loaded if m.startswith(LINT_LAZY) or m.split(".")[0] in HEAVY}


def test_a_cached_lint_imports_neither_the_yaml_loader_nor_the_parsers(tmp_path: Path) -> None:
    """The same lint run twice with the result cache: the second, every file unchanged,
    reads its results from the cache without importing PyYAML or any manifest parser."""
    code = _lint_code(tmp_path, cache=tmp_path / "cache")
    first = _modules_after(code)
    assert "yaml" in first and "kvlint.manifests.kubernetes" in first
    second = _modules_after(code)
    assert "kvlint.lint.cache" in second
    assert not {m for m in second if m.split(".")[0] == "yaml" or
                m.startswith(("kvlint.manifests.kubernetes",
                              "kvlint.manifests.yaml_marks",
                              "kvlint.manifests.shell_words",
                              "kvlint.manifests.shell_env",
                              "kvlint.manifests.engine_command"))}
