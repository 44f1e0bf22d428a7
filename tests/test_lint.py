"""`kvlint lint`: manifests end to end, findings on their lines, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from tests.helpers import CONFIGS, ROOT
from tests.hub_server import FakeHub

CASES = ROOT / "fixtures" / "cases"
CORPUS = ROOT / "fixtures" / "manifests"
MAP = [
    "--model-map", f"microsoft/Phi-3-medium-4k-instruct="
                   f"{CONFIGS / 'microsoft--Phi-3-medium-4k-instruct.json'}",
    "--model-map", f"deepseek-ai/DeepSeek-V3={CONFIGS / 'deepseek-ai--DeepSeek-V3.json'}",
    "--model-map", f"meta-llama/Llama-3.1-8B-Instruct="
                   f"{CONFIGS / 'meta-llama--Meta-Llama-3.1-8B.json'}",
]


@pytest.fixture(autouse=True)
def _offline_empty_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def lint(*args: str) -> Result:
    return CliRunner().invoke(main, ["lint", *args, "--no-plugins"])


def lint_json(*args: str) -> tuple[int, dict[str, Any]]:
    result = lint(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    jsonschema.validate(data, schema)
    return result.exit_code, data


def findings(data: dict[str, Any]) -> list[tuple[str, int | None, str]]:
    return sorted((Path(f["path"]).name, f["line"], f["code"])
                  for r in data["results"] for f in r["findings"])


def test_synthetic_cases_each_finding_on_its_line() -> None:
    code, data = lint_json(str(CASES), *MAP)
    assert code == 1
    assert findings(data) == [
        ("billion-laughs.yaml", 6, "KV903"),
        ("invalid.yaml", 5, "KV903"),
        ("sglang-deepseek-tp8-old.yaml", 4, "KV301"),
        ("tgi-llama31-numshard16.yaml", 16, "KV202"),
        ("vllm-phi3-medium-tp8.yaml", 11, "KV303"),   # the image carries the version
        ("vllm-phi3-medium-tp8.yaml", 14, "KV202"),   # the --tensor-parallel-size flag
        ("vllm-phi3-medium-tp8.yaml", 20, "KV206"),   # the nvidia.com/gpu request
    ]
    by_ref = {r["target"]["ref"]: r for r in data["results"] if r["geometry"]}
    phi = by_ref["microsoft/Phi-3-medium-4k-instruct"]
    assert phi["target"]["kind"] == "manifest" and phi["target"]["line"] == 12
    assert phi["serving"] == {
        "engine": "vllm", "engine_version": "0.8.5", "tp": 8, "pp": 1, "dp": 1,
        "dp_attention": False, "kv_cache_dtype": "fp8", "gpu": None, "max_model_len": None,
        "max_num_seqs": None}
    kv206 = next(f for r in data["results"] for f in r["findings"] if f["code"] == "KV206")
    assert kv206["data"] == {"requested": 4, "needed": 8}


def test_text_output_is_findings_only() -> None:
    out = lint(str(CASES / "vllm-phi3-medium-tp8.yaml"), *MAP).stdout
    assert out.startswith(f"{CASES / 'vllm-phi3-medium-tp8.yaml'}:14:15: "
                          "microsoft/Phi-3-medium-4k-instruct  KV202 error")
    assert "attention" not in out.split("\n")[0]
    assert out.rstrip().endswith("1 served model in 1 file · 2 errors · 1 info · "
                                 "exit 1 (fail-on: error)")


def test_billion_laughs_is_refused_quickly() -> None:
    start = time.monotonic()
    result = lint(str(CASES / "billion-laughs.yaml"))
    assert time.monotonic() - start < 5
    assert result.exit_code == 1 and "YAML bomb" in result.stdout


def test_whole_corpus_runs_without_tracebacks() -> None:
    result = lint(str(CORPUS), "--offline", "--format", "json")
    # offline with an empty cache: the Hub models were not checked, so exit 2 with one line;
    # references no network could resolve (local paths, placeholders) are KV902 warnings
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("kvlint: error: ") and "could not be fetched" in line
    data = json.loads(result.stdout)
    jsonschema.validate(data, json.loads(CliRunner().invoke(main, ["schema"]).stdout))
    results = data["results"]
    assert len(results) >= 50
    assert all(r["target"]["kind"] == "manifest" for r in results)
    unavailable = {r["target"]["ref"] for r in results if r.get("unavailable")}
    assert {"Qwen/Qwen3-32B", "facebook/opt-125m"} <= unavailable
    assert all(ref in line for ref in unavailable)
    codes = {f["code"] for r in results for f in r["findings"]}
    # KV702: llm-d's wide-EP decode worker passes --kv-cache-memory-bytes=${VAR-} with VAR
    # set nowhere in the manifest: an empty value, which vLLM's human_readable_int refuses
    assert codes <= {"KV902", "KV903", "KV206", "KV701", "KV702"}
    assert {f["severity"] for r in results for f in r["findings"]
            if f["code"] == "KV902"} == {"warning"}
    # no engine refusal: --swap-space on a Vertex image dated 2025-03-12 is judged by the
    # releases around that day, which have it; --prefill-round-robin-balance under a Dynamo
    # runtime's custom tag runs on a version nothing names: the newest releases lack it, so
    # a warning that names the last release accepting it
    refused = sorted((Path(f["path"]).name, f["line"], f["data"]["option"], f["severity"])
                     for r in results for f in r["findings"] if f["code"] == "KV701")
    assert refused == [("dgd-sglang-deepseek-r1-disagg-tp8-dp-attention.yaml", 65,
                        "--prefill-round-robin-balance", "warning")]
    helm = [f for r in results for f in r["findings"] if f["code"] == "KV903"]
    assert [(Path(f["path"]).name, f["severity"]) for f in helm] == \
        [("helm-template-silogen-deployment-unrendered.yaml", "info")]
    # text-embeddings services are not engines: the OPEA compose file serves one LLM
    opea = [r for r in results if r["target"]["path"].endswith("compose-opea-chatqna-tgi-"
                                                               "envvar-model.yaml")]
    assert [r["target"]["ref"] for r in opea] == ["${LLM_MODEL_ID}"]
    # no served model is made up from comments
    tgi_chart = [r for r in results if "model-only-in-comments" in r["target"]["path"]]
    assert [r["target"]["ref"] for r in tgi_chart] == ["(unknown model)"]


def test_a_triton_repository_is_read_by_default(tmp_path: Path) -> None:
    """A directory's ``config.pbtxt`` files are read without ``--include`` (Triton's model
    configs): the TensorRT-LLM one serves its engine; a Python backend's serves nothing and
    says nothing."""
    llm = tmp_path / "repo" / "tensorrt_llm"
    post = tmp_path / "repo" / "postprocessing"
    llm.mkdir(parents=True)
    post.mkdir()
    (llm / "config.pbtxt").write_text(
        'name: "tensorrt_llm"\nbackend: "tensorrtllm"\nparameters: {\n  key: "gpt_model_path"'
        '\n  value: { string_value: "/engines/llama" }\n}\n', encoding="utf-8")
    (post / "config.pbtxt").write_text('name: "postprocessing"\nbackend: "python"\n',
                                       encoding="utf-8")
    result = lint(str(tmp_path / "repo"), "--format", "json", "--offline")
    rows = json.loads(result.stdout)["results"]
    assert [(r["target"]["ref"], r["serving"]["engine"]) for r in rows] == [
        ("/engines/llama", "trtllm")], result.stdout


def test_include_and_exclude(tmp_path: Path) -> None:
    shutil.copy(CASES / "vllm-phi3-medium-tp8.yaml", tmp_path / "a.yaml")
    shutil.copy(CASES / "vllm-phi3-medium-tp8.yaml", tmp_path / "b.manifest")
    _, only_yaml = lint_json(str(tmp_path), *MAP)
    assert {Path(r["target"]["path"]).name for r in only_yaml["results"]} == {"a.yaml"}
    _, custom = lint_json(str(tmp_path), "--include", "*.manifest", *MAP)
    assert {Path(r["target"]["path"]).name for r in custom["results"]} == {"b.manifest"}
    _, excluded = lint_json(str(tmp_path), "--exclude", "a.*", *MAP)
    assert excluded["results"] == []


def test_local_model_directory_next_to_the_manifest(tmp_path: Path) -> None:
    (tmp_path / "models" / "phi").mkdir(parents=True)
    shutil.copy(CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json",
                tmp_path / "models" / "phi" / "config.json")
    text = (CASES / "vllm-phi3-medium-tp8.yaml").read_text().replace(
        "microsoft/Phi-3-medium-4k-instruct", "./models/phi")
    (tmp_path / "deploy.yaml").write_text(text)
    _, data = lint_json(str(tmp_path / "deploy.yaml"))
    assert "KV202" in {f["code"] for r in data["results"] for f in r["findings"]}


def test_unmapped_local_path_is_kv902() -> None:
    _, data = lint_json(str(CORPUS / "vllm" / "helm-values-chart-helm-opt125m-localpath.yaml"))
    [result] = data["results"]
    [finding] = result["findings"]
    assert finding["code"] == "KV902"
    assert "--model-map /data/=ORG/NAME" in finding["message"]
    mapped = lint_json(str(CORPUS / "vllm" / "helm-values-chart-helm-opt125m-localpath.yaml"),
                       "--model-map", f"/data/={CONFIGS / 'facebook--opt-125m.json'}")[1]
    assert mapped["results"][0]["geometry"]["model_type"] == "opt"


def test_hub_models_come_from_the_cache(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    fake_hub.add_repo("meta-llama/Llama-3.1-8B-Instruct",
                      {"config.json": (CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
                       .read_bytes()})
    manifest = str(CASES / "tgi-llama31-numshard16.yaml")
    code, online = lint_json(manifest, "--isolated")  # not the cases' models map
    assert code == 1 and "KV202" in {f["code"] for f in online["results"][0]["findings"]}
    fake_hub.close()
    code, offline = lint_json(manifest, "--offline", "--isolated")  # warm cache, no network
    assert offline["results"][0]["findings"] == online["results"][0]["findings"]


def test_uncached_hub_model_offline_exits_2_naming_it() -> None:
    """Offline without a cached copy the model was not checked: not a pass, not KV902."""
    result = lint(str(CASES / "tgi-llama31-numshard16.yaml"), "--offline", "--isolated",
                  "--format", "json")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "kvlint: error: 1 model could not be fetched from the Hugging Face Hub: "
        "meta-llama/Llama-3.1-8B-Instruct; first error: meta-llama/Llama-3.1-8B-Instruct: "
        "config.json at revision main is not in the local Hugging Face cache "
        f"({os.environ['HF_HUB_CACHE']}) and --offline forbids downloading it; run once "
        "online to cache it (drop --offline)"]
    [result_out] = json.loads(result.stdout)["results"]
    assert result_out["findings"] == [] and "not in the local" in result_out["unavailable"]


def test_bad_model_map_is_a_usage_error() -> None:
    result = lint(str(CASES), "--model-map", "no-equals-sign")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("kvlint: error: --model-map 'no-equals-sign': expected "
                                     "NAME=REF")


def test_missing_path_is_a_usage_error() -> None:
    result = lint("does/not/exist.yaml")
    assert result.exit_code == 2
    assert "does/not/exist.yaml: no such file or directory" in result.stderr


def test_referenced_ray_serve_config_is_reported_once() -> None:
    _, data = lint_json(str(CORPUS / "ray-serve" / "serve-by-reference"), *MAP)
    refs = [(Path(r["target"]["path"]).name, r["target"]["line"]) for r in data["results"]]
    assert refs == [("llama_3dot1_8b_tp2.yaml", 2)]


def test_a_gguf_repository_is_named_not_fetched(tmp_path: Path) -> None:
    # llama.cpp's -hf takes <user>/<model>[:quant]: a GGUF repository has no config.json to
    # read, so kvlint says so (and how to map it) instead of asking the Hub for one
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nexec llama-server -hf bartowski/X-GGUF:Q5_K_M "
                      "--port 8080\n", encoding="utf-8")
    result = lint(str(script), "--format", "json")
    assert result.exit_code == 0, result.stderr
    [found] = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    assert (found["code"], found["severity"]) == ("KV902", "warning")
    assert "GGUF repository" in found["message"] and \
        "--model-map bartowski/X-GGUF=ORG/NAME" in found["message"]


@pytest.mark.parametrize(("shards", "config", "severity"), [
    ("2", "tiiuae--falcon-40b.json", "error"),  # sharded only with flash attention (CUDA)
    ("1", "tiiuae--falcon-40b.json", "warning"),  # TGI may fall back to the CPU
    ("2", "EleutherAI--pythia-1b.json", "warning"),  # GPTNeoxSharded needs no flash
])
def test_tgi_given_no_gpu_cannot_shard_a_flash_only_model(tmp_path: Path, shards: str,
                                                          config: str, severity: str) -> None:
    pod = tmp_path / "tgi.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: tgi}\nspec:\n  containers:\n"
        "    - name: tgi\n      image: ghcr.io/huggingface/text-generation-inference:1.4.5\n"
        f'      args: ["--model-id", "org/m", "--num-shard", "{shards}"]\n',
        encoding="utf-8")
    result = lint(str(pod), "--format", "json", "--model-map", f"org/m={CONFIGS / config}")
    found = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
             if f["code"] == "KV206"]
    assert [f["severity"] for f in found] == [severity], result.stdout


def test_a_kaito_workspace_with_a_spec_is_refused_by_its_api(tmp_path: Path) -> None:
    # the Workspace CRD's resource and inference are top-level (api/v1beta1/workspace_types.go)
    body = ("  resource:\n    count: 1\n    instanceType: Standard_NC24ads_A100_v4\n"
            "  inference:\n    preset:\n      name: phi-3-mini-4k-instruct\n")
    nested = tmp_path / "nested.yaml"
    nested.write_text("apiVersion: kaito.sh/v1alpha1\nkind: Workspace\nmetadata: {name: w}\n"
                      "spec:\n" + body, encoding="utf-8")
    result = lint(str(nested), "--format", "json", "--offline")
    found = [(f["code"], f["severity"], f["line"])
             for r in json.loads(result.stdout)["results"] for f in r["findings"]]
    assert found == [("KV903", "error", 4)]
    flat = tmp_path / "flat.yaml"
    flat.write_text("apiVersion: kaito.sh/v1alpha1\nkind: Workspace\nmetadata: {name: w}\n"
                    + body.replace("\n  ", "\n")[2:], encoding="utf-8")
    codes = {f["code"] for r in json.loads(lint(str(flat), "--format", "json",
                                                  "--offline").stdout)["results"]
             for f in r["findings"]}
    assert "KV903" not in codes


def test_a_kserve_predictor_container_is_refused_by_its_api(tmp_path: Path) -> None:
    # v1beta1's PredictorSpec has containers (its inline PodSpec), not container
    # (pkg/apis/serving/v1beta1/predictor.go); the container is linted as it was meant
    head = ("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
            "metadata: {name: s}\nspec:\n  predictor:\n")
    container = ("image: vllm/vllm-openai:v0.10.1\n"
                 "args: [--model, org/m, --tensor-parallel-size, '3']\n"
                 "resources: {limits: {nvidia.com/gpu: '3'}}\n")
    mapped = ("--model-map", f"org/m={CONFIGS / 'meta-llama--Meta-Llama-3-8B.json'}")

    def errors(name: str, body: str) -> list[tuple[str, int]]:
        path = tmp_path / name
        path.write_text(head + body, encoding="utf-8")
        result = lint(str(path), "--format", "json", "--offline", *mapped)
        return sorted((f["code"], f["line"]) for r in json.loads(result.stdout)["results"]
                      for f in r["findings"] if f["severity"] == "error")

    single = errors("single.yaml", "    container:\n" + textwrap.indent(container, " " * 6))
    assert ("KV903", 6) in single, single
    assert any(code == "KV203" for code, _ in single)  # tp 3 against 8 KV heads, as meant
    listed = errors("listed.yaml", "    containers:\n" + textwrap.indent(
        "- " + container.replace("\n", "\n  ", 2), " " * 4))
    assert "KV903" not in {code for code, _ in listed} and \
        any(code == "KV203" for code, _ in listed)


def _two_servers(tmp_path: Path, first: str, second: str, tag: str = "v0.10.1") -> list[str]:
    compose = tmp_path / "docker-compose.yml"
    compose.write_text(
        "services:\n"
        f"  a:\n    image: vllm/vllm-openai:{tag}\n{first}"
        '    command: ["--model", "org/a"]\n'
        f"  b:\n    image: vllm/vllm-openai:{tag}\n{second}"
        '    command: ["--model", "org/b", "--gpu-memory-utilization", "0.45"]\n',
        encoding="utf-8")
    result = lint(str(compose), "--format", "json", "--offline")
    return [f"{f['severity']}:{f['data'].get('reason')}"
            for r in json.loads(result.stdout)["results"] for f in r["findings"]
            if f["code"] == "KV702"]


@pytest.mark.parametrize(("first", "second", "tag", "found"), [
    ("    gpus: all\n", "    gpus: all\n", "v0.10.1", ["error:shared-gpu"]),  # 0.9 + 0.45
    # latest is the newest release, 0.34: its extensible KV cache starts the second with
    # what is left (tests/loaders/manifests/test_shared_gpus.py has each release)
    ("    gpus: all\n", "    gpus: all\n", "latest", []),
    ("    deploy: {resources: {reservations: {devices: [{driver: nvidia, device_ids: ['0'], "
     "capabilities: [gpu]}]}}}\n",
     "    deploy: {resources: {reservations: {devices: [{driver: nvidia, device_ids: ['1'], "
     "capabilities: [gpu]}]}}}\n", "v0.10.1", []),  # their own GPUs
    ("    gpus: all\n    profiles: [chat]\n", "    gpus: all\n    profiles: [embed]\n",
     "v0.10.1", []),  # never started together
    ("    gpus: all\n    environment: [NVIDIA_VISIBLE_DEVICES=${A_DEVICES:-all}]\n",
     "    gpus: all\n", "v0.10.1", []),  # a deployer picks the cards
    ("    gpus: all\n    environment: {NVIDIA_VISIBLE_DEVICES: '0'}\n",
     "    gpus: all\n    environment: {NVIDIA_VISIBLE_DEVICES: '1'}\n", "v0.10.1", []),
])
def test_two_vllm_services_on_one_gpu_must_fit_together(tmp_path: Path, first: str,
                                                        second: str, tag: str,
                                                        found: list[str]) -> None:
    assert _two_servers(tmp_path, first, second, tag) == found


@pytest.mark.parametrize(("path", "hub"), [
    ("/map-vepfs/models/jiajun/Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct"),
    ("models/meta-llama/Llama-3.1-8B-Instruct/", "meta-llama/Llama-3.1-8B-Instruct"),
    ("/mnt/models/Meta-Llama-3.1-8B-Instruct", None),  # no organisation folder above it
    ("/data/qwen2/Qwen2-7B-Instruct", None),  # "qwen2" is no Hub organisation
    ("/models/Qwen/..", None),
])
def test_kv902_names_the_hub_id_a_local_path_ends_in(path: str, hub: str | None) -> None:
    from kvlint.lint.resolver import _hub_id_in_path

    assert _hub_id_in_path(path) == hub
