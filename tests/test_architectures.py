"""KV305 architecture-not-served and the engine x version architecture table it reads.

The expected values were read by hand in the cited sources (the wheels' files; counts also
re-counted with ``awk``/``grep`` over the same files, independently of the generator):
``vllm/model_executor/models/registry.py`` of vllm 0.8.5, 0.11.0, 0.33.0 and 0.34.0 (PyPI)
has 119, 168, 251 and 256 (126 + 130) architectures in ``_TEXT_GENERATION_MODELS`` +
``_MULTIMODAL_MODELS``, 0.33.0 has 50 ``_PREVIOUSLY_SUPPORTED_MODELS`` and 0.34.0 52 (Keye
and KeyeVL1_5 "until 0.33.0") and 27 ``_TRANSFORMERS_SUPPORTED_MODELS`` (23 in 0.33.0;
GemmaForCausalLM, StableLmForCausalLM, OlmoeForCausalLM and AriaForConditionalGeneration
moved there from the native registries).
"""

from __future__ import annotations

import ast
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.engines.architectures import judge, load
from kvlint.generators import architectures as gen
from tests.helpers import CONFIGS, ROOT

FALCON = str(CONFIGS / "tiiuae--falcon-7b.json")
MPT = str(CONFIGS / "mosaicml--mpt-7b-instruct.json")
BAICHUAN = str(CONFIGS / "baichuan-inc--Baichuan2-7B-Chat.json")
PYTHIA = str(CONFIGS / "EleutherAI--pythia-1b.json")
GPT_OSS = str(CONFIGS / "openai--gpt-oss-20b.json")
LLAMA = str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json")
DATA = ROOT / "kvlint" / "engines" / "architectures.json"


def versions(engine: str) -> dict[str, Any]:
    table: dict[str, Any] = load()["engines"][engine]["versions"]
    return table


# --- the data, against the cited sources ---------------------------------------------------


def test_vllm_counts_per_version() -> None:
    v = versions("vllm")
    assert list(v) == ["0.8.5", "0.11.0", "0.33.0", "0.34.0"]
    assert [len(v[x]["served"]) for x in v] == [119, 168, 251, 256]
    assert [len(v[x]["removed"]) for x in v] == [0, 7, 50, 52]
    assert [len(v[x]["transformers_backend"]) for x in v] == [0, 2, 23, 27]


def test_vllm_0_34_changes() -> None:
    v = versions("vllm")
    old, new = v["0.33.0"], v["0.34.0"]
    assert set(new["served"]) - set(old["served"]) == {
        "CanaryForConditionalGeneration", "KimiK31ForConditionalGeneration",
        "Lfm3AudioForConditionalGeneration", "Lfm3ForCausalLM",
        "Lfm3VlForConditionalGeneration", "MingV3ASRForConditionalGeneration",
        "MistralLarge4ForCausalLM", "Nemotron3_5TranscribeForConditionalGeneration",
        "RicursiveForCausalLM", "UnlimitedOCR2TextForCausalLM", "ZayaForCausalLM"}
    moved = {"AriaForConditionalGeneration", "GemmaForCausalLM", "OlmoeForCausalLM",
             "StableLmForCausalLM"}
    assert set(old["served"]) - set(new["served"]) == moved | {
        "KeyeForConditionalGeneration", "KeyeVL1_5ForConditionalGeneration"}
    assert set(new["transformers_backend"]) - set(old["transformers_backend"]) == moved
    assert new["removed"]["KeyeForConditionalGeneration"] == "0.33.0"
    assert new["transformers_requirement"] == "<5.23.0,>=5.16.1"  # the wheel's METADATA
    assert new["transformers"] == "5.22.2"
    v34 = judge("vllm", "0.34.0", ["GemmaForCausalLM"], "gemma")
    assert v34 is not None and v34.status == "transformers-backend"
    v33 = judge("vllm", "0.33.0", ["MistralLarge4ForCausalLM"], "mistral_large_4")
    assert v33 is not None and (v33.status, v33.first) == ("not-yet", "0.34.0")


