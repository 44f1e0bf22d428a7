"""Property over every manifest fixture: the GPUs a served model's plan needs (tp x pp, x dp
where data parallelism adds replicas) equal the GPUs its manifest requests, or a KV206 says
why not, or kvlint had to guess the layout (a value the engine refuses or the manifest leaves
unset: then nothing is claimed about it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.lint.extraction import extract
from kvlint.lint.resolver import ModelResolver
from kvlint.lint.runner import lint_served, plan_for
from kvlint.linter import default_config_defaults
from kvlint.manifests.base import Located, ServedModel, Unresolved
from kvlint.model.serving import ServingPlan
from kvlint.plugins import get_plugin_manager
from kvlint.registry import Registry
from tests.helpers import ROOT

FIXTURES = sorted(p for folder in ("manifests", "cases", "operators")
                  for p in (ROOT / "fixtures" / folder).rglob("*.y*ml"))


@pytest.fixture(scope="module")
def served_models() -> list[ServedModel]:
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    out: list[ServedModel] = []
    for path in FIXTURES:
        found = extract(path, pm, parsers)
        if isinstance(found, list):
            out.extend(found)
    return out


def test_the_fixtures_serve_models_with_gpu_requests(served_models: list[ServedModel]
                                                     ) -> None:
    requested = [s for s in served_models if isinstance(s.gpus, Located)]
    assert len(requested) >= 60, len(requested)


def test_gpus_needed_equal_gpus_requested_or_kv206_says_why(
        served_models: list[ServedModel], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    resolver = ModelResolver(offline=True, defaults=default_config_defaults())
    rules = Registry.from_plugins(get_plugin_manager(load_entry_points=False)).rules
    checked = 0
    for served in served_models:
        gpus = served.gpus
        if not isinstance(gpus, Located) or not isinstance(gpus.value, int) or \
                any(isinstance(getattr(served, n), Unresolved) for n in ("tp", "pp", "dp")) \
                or served.engine_problems:
            continue
        try:
            plan = plan_for(served, ServingPlan())
        except ValueError:
            continue
        result = lint_served(served, resolver, ServingPlan(), rules, resolver.defaults
                             or default_config_defaults())
        codes = {f.code for f in result.findings}
        where = f"{served.path}:{served.line} ({served.role or served.name})"
        if gpus.value == 0 and (served.engine and served.engine.value) == "llamacpp":
            assert "KV206" not in codes, where  # no GPU: llama.cpp serves on the CPU
        elif plan.layout.gpus != gpus.value:
            assert "KV206" in codes, (where, plan.layout, gpus.value)
        else:
            assert "KV206" not in codes, where
        checked += 1
    assert checked >= 50, checked
