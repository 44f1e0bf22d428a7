"""The built-in parsers' lazy table names every parser class the modules define, in order."""

from __future__ import annotations

import importlib

from kvlint.manifests.base import DocumentContext, ManifestParser
from kvlint.manifests.builtin import LAZY_PARSERS, PARSERS, LazyParser

MODULES = ("kvlint.manifests.kubernetes", "kvlint.manifests.kubernetes_crds",
           "kvlint.manifests.operators", "kvlint.manifests.platforms",
           "kvlint.manifests.serving_packs", "kvlint.manifests.helm_releases",
           "kvlint.manifests.app_template",
           "kvlint.manifests.helm", "kvlint.manifests.compose",
           "kvlint.manifests.launchers", "kvlint.manifests.container_tasks",
           "kvlint.manifests.flat_configs",
           "kvlint.manifests.trtllm_configs", "kvlint.manifests.ray_serve",
           "kvlint.manifests.github_actions", "kvlint.manifests.llama_swap",
           "kvlint.manifests.srtctl_recipes",
           "kvlint.manifests.helm_keys")


def test_lazy_table_lists_every_parser_class_in_detection_order() -> None:
    defined = [(cls.name, f"{name}:{cls.__qualname__}")
               for name in MODULES
               for cls in vars(importlib.import_module(name)).values()
               if isinstance(cls, type) and issubclass(cls, ManifestParser) and cls.name
               and cls.__module__ == name]
    assert list(PARSERS) == defined
    assert [cls.name for cls in LAZY_PARSERS] == [name for name, _ in defined]


def test_lazy_parser_detects_and_parses_as_its_implementation() -> None:
    lazy = next(cls for cls in LAZY_PARSERS if cls.name == "compose")()
    assert isinstance(lazy, LazyParser)
    document = {"services": {"vllm": {"image": "vllm/vllm-openai:v0.11.0",
                                       "command": ["--model", "Qwen/Qwen3-8B"]}}}
    ctx = DocumentContext("compose.yaml", 0, (document,))
    real = lazy.implementation()
    assert type(real).__name__ == "ComposeParser"
    assert lazy.detect(document, ctx) is True
    assert lazy.parse(document, ctx) == real.parse(document, ctx)
    assert lazy.detect({"kind": "Deployment", "apiVersion": "apps/v1"}, ctx) is False