def test_vllm_previously_supported_of_0_33() -> None:
    removed = versions("vllm")["0.33.0"]["removed"]
    assert removed["MllamaForConditionalGeneration"] == "0.10.2"
    assert removed["RWForCausalLM"] == removed["MPTForCausalLM"] == "0.28.0"
    assert removed["BaichuanForCausalLM"] == removed["MiniMaxText01ForCausalLM"] == \
        removed["BambaForCausalLM"] == "0.23.0"
    assert removed["Phi3SmallForCausalLM"] == "0.9.2"
    assert versions("vllm")["0.11.0"]["removed"] == {
        "BartForConditionalGeneration": "0.10.2", "BartModel": "0.10.2",
        "DonutForConditionalGeneration": "0.10.2",
        "Florence2ForConditionalGeneration": "0.10.2",
        "MBartForConditionalGeneration": "0.10.2",
        "MllamaForConditionalGeneration": "0.10.2", "Phi3SmallForCausalLM": "0.9.2"}


def test_vllm_served_sets() -> None:
    v = versions("vllm")
    for arch in ("RWForCausalLM", "MPTForCausalLM", "BaichuanForCausalLM",
                 "MllamaForConditionalGeneration"):
        assert arch in v["0.8.5"]["served"]
        assert arch not in v["0.33.0"]["served"]
    assert "GptOssForCausalLM" not in v["0.8.5"]["served"]
    assert "GptOssForCausalLM" in v["0.11.0"]["served"]
    assert "FalconForCausalLM" in v["0.33.0"]["served"]
    assert v["0.11.0"]["transformers_backend"] == ["Emu3ForConditionalGeneration",
                                                   "SmolLM3ForCausalLM"]
    assert "GPTNeoXForCausalLM" in v["0.33.0"]["transformers_backend"]
    assert len(v["0.33.0"]["transformers_backend"]) == 23
    assert v["0.33.0"]["transformers"] == "5.20.2"  # vllm 0.33.0: transformers<5.21,>=5.16.1
    assert "transformers" not in v["0.8.5"]  # ">=4.51.1" names no release of the time


def test_other_engines() -> None:
    sg = versions("sglang")
    assert [len(sg[x]["served"]) for x in sg] == [72, 135, 289]
    assert "GptOssForCausalLM" not in sg["0.4.6.post1"]["served"]
    assert "GptOssForCausalLM" in sg["0.5.5.post3"]["served"]
    assert [sg[x]["transformers_fallback"] for x in sg] == [False, True, True]
    lm = versions("lmdeploy")
    assert "BaichuanForCausalLM" in lm["0.7.3"]["served"]
    assert "BaichuanForCausalLM" not in lm["0.18.0"]["served"]
    assert "BaichuanForCausalLM" in lm["0.18.0"]["removed_unversioned"]  # REMOVED_MODEL_MAP
    tgi = versions("tgi")["3.3.7"]["model_types"]
    assert {"RefinedWeb", "RefinedWebModel", "falcon", "mpt", "baichuan"} <= set(tgi)
    assert len(tgi) == 44
    trt = versions("trtllm")["*"]
    assert len(trt["served"]) == 81 and "MllamaForConditionalGeneration" in trt["served"]
    assert "RWForCausalLM" in trt["tensorrt_backend"]
    cpp = versions("llamacpp")["*"]["served"]
    assert len(cpp) == 269 and {"RWForCausalLM", "MPTForCausalLM", "BaichuanForCausalLM"} \
        <= set(cpp)


def test_transformers_backend_classes() -> None:
    hf = load()["transformers"]["5.20.2"]
    assert "MllamaForConditionalGeneration" in hf["backend_compatible"]
    assert "MllamaForConditionalGeneration" in hf["supports_attention_backend"]
    assert "FalconForCausalLM" in hf["backend_incompatible"]
    assert "RWForCausalLM" not in hf["backend_compatible"]
    # equal to transformers 5.20.2's own is_backend_compatible() or
    # _can_set_attn_implementation() for each class (checked once in the vLLM 0.33.0 venv)
    assert (len(hf["backend_compatible"]), len(hf["backend_incompatible"])) == (283, 29)
    assert not any(c.startswith("Auto") for c in hf["backend_compatible"])


def test_every_entry_cites_its_source() -> None:
    for engine, table in load()["engines"].items():
        assert table["resolution"]
        for version, entry in table["versions"].items():
            assert entry["source"], (engine, version)
            assert version == "*" or version in entry["source"]


# --- the verdicts ---------------------------------------------------------------------------


def test_mllama_on_vllm_0_33_runs_on_the_transformers_backend() -> None:
    v = judge("vllm", "0.33.0", ["MllamaForConditionalGeneration"], "mllama")
    assert v is not None and (v.status, v.last) == ("transformers-backend", "0.10.2")
    v = judge("vllm", "0.11.0", ["MllamaForConditionalGeneration"], "mllama")
    assert v is not None and (v.status, v.last) == ("removed", "0.10.2")


