"""Hostile inputs for the session's new readers (llama-swap configs, Compose command
strings, app-template values, GitOps values): generated here, never committed; each is read
within its bounds (a capped count of servers, a capped string), never a traceback."""

from __future__ import annotations

import json

from kvlint.manifests.app_template import MAX_CONTAINERS, AppTemplateValuesParser
from kvlint.manifests.compose_words import MAX_CHARS, compose_words
from kvlint.manifests.helm_releases import ArgoApplicationParser
from kvlint.manifests.llama_swap import MAX_MODELS, LlamaSwapParser
from tests.loaders.manifests.support import parse_with


def test_llama_swap_with_thousands_of_models_reads_a_bounded_number() -> None:
    doc = {"models": {f"m{i:05d}": {"cmd": f"llama-server -m /m/{i}.gguf --port ${{PORT}}"}
                      for i in range(MAX_MODELS * 4)}}
    found = parse_with([LlamaSwapParser()], json.dumps(doc), "config.yaml")
    assert len(found) == MAX_MODELS


def test_compose_strings_of_odd_characters_are_bounded() -> None:
    for text in ("(" * 10_000, ")" * 10_000, "\\" * 10_001, "'" * 9_999, "${" * 50_000,
                 "a " * (MAX_CHARS // 2 + 1000), "$(" + "x" * MAX_CHARS, "`" * 7):
        split = compose_words(text, 1)
        assert sum(len(w.text) for w in split.words) <= MAX_CHARS


def test_app_template_with_many_controllers_reads_a_bounded_number() -> None:
    container = {"image": {"repository": "vllm/vllm-openai", "tag": "v0.10.1.1"},
                 "args": ["--model", "Qwen/Qwen2.5-7B"]}
    doc = {"controllers": {f"c{i}": {"containers": {"a": container, "b": container}}
                           for i in range(MAX_CONTAINERS * 3)}}
    found = parse_with([AppTemplateValuesParser()], json.dumps(doc), "values.yaml")
    assert len(found) == MAX_CONTAINERS


def test_argo_values_string_with_an_alias_bomb_is_not_expanded() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9))
    text = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: x}\n"
            "spec:\n  source:\n    chart: c\n    helm:\n      values: |\n"
            + "".join("        " + row + "\n" for row in bomb.splitlines()))
    assert parse_with([ArgoApplicationParser()], text, "app.yaml") == []


def test_values_listing_thousands_of_models_read_a_bounded_number() -> None:
    from kvlint.manifests.helm_keys import MAX_LISTED, GenericValuesParser

    item = {"source": "Qwen/Qwen2.5-7B", "engine": "vllm", "resources": {"gpu": 1}}
    doc = {"vllm": {"models": [dict(item, name=f"m{i}") for i in range(MAX_LISTED * 4)]}}
    found = parse_with([GenericValuesParser()], json.dumps(doc), "values.yaml")
    assert len(found) == MAX_LISTED


def test_an_srtctl_recipe_of_hostile_counts_is_read_without_a_traceback() -> None:
    from kvlint.manifests.srtctl_recipes import SrtctlRecipeParser

    for resources in ({"prefill_nodes": -3, "prefill_workers": -1, "decode_nodes": 0,
                       "decode_workers": 2, "gpus_per_node": 10**30},
                      {"agg_nodes": "x", "agg_workers": None, "gpus_per_node": "eight"}):
        doc = {"model": {"path": "m"}, "resources": resources,
               "backend": {"type": "sglang", "sglang_config": {"decode": {"tp-size": 8}}}}
        for served in parse_with([SrtctlRecipeParser()], json.dumps(doc), "recipe.yaml"):
            gpus = served.gpus
            assert gpus is None or not hasattr(gpus, "value") or gpus.value >= 0
