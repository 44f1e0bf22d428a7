"""What a file in the wild must not do to a lint: one unreadable document hides the others;
an engine command in a format kvlint does not read passes in silence (KV904); a value the
engine refuses (or that the manifest leaves unset) becomes findings about a deployment nobody
wrote (cascades)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.base import ManifestProblem
from kvlint.manifests.yaml_marks import PartialDocuments, load_documents
from tests.helpers import CONFIGS

QWEN3 = ["--model-map", f"Qwen/Qwen3-8B={CONFIGS / 'Qwen--Qwen3-8B.json'}"]


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def lint(path: Path, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--isolated",
                                       "--no-cache", "--format", "json", *QWEN3, *extra])
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    return result.exit_code, [f for r in data["results"] for f in r["findings"]]


def brief(findings: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    return sorted((f["code"], f["severity"], f["line"]) for f in findings)


SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: hf
stringData:
  token: {{HF_TOKEN}}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: qwen3
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args: ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "{tp}"]
          resources:
            limits:
              nvidia.com/gpu: {gpus}
"""


# --- one document does not hide the others ---------------------------------------------


def test_a_stray_placeholder_skips_its_document_only(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(SECRET + "---\n" + DEPLOYMENT.format(tp=16, gpus=16), encoding="utf-8")
    docs = load_documents(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(docs, PartialDocuments)
    assert docs[0] is None and docs[1]["kind"] == "Deployment"
    assert docs[1].line == 8  # lines stay the file's
    assert [(p.kind, p.line) for p in docs.problems] == [("template-placeholder", 6)]
    code, findings = lint(path)
    # the Deployment is linted (tp=16 over Qwen3-8B's 8 KV heads), the Secret is an info
    assert brief(findings) == [("KV201", "warning", 18), ("KV903", "info", 6)]
    assert code == 0


def test_a_placeholder_in_the_document_that_runs_the_engine_is_an_error(
        tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    broken = DEPLOYMENT.format(tp="{{TP}}", gpus=8).replace('"{{TP}}"', "{{TP}}")
    path.write_text(SECRET.replace("{{HF_TOKEN}}", "x") + "---\n" + broken, encoding="utf-8")
    code, findings = lint(path)
    assert brief(findings) == [("KV903", "error", 18)]
    assert "runs an engine" in findings[0]["message"]
    assert code == 1


def test_a_helm_template_is_still_one_info_for_the_whole_file(tmp_path: Path) -> None:
    chart = tmp_path / "chart" / "templates"
    chart.mkdir(parents=True)
    path = chart / "deploy.yaml"
    path.write_text(SECRET + "---\n" + DEPLOYMENT.format(tp=16, gpus=16), encoding="utf-8")
    loaded = load_documents(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(loaded, ManifestProblem) and loaded.kind == "helm-template"
    values = tmp_path / "values.yaml"
    values.write_text(SECRET.replace("{{HF_TOKEN}}", "{{ .Values.token }}") + "---\n"
                      + DEPLOYMENT.format(tp=16, gpus=16), encoding="utf-8")
    loaded = load_documents(values.read_text(encoding="utf-8"), str(values))
    assert isinstance(loaded, ManifestProblem) and loaded.kind == "helm-template"


def test_every_document_unreadable_is_one_problem(tmp_path: Path) -> None:
    text = "a: [1\n---\nb: {2\n"
    loaded = load_documents(text, "x.yaml")
    assert isinstance(loaded, ManifestProblem) and loaded.kind == "invalid-yaml"


# --- an engine command nobody read -------------------------------------------------------


@pytest.mark.parametrize(("text", "line"), [
    ("apiVersion: example.com/v1\nkind: MyServing\nspec:\n  # vllm serve is started below\n"
     "  launch: \"vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 8\"\n", 5),
    ("kind: Platform\nspec:\n  runtime:\n    image: vllm/vllm-openai:v0.9.2\n", 4),
    ("kind: Job\nspec:\n  script: python -m sglang.launch_server --model-path x/y\n", 3),
    # a compose command is the image's CMD: the engine image's entrypoint still runs
    ("services:\n  llm:\n    image: lmsysorg/sglang:v0.5.5\n"
     "    command: --model-path org/m\n", 3),
    # an engine's own image as a build argument; llama-cpp-python's server
    ("services:\n  llm:\n    build:\n      args:\n        - BASE_IMAGE=vllm/vllm-openai:latest\n"
     "    command: [/serve.sh]\n", 5),
    ("kind: Job\nspec:\n  script: python3 -m llama_cpp.server --model m.gguf\n", 3),
    # a custom image's own start script, configured by the variables it passes on
    ("kind: Pod\nspec:\n  containers:\n  - image: registry.example.com/team/llm:1\n"
     "    command: [/entrypoint.sh]\n    env:\n    - name: VLLM_MAX_MODEL_LEN\n"
     "      value: \"2048\"\n", 7),
])
def test_an_engine_in_an_unread_format_is_kv904(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "custom.yaml"
    path.write_text(text, encoding="utf-8")
    code, findings = lint(path)
    assert brief(findings) == [("KV904", "warning", line)]
    assert "kvlint found no served model in it" in findings[0]["message"]
    assert code == 0


@pytest.mark.parametrize("text", [
    "kind: Job\nspec:\n  script: uv pip install vllm serve\n",  # an install, not a launch
    "kind: Job\nspec:\n  image: vllm/vllm-openai:v0.9.2\n  command: [python, bench.py]\n",
    "kind: ConfigMap\ndata:\n  notes: the team runs sglang on another cluster\n",
    "kind: ConfigMap\ndata:\n  notes: max_model_len is set elsewhere\n",  # not a variable
])
def test_no_kv904_without_an_engine_launch(tmp_path: Path, text: str) -> None:
    path = tmp_path / "other.yaml"
    path.write_text(text, encoding="utf-8")
    assert lint(path)[1] == []


# --- no cascades from a value kvlint had to guess -----------------------------------------


def test_a_refused_tp_drops_what_follows_from_the_default(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(tp="eight", gpus=8), encoding="utf-8")
    code, findings = lint(path)
    # not "tp=1 needs 1 GPU, 7 stay idle" (KV206): tp=1 is vLLM's default, not the manifest's
    assert brief(findings) == [("KV702", "error", 11)]
    assert findings[0]["message"].endswith("; kvlint skipped KV206: it depends on this tp.")
    assert code == 1


def test_another_engines_spelling_is_named_and_its_cascade_dropped(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(tp=8, gpus=8).replace("--tensor-parallel-size",
                                                            "--tp-size"), encoding="utf-8")
    _, findings = lint(path)
    assert brief(findings) == [("KV701", "error", 11)]
    assert "--tp-size is another engine's spelling; vLLM's is --tensor-parallel-size" in \
        findings[0]["message"]


def test_an_option_and_its_value_in_one_argument_is_refused_without_cascade(
        tmp_path: Path) -> None:
    """``- --tensor-parallel-size 2`` is one argv word: argparse takes a word holding a space
    for a positional and refuses it whole, so tp stays vLLM's default and KV206 ("tp=1
    needs 1 GPU") would be about a deployment nobody wrote."""
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(tp=8, gpus=8).replace(
        '"--tensor-parallel-size", "8"', '"--tensor-parallel-size 8"'), encoding="utf-8")
    _, findings = lint(path)
    assert brief(findings) == [("KV701", "error", 11)]
    message = findings[0]["message"]
    assert "give them as two arguments (--tensor-parallel-size, then 8)" in message
    assert message.endswith("; kvlint skipped KV206: it depends on this tp.")


def test_an_unset_variable_drops_what_follows_from_the_default(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(DEPLOYMENT.format(tp="$(TP)", gpus=8), encoding="utf-8")
    assert lint(path)[1] == []


def test_findings_about_values_that_were_read_stay(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    text = DEPLOYMENT.format(tp="eight", gpus=8).replace(
        '"eight"]', '"eight", "--max-model-len", "65536"]')
    path.write_text(text, encoding="utf-8")
    _, findings = lint(path)
    # max_model_len was read: KV703 stays (over Qwen3-8B's 40,960 tokens)
    assert [f["code"] for f in findings] == ["KV702", "KV703"]


def test_statistics_count_engine_commands_read_and_not(tmp_path: Path) -> None:
    """``--statistics`` keeps ruff's table on stdout and writes the engine-command count to
    stderr: one Deployment read as a served model, one file kvlint could not read."""
    (tmp_path / "deploy.yaml").write_text(DEPLOYMENT.format(tp=8, gpus=8), encoding="utf-8")
    (tmp_path / "custom.yaml").write_text(
        "kind: MyServing\nspec:\n  launch: vllm serve Qwen/Qwen3-8B\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(tmp_path), "--no-plugins", "--isolated",
                                       "--no-cache", "--statistics", *QWEN3])
    assert result.stdout == "1\tKV904\tengine-command-not-understood\n"
    assert result.stderr == ("# engine commands: 1 read as served models, 1 in files kvlint "
                             "could not read (KV904)\n")


def test_program_source_is_not_read_as_yaml(tmp_path: Path) -> None:
    """A Python file named on the command line is not "invalid YAML": one whose engine
    command kvlint reads is a served model, one it cannot read is KV904 (nothing checked, a
    warning); prose is an info."""
    app = tmp_path / "serve.py"
    app.write_text('import subprocess\n\nsubprocess.run(["vllm", "serve", "Qwen/Qwen3-8B",\n'
                   '                "--tensor-parallel-size", "2"])\n', encoding="utf-8")
    code, findings = lint(app)  # read: only the info that no version is pinned
    assert code == 0 and brief(findings) == [("KV304", "info", 3)]
    opaque = tmp_path / "launch.py"
    opaque.write_text("import subprocess, sys\n\nsubprocess.run(['python', '-m', "
                      "'vllm.entrypoints.openai.api_server', *sys.argv[1:]])\n",
                      encoding="utf-8")
    code, findings = lint(opaque)
    assert code == 0
    assert brief(findings) == [("KV904", "warning", 3)]
    plain = tmp_path / "util.py"  # a program that starts no engine, like such a script
    plain.write_text("x = 1\n", encoding="utf-8")
    assert lint(plain, "--verbose") == (0, [])
    terraform = tmp_path / "main.tf"  # HCL, not YAML: nothing in it was checked
    terraform.write_text('module "tgi" {\n  source = "../../"\n  quantize = "bitsandbytes"\n}\n',
                         encoding="utf-8")
    code, findings = lint(terraform, "--verbose")
    assert code == 0
    assert [(f["code"], f["severity"]) for f in findings] == [("KV903", "info")]
    notes = tmp_path / "notes.md"  # prose is never a manifest: nothing in it was checked
    notes.write_text("x: 1\n", encoding="utf-8")
    code, findings = lint(notes, "--verbose")
    assert code == 0
    assert [(f["code"], f["severity"]) for f in findings] == [("KV903", "info")]


def test_build_files_are_not_read_as_yaml(tmp_path: Path) -> None:
    """A Makefile is read as the commands its recipes run; a build file kvlint does not read
    (a Justfile) that starts an engine is KV904."""
    makefile = tmp_path / "Makefile"
    makefile.write_text("serve:\n\tvllm serve Qwen/Qwen3-8B --tensor-parallel-size 1\n",
                        encoding="utf-8")
    code, findings = lint(makefile)
    assert code == 0 and brief(findings) == [("KV304", "info", 2)]


@pytest.mark.parametrize(("name", "codes"), [
    ("GNUmakefile", ["KV304"]), ("makefile", ["KV304"]), ("serve.mk", ["KV304"]),
    ("Justfile", ["KV904"])])
def test_build_file_names(tmp_path: Path, name: str, codes: list[str]) -> None:
    build = tmp_path / name
    build.write_text("serve:\n\tpython3 -m sglang.launch_server --model-path Qwen/Qwen3-8B\n",
                     encoding="utf-8")
    code, findings = lint(build)
    assert code == 0 and [f["code"] for f in findings] == codes