@pytest.mark.parametrize(("version", "status"), [
    ("0.8.5", "served"), ("0.11.0", "served"), ("0.25.0", "served"), ("0.28.0", "served"),
    ("0.28.1", "removed"), ("0.33.0", "removed"), ("0.34.0", "removed"),
    ("0.40.0", "removed")])
def test_falcon_rw_by_vllm_version(version: str, status: str) -> None:
    v = judge("vllm", version, ["RWForCausalLM"], "RefinedWebModel", remote_code=True)
    assert v is not None and v.status == status


def test_versions_between_known_ones_that_disagree_give_no_verdict() -> None:
    # gpt-oss: not in 0.8.5, in 0.11.0; 0.10.0 lies between and kvlint did not read it
    assert judge("vllm", "0.10.0", ["GptOssForCausalLM"], "gpt_oss") is None
    v = judge("vllm", "0.8.5", ["GptOssForCausalLM"], "gpt_oss")
    assert v is not None and (v.status, v.first) == ("not-yet", "0.11.0")


def test_vllm_pooling_suffix_converts_a_registered_arch() -> None:
    v = judge("vllm", "0.33.0", ["LlamaForSequenceClassification"], "llama")
    assert v is not None and v.status == "served"


def test_no_data_no_verdict() -> None:
    assert judge("mlc-llm", "0.20.0", ["LlamaForCausalLM"], "llama") is None
    assert judge("vllm", "0.33.0", [], "llama") is None


# --- the rule through the CLI ---------------------------------------------------------------


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["check", *args, "--format", "json", "--no-plugins"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)["results"][0]


def kv305(result: dict[str, Any]) -> dict[str, Any] | None:
    return next((f for f in result["findings"] if f["code"] == "KV305"), None)


def test_falcon_7b_on_vllm_0_33_is_an_error() -> None:
    code, result = check(FALCON, "--engine", "vllm", "--engine-version", "0.33.0")
    f = kv305(result)
    assert code == 1 and f is not None and f["severity"] == "error"
    assert f["message"] == (
        "vLLM 0.33.0 does not serve architecture RWForCausalLM: vLLM served it until 0.28.0 "
        "and refuses it since; pin vLLM 0.28.0 (or older), or serve it with TGI 3.3.7, "
        "llama.cpp (vllm/model_executor/models/registry.py@0.33.0).")
    assert f["data"]["last_served"] == "0.28.0" and f["data"]["status"] == "removed"


def test_falcon_7b_on_vllm_0_11_is_fine() -> None:
    _, result = check(FALCON, "--engine", "vllm", "--engine-version", "0.11.0")
    assert kv305(result) is None


def test_unpinned_vllm_is_judged_by_the_newest() -> None:
    _, result = check(MPT, "--engine", "vllm")
    f = kv305(result)
    assert f is not None and f["message"].startswith(
        "vLLM 0.34.0 (newest known) does not serve architecture MPTForCausalLM: vLLM served "
        "it until 0.28.0")


def test_no_engine_named_no_finding() -> None:
    _, result = check(FALCON)
    assert kv305(result) is None


def test_baichuan2_on_vllm_and_lmdeploy() -> None:
    _, result = check(BAICHUAN, "--engine", "vllm", "--engine-version", "0.33.0")
    f = kv305(result)
    assert f is not None and f["data"]["architecture"] == "BaichuanForCausalLM"
    assert f["data"]["last_served"] == "0.23.0"
    assert f["data"]["alternatives"] == ["SGLang 0.5.23", "TGI 3.3.7", "llama.cpp"]
    _, result = check(BAICHUAN, "--engine", "lmdeploy", "--engine-version", "0.18.0")
    f = kv305(result)
    # the 0.14.0 wheel still maps it (module_map.py@0.14.0); 0.16.0's does not
    assert f is not None and "LMDeploy served it until 0.14.0" in f["message"]


def test_tgi_serves_falcon_by_model_type() -> None:
    _, result = check(FALCON, "--engine", "tgi", "--engine-version", "3.3.7")
    assert kv305(result) is None


def test_gpt_oss_on_vllm_0_8_5_names_the_first_version() -> None:
    code, result = check(GPT_OSS, "--engine", "vllm", "--engine-version", "0.8.5")
    f = kv305(result)
    assert code == 1 and f is not None
    assert "the first vLLM version kvlint knows to serve it is 0.11.0; pin vLLM 0.11.0 or " \
        "newer" in f["message"]


