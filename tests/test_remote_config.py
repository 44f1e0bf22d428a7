"""KV308 remote-config-not-trusted and the config-registry table it reads.

The expected values were read by hand in the cited sources (``vllm/transformers_utils/
config.py`` of the vllm wheels on PyPI): 0.4.1 and 0.5.0 call ``AutoConfig.from_pretrained``
before they look at ``_CONFIG_REGISTRY`` (chatglm, dbrx, mpt, RefinedWeb, RefinedWebModel,
jais); 0.7.3 looks first (``if model_type in _CONFIG_REGISTRY`` above the ``AutoConfig``
call) and registers ``internvl_chat``, which 0.9.2 no longer does; ``kimi_k2`` is registered
from 0.19.0 among the wheels read; 0.34.0 gives a typeless LongCat-Flash config its type
through ``_ARCHITECTURE_TO_MODEL_TYPE``.

Checked against vLLM itself (``../shared/oracle/vllm_oracle.py``, vLLM 0.33.0 with
``trust_remote_code=False``, tp 1): it refuses the configs of Orion-14B, Baichuan2-7B,
InternLM2.5-7B, Phi-3-small, Phi-3-vision and Nemotron-Super-49B ("The repository ... contains
custom code"), which KV308 reports at 0.28.0 and 0.34.0 around it, and reads chatglm2-6b,
Kimi-K2, DeepSeek-V2-Lite and Phi-3-mini, which it does not (11 of 11 agree; MPT is refused for
its architecture, KV305).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.engines.remote_code import load, needs_remote_config
from kvlint.generators import config_registries as gen
from tests.helpers import CONFIGS, ROOT, fake_wheel

INTERNLM2 = "internlm/internlm2_5-7b-chat"
INTERNLM2_CONFIG = str(CONFIGS / "internlm--internlm2_5-7b-chat.json")
DATA = ROOT / "kvlint" / "engines" / "config_registries.json"


def test_registry_order_and_contents_by_version() -> None:
    versions = load()["vllm"]["versions"]
    assert [v for v, e in versions.items() if not e["registry_first"]] == ["0.4.1", "0.5.0"]
    assert versions["0.4.1"]["registry"] == ["RefinedWeb", "RefinedWebModel", "chatglm",
                                             "dbrx", "jais", "mpt"]
    assert [v for v, e in versions.items() if "internvl_chat" in e["registry"]] == [
        "0.7.3", "0.8.5"]
    assert [v for v, e in versions.items() if "kimi_k2" in e["registry"]] == [
        "0.19.0", "0.20.0", "0.28.0", "0.34.0"]
    assert versions["0.34.0"]["architecture_to_model_type"] == {
        "LongcatFlashForCausalLM": "longcat_flash",
        "LongcatFlashNgramForCausalLM": "longcat_flash"}
    assert all(e["source"] == f"vllm/transformers_utils/config.py@{v}"
               for v, e in versions.items())


def test_transformers_union() -> None:
    hf = load()["transformers"]
    assert len(hf["read"]) == 3
    known = set(hf["model_types"])
    assert {"llama", "qwen3", "internvl", "gpt-sw3", "mlcd"} <= known  # 5.x's additions too
    assert not {"internlm2", "internvl_chat", "baichuan", "phi3small", "chatglm"} & known


@pytest.mark.parametrize(("version", "model_type", "needs"), [
    ("0.34.0", "internvl_chat", True),
    ("0.8.5", "internvl_chat", False),  # its own registry reads it
    ("0.9.0", "internvl_chat", None),  # between 0.8.5 (reads it) and 0.9.2 (does not)
    ("0.4.2", "chatglm", True),  # AutoConfig first: the registry does not help
    ("0.6.0", "chatglm", None),  # between 0.5.0 and 0.7.3, which disagree
    ("0.11.0", "chatglm", False),
    ("0.34.0", "llama", False),  # transformers knows it
    ("0.34.0", None, True),  # a typeless config with an AutoConfig
])
def test_judge(version: str, model_type: str | None, needs: bool | None) -> None:
    verdict = needs_remote_config("vllm", version, model_type, ["XForCausalLM"])
    if needs is True:
        assert verdict is not None and verdict.version == version
    else:
        assert verdict is None


def test_architecture_gives_a_typeless_config_its_type() -> None:
    assert needs_remote_config("vllm", "0.34.0", None, ["LongcatFlashForCausalLM"]) is None
    assert needs_remote_config("vllm", "0.28.0", None, ["LongcatFlashForCausalLM"]) \
        is not None


def test_every_version_for_an_unknown_one() -> None:
    verdict = needs_remote_config("vllm", None, "internvl_chat", [], every=True)
    assert verdict is None  # 0.7.3 and 0.8.5 read it
    verdict = needs_remote_config("vllm", None, "internlm2", [], every=True)
    assert verdict is not None and verdict.registered_in == ()


def test_no_data_for_other_engines() -> None:
    assert needs_remote_config("sglang", "0.5.23", "internlm2", []) is None


def test_data_file_is_in_the_generators_format() -> None:
    text = DATA.read_text(encoding="utf-8")
    assert gen.dumps(json.loads(text)) == text


def test_generator_reads_wheels_with_ast(tmp_path: Path) -> None:
    old = fake_wheel(tmp_path / "vllm-0.1.0-cp38-abi3-any.whl", {gen.VLLM_CONFIG: (
        "_CONFIG_REGISTRY = {'a': A, 'b': B}\n"
        "def get_config(model, trust_remote_code):\n"
        "    config = AutoConfig.from_pretrained(model)\n"
        "    if config.model_type in _CONFIG_REGISTRY:\n"
        "        pass\n"
        "import_me_and_fail = 1 / 0\n")})
    new = fake_wheel(tmp_path / "vllm-0.2.0-cp38-abi3-any.whl", {gen.VLLM_CONFIG: (
        "_CONFIG_REGISTRY: dict = LazyConfigDict(c='C', a='A')\n"
        "_ARCHITECTURE_TO_MODEL_TYPE: dict[str, str] = {'XForCausalLM': 'c'}\n"
        "def get_config(model, model_type):\n"
        "    if model_type in _CONFIG_REGISTRY:\n"
        "        return None\n"
        "    return AutoConfig.from_pretrained(model)\n")})
    hf4 = fake_wheel(tmp_path / "transformers-4.0.0-py3-none-any.whl", {
        gen.HF_AUTO: "CONFIG_MAPPING_NAMES = OrderedDict([('llama', 'L'), ('gone', 'G')])\n"})
    hf5 = fake_wheel(tmp_path / "transformers-5.0.0-py3-none-any.whl", {
        gen.HF_AUTO_MAPPINGS: "CONFIG_MAPPING_NAMES = OrderedDict([('llama', 'L'), "
                              "('qwen3', 'Q')])\n",
        gen.HF_AUTO: ("from .auto_mappings import CONFIG_MAPPING_NAMES\n"
                      "CONFIG_MAPPING_NAMES.update({'extra': 'E'})\n"
                      "CONFIG_MAPPING_NAMES = OrderedDict(**{'gpt-sw3': 'G'}, "
                      "**CONFIG_MAPPING_NAMES)\n")})
    out = tmp_path / "out.json"
    assert gen.main(["-o", str(out), "--vllm", str(new), str(old),
                     "--transformers", str(hf5), str(hf4)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert list(data["vllm"]["versions"]) == ["0.1.0", "0.2.0"]
    assert data["vllm"]["versions"]["0.1.0"] == {
        "source": "vllm/transformers_utils/config.py@0.1.0", "registry_first": False,
        "registry": ["a", "b"]}
    second = data["vllm"]["versions"]["0.2.0"]
    assert (second["registry_first"], second["registry"]) == (True, ["a", "c"])
    assert second["architecture_to_model_type"] == {"XForCausalLM": "c"}
    assert data["transformers"]["model_types"] == ["extra", "gone", "gpt-sw3", "llama",
                                                   "qwen3"]


# --- manifests -------------------------------------------------------------------------------

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: internlm
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:{tag}
          args: ["--model", "internlm/internlm2_5-7b-chat"{extra}]
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
         text: str) -> list[dict[str, object]]:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    manifest = tmp_path / name
    manifest.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(manifest), "--no-plugins", "--isolated",
                                       "--format", "json", "--model-map",
                                       f"{INTERNLM2}={INTERNLM2_CONFIG}"])
    assert result.exit_code in (0, 1), result.output
    return [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
            if f["code"] == "KV308"]


@pytest.mark.parametrize(("tag", "extra", "fires"), [
    ("latest", "", True),
    ("v0.8.5", "", True),
    ("my-custom-build", "", True),  # no version reads internlm2 without its code
    ("latest", ', "--trust-remote-code"', False),
    ("latest", ', "--trust-remote-code=true"', False),
    ("latest", ', "$(EXTRA_ARGS)"', False),  # a word kvlint cannot expand may give it
    ("latest", ', "--config", "/etc/vllm/config.yaml"', False),  # a file it cannot read
])
def test_deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tag: str, extra: str,
                    fires: bool) -> None:
    found = lint(tmp_path, monkeypatch, "internlm.yaml",
                 DEPLOYMENT.format(tag=tag, extra=extra))
    assert bool(found) is fires
    if fires:
        assert found[0]["severity"] == "error"
        assert found[0]["line"] == 11
        assert "--trust-remote-code" in str(found[0]["message"])
        assert found[0]["data"]["model_type"] == "internlm2"


def test_config_file_in_the_tree_is_read(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "vllm.yaml").write_text("trust-remote-code: true\n", "utf-8")
    script = ("#!/bin/bash\n"
              f"vllm serve {INTERNLM2} --config ./conf/vllm.yaml\n")
    assert lint(tmp_path, monkeypatch, "serve.sh", script) == []
    (tmp_path / "conf" / "vllm.yaml").write_text("max-model-len: 4096\n", "utf-8")
    assert len(lint(tmp_path, monkeypatch, "serve.sh", script)) == 1


def test_operator_builds_its_own_command(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    isvc = ("apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\n"
            "metadata:\n  name: internlm\nspec:\n  predictor:\n    model:\n"
            "      modelFormat:\n        name: huggingface\n"
            f"      args: [\"--model_id={INTERNLM2}\", \"--backend=vllm\"]\n"
            "      resources:\n        limits:\n          nvidia.com/gpu: 1\n")
    assert lint(tmp_path, monkeypatch, "isvc.yaml", isvc) == []
