"""Line-aware safe YAML loading (kvlint.manifests.yaml_marks) on the real corpus."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kvlint.manifests.base import ManifestProblem
from kvlint.manifests.yaml_marks import (
    MAX_EXPANDED_NODES,
    LDict,
    LList,
    LStr,
    line_of,
    load_documents,
)

MANIFESTS = Path(__file__).resolve().parents[3] / "fixtures" / "manifests"
ALL = sorted(p for p in MANIFESTS.rglob("*") if p.suffix in (".yaml", ".yml"))
HELM_TEMPLATE = MANIFESTS / "llama.cpp" / "helm-template-silogen-deployment-unrendered.yaml"


def load(relative: str) -> list[Any]:
    path = MANIFESTS / relative
    docs = load_documents(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(docs, list), docs
    return docs


def billion_laughs(levels: int = 9, fan_out: int = 9) -> str:
    lines = ['a0: &a0 ["' + '", "'.join(["lol"] * fan_out) + '"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


def test_the_corpus_has_fifty_files() -> None:
    assert len(ALL) == 50


@pytest.mark.parametrize("path", [p for p in ALL if p != HELM_TEMPLATE],
                         ids=lambda p: str(p.relative_to(MANIFESTS)))
def test_values_equal_pyyaml_safe_load(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    docs = load_documents(text, str(path))
    assert isinstance(docs, list)
    assert docs == list(yaml.safe_load_all(text))


def test_lines_of_keys_values_and_items_in_the_lws_vllm_file() -> None:
    docs = load("lws/vllm-llama3.1-405b-tp8-pp2-multinode.yaml")
    assert len(docs) == 2
    lws = docs[0]
    assert isinstance(lws, LDict) and lws.line == 1
    assert lws.key_lines["spec"] == (5, 1)
    assert lws["spec"].key_lines["replicas"] == (6, 3)
    assert lws["spec"].value_lines["replicas"] == (6, 13)
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    assert isinstance(leader, LDict) and leader.line == 16
    assert line_of(leader, "image") == 17
    assert leader.value_lines["image"] == (17, 20)
    command = leader["command"]
    assert isinstance(command, LList) and command.line == 22
    assert command.item_lines == [(22, 17), (23, 17), (24, 17)]
    assert line_of(command, 2) == 24
    assert line_of(command, 3) is None
    script = command[2]
    assert isinstance(script, LStr)
    assert (script.line, script.column, script.style, script.end_line) == (24, 17, '"', 25)
    assert script.raw is not None and script.raw.startswith('"bash ')  # multi-line: source kept
    # YAML folded the line break of the double-quoted scalar into a space
    assert "LWS_GROUP_SIZE); python3 -m vllm" in script
    # env value `$HF_TOKEN` is a literal string for Kubernetes
    assert leader["env"][0]["value"] == "$HF_TOKEN"
    assert leader["env"][0]["value"].style is None


def test_multi_document_stream_keeps_indices_and_lines() -> None:
    docs = load("sglang/k8s-statefulset-2node-tp16-ep16-localpath.yaml")
    assert [d["kind"] for d in docs] == ["StatefulSet", "Service", "Service"]
    assert docs[1].line > docs[0].line
    text = "---\n---\nkind: A\n---\n# only a comment\n---\nkind: B\n"
    loaded = load_documents(text, "stream.yaml")
    assert loaded == [None, {"kind": "A"}, None, {"kind": "B"}]
    assert isinstance(loaded, list) and loaded[3].line == 7
    assert load_documents("", "empty.yaml") == []


def test_block_scalar_styles_and_lines() -> None:
    text = "a: |\n  x\n  y\nb: >-\n  p\n  q\nc: plain\nd: 'q'\ne:\n  - two\n    lines\n"
    doc = load_documents(text, "styles.yaml")
    assert isinstance(doc, list)
    d = doc[0]
    assert (d["a"].style, d["a"].line, d["a"].raw) == ("|", 1, None)
    assert (d["b"].style, d["b"].line, d["b"].end_line) == (">", 4, 7)
    assert d["b"] == "p q"
    assert (d["c"].style, d["d"].style) == (None, "'")
    assert d["e"][0] == "two lines" and d["e"][0].raw == "two\n    lines"


def test_yaml_1_1_scalars_match_safe_loader() -> None:
    text = "a: on\nb: 0x10\nc: 1:30\nd: 1e3\ne: ~\nf: '8'\ng: 2025-05-05\nh: .inf\n"
    doc = load_documents(text, "s.yaml")
    assert doc == [yaml.safe_load(text)]
    assert isinstance(doc, list) and doc[0]["f"] == "8" and isinstance(doc[0]["f"], LStr)
    assert doc[0]["a"] is True


def test_merge_keys_and_shared_aliases() -> None:
    text = "base: &b\n  x: 1\n  y: 2\nd:\n  <<: *b\n  y: 3\nl: [*b, *b]\n"
    doc = load_documents(text, "m.yaml")
    assert isinstance(doc, list)
    d = doc[0]
    assert d["d"] == {"x": 1, "y": 3}
    assert d["d"].key_lines["x"] == (2, 3)  # merged keys keep the lines of their source
    assert d["d"].key_lines["y"] == (6, 3)
    assert d["l"][0] is d["l"][1] is d["base"]


def test_billion_laughs_is_refused_quickly() -> None:
    text = billion_laughs(9, 9)  # 9**9 = 387,420,489 strings once expanded
    start = time.perf_counter()
    result = load_documents(text, "lol.yaml")
    elapsed = time.perf_counter() - start
    assert isinstance(result, ManifestProblem)
    assert result.kind == "alias-bomb"
    assert f"{MAX_EXPANDED_NODES:,}" in result.message
    assert elapsed < 1.0
    # a small alias fan-out stays readable
    small = load_documents(billion_laughs(2, 3), "small.yaml")
    assert isinstance(small, list) and len(small[0]["a2"]) == 3


def test_recursive_alias_is_refused() -> None:
    result = load_documents("a: &a\n  - *a\n", "rec.yaml")
    assert isinstance(result, ManifestProblem) and result.kind == "alias-bomb"


def test_deep_nesting_is_a_problem_not_a_crash() -> None:
    text = "[" * 2000 + "]" * 2000 + "\n"
    result = load_documents(text, "deep.yaml")
    assert isinstance(result, ManifestProblem)
    assert result.kind == "invalid-yaml"


def test_python_tags_are_never_constructed() -> None:
    text = "x: !!python/object/apply:os.system [echo pwned]\ny: !Ref Thing\n"
    result = load_documents(text, "tags.yaml")
    assert result == [{"x": ["echo pwned"], "y": "Thing"}]


def test_helm_template_fixture_is_reported_as_a_template() -> None:
    result = load_documents(HELM_TEMPLATE.read_text(encoding="utf-8"), str(HELM_TEMPLATE))
    assert isinstance(result, ManifestProblem)
    assert result.kind == "helm-template"
    assert result.line == 4  # `name: {{ include "release.fullname" . }}`
    assert "helm template" in result.message and "kvlint lint -" in result.message


def test_quoted_mustaches_are_not_templates() -> None:
    kserve = load("kserve/clusterservingruntime-hf-multinode.yaml")
    container = kserve[0]["spec"]["containers"][0]
    assert container["args"] == ["--model_name={{.Name}}"]
    lmdeploy = load("lmdeploy/k8s-internlm2-chat-7b-shell-string.yaml")
    values = [e["value"] for d in lmdeploy if d["kind"] == "Deployment"
              for c in d["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])]
    assert "{{HUGGING_FACE_HUB_TOKEN}}" in values


def test_top_level_template_line_in_parsable_text() -> None:
    result = load_documents("a: 1\n{{- if .Values.x }}\nb: 2\n{{- end }}\n", "t.yaml")
    assert isinstance(result, ManifestProblem) and result.kind == "helm-template"
    assert result.line == 2


def test_invalid_yaml_reports_the_problem_line_on_one_line() -> None:
    result = load_documents("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")
    assert isinstance(result, ManifestProblem)
    assert result.kind == "invalid-yaml"
    assert result.line == 3
    assert "\n" not in result.message
    assert "flow sequence" in result.message
    bad_indent = load_documents("a: 1\n  b: 2\n", "bad.yaml")
    assert isinstance(bad_indent, ManifestProblem) and bad_indent.line == 2
    unhashable = load_documents("? [a]\n: 1\n", "key.yaml")
    assert isinstance(unhashable, ManifestProblem) and unhashable.kind == "invalid-yaml"


def test_load_speed() -> None:
    texts = [(str(p), p.read_text(encoding="utf-8")) for p in ALL]
    start = time.perf_counter()
    rounds = 20
    for _ in range(rounds):
        for path, text in texts:
            load_documents(text, path)
    rate = rounds * len(texts) / (time.perf_counter() - start)
    print(f"load_documents: {rate:.0f} files/s over {len(texts)} fixtures x {rounds}")
    assert rate > 250  # ~1,700 files/s measured; the linter's budget is 500 files/s overall


def test_mustaches_in_comments_do_not_make_a_template() -> None:
    result = load_documents("# see {{ .Values.x }}\na: [1\n", "bad.yaml")
    assert isinstance(result, ManifestProblem) and result.kind == "invalid-yaml"


def test_a_local_tag_on_a_value_is_kept_by_key() -> None:
    """Compose's merge tags (``!override``, ``!reset``) are read as the plain value, the tag
    kept on the mapping for a parser that gives it a meaning; standard tags are not kept."""
    from kvlint.manifests.yaml_marks import load_documents

    docs = load_documents("services:\n  llm:\n    image: x\n    volumes: !override\n"
                          "      - a:/b\n    ports: !reset []\n    labels: !!str 1\n", "c.yml")
    assert isinstance(docs, list)
    llm = docs[0]["services"]["llm"]
    assert llm == {"image": "x", "volumes": ["a:/b"], "ports": [], "labels": "1"}
    assert llm.value_tags == {"volumes": "!override", "ports": "!reset"}
    assert docs[0].value_tags == {}