def test_transformers_backend_is_an_info_note() -> None:
    _, result = check(PYTHIA, "--engine", "vllm", "--engine-version", "0.33.0")
    f = kv305(result)
    assert f is not None and f["severity"] == "info"
    assert "routes this architecture to the Transformers modeling backend" in f["message"]


def test_served_model_no_finding() -> None:
    for engine in ("vllm", "sglang", "lmdeploy", "trtllm", "llamacpp"):
        _, result = check(LLAMA, "--engine", engine)
        assert kv305(result) is None, engine


# --- the generator --------------------------------------------------------------------------


def test_data_file_is_in_the_generators_format() -> None:
    text = DATA.read_text(encoding="utf-8")
    data = json.loads(text)
    assert gen.dumps(data) == text
    assert data["schema"] == gen.SCHEMA


def test_generator_reads_wheels_with_ast(tmp_path: Path) -> None:
    registry = (
        '_TEXT_GENERATION_MODELS = {"AForCausalLM": ("a", "A"), "BForCausalLM": ("b", "B")}\n'
        '_MULTIMODAL_MODELS = {"CForConditionalGeneration": ("c", "C")}\n'
        '_EMBEDDING_MODELS = {"AModel": ("a", "A"), **_TEXT_GENERATION_MODELS}\n'
        '_TRANSFORMERS_SUPPORTED_MODELS = {"DForCausalLM": ("transformers", "T")}\n'
        '_PREVIOUSLY_SUPPORTED_MODELS = {"OldForCausalLM": "0.1.0"}\n'
        'import_me_and_fail = 1 / 0\n')
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(gen.REGISTRY, registry)
        z.writestr("vllm-9.9.9.dist-info/METADATA",
                   "Name: vllm\nRequires-Dist: transformers<6,>=5.0\n")
    sg = tmp_path / "sglang-1.0.0-py3-none-any.whl"
    with zipfile.ZipFile(sg, "w") as z:
        z.writestr("sglang/srt/models/x.py",
                   "from m import Base as Alias\nclass X: pass\nEntryClass = [X, Alias]\n")
        z.writestr("sglang/srt/models/y.py", "\ufeffclass Y: pass\nEntryClass = Y\n")
    out = tmp_path / "out.json"
    assert gen.main(["-o", str(out), "--vllm", str(wheel), "--sglang", str(sg)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    entry = data["engines"]["vllm"]["versions"]["9.9.9"]
    assert entry["served"] == ["AForCausalLM", "BForCausalLM", "CForConditionalGeneration"]
    assert entry["pooling"] == ["AModel"]
    assert entry["transformers_backend"] == ["DForCausalLM"]
    assert entry["removed"] == {"OldForCausalLM": "0.1.0"}
    assert entry["transformers_requirement"] == "<6,>=5.0"
    assert data["engines"]["sglang"]["versions"]["1.0.0"]["served"] == ["Base", "X", "Y"]
    ast.parse(gen.dumps(data).replace("true", "True").replace("false", "False")
              .replace("null", "None"))  # plain JSON literals, one value per key


# --- manifests: the image tag pins the version ---------------------------------------------

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: falcon
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:{tag}
          args: ["--model", "tiiuae/falcon-7b"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""


@pytest.mark.parametrize(("tag", "fires"), [
    ("v0.33.0", True), ("v0.11.0", False), ("latest", True),
    ("my-custom-build", False),  # version unknown: judged by every version (0.11.0 serves it)
])
def test_manifest_image_tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str,
                            fires: bool) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    manifest = tmp_path / "falcon.yaml"
    manifest.write_text(DEPLOYMENT.format(tag=tag), encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(manifest), "--no-plugins", "--format",
                                       "json", "--model-map", f"tiiuae/falcon-7b={FALCON}"])
    assert result.exit_code in (0, 1), result.output
    findings = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
                if f["code"] == "KV305"]
    assert bool(findings) is fires
    if fires:
        assert findings[0]["line"] == 10  # the image line names the version
        assert findings[0]["severity"] == "error"
    assert result.exit_code == (1 if fires else 0)


def test_unknown_version_reports_what_no_version_serves() -> None:
    from kvlint.engines.architectures import judge_every

    assert judge_every("vllm", ["RWForCausalLM"], "RefinedWebModel") is None
    v = judge_every("vllm", ["NoSuchModelForCausalLM"], "nosuch")
    assert v is not None and (v.status, v.version) == ("unknown", "0.34.0")
