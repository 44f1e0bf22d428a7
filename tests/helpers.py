"""Shared test helpers: fixture paths and geometry from fixture configs."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from kvlint.loaders.config_defaults import TableDefaults
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.model.geometry import AttentionGeometry

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "fixtures" / "configs"
EXPECTED = CONFIGS / "expected.json"


def framed(header: bytes, body: bytes) -> bytes:
    """A result-cache file holding the pickle ``body``: its header, the body's SHA-256 and the
    body (kvlint.cache.results.ResultCache.framed), as a hand writing one would frame it."""
    import hashlib

    return header + hashlib.sha256(body).digest() + body


def fixture_config(name: str) -> dict[str, Any]:
    """A fixture config by file name, with or without ``.json``."""
    file = CONFIGS / (name if name.endswith(".json") else f"{name}.json")
    value: dict[str, Any] = json.loads(file.read_text(encoding="utf-8"))
    return value


@cache
def geometry(name: str) -> AttentionGeometry:
    return resolve_geometry(fixture_config(name), defaults=TableDefaults())


def expected() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXPECTED.read_text(encoding="utf-8"))
    data.pop("_about")
    return data


GQA_SOURCE = '''\
import torch


def repeat_kv(hidden, n_rep):
    batch, heads, seq, dim = hidden.shape
    hidden = hidden[:, :, None, :, :].expand(batch, heads, n_rep, seq, dim)
    return hidden.reshape(batch, heads * n_rep, seq, dim)


class Attention(torch.nn.Module):
    def forward(self, query, key_states, value_states):
        key_states = repeat_kv(key_states, self.num_key_value_groups)
        value_states = repeat_kv(value_states, self.num_key_value_groups)
        weights = torch.matmul(query, key_states.transpose(2, 3))
        return torch.matmul(weights.softmax(-1), value_states)
'''
"""A module that materialises GQA with ``repeat_kv`` (what ``scan`` flags as KV401)."""


def lint_script(directory: Path, text: str, model: str, stem: str) -> list[dict[str, Any]]:
    """The findings (JSON report dicts) of ``kvlint lint`` on a shell script of ``text``
    written in ``directory``, offline, with ``model`` mapped to the fixture config ``stem``."""
    from click.testing import CliRunner

    from kvlint.cli import main

    script = directory / "serve.sh"
    script.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(script), "--no-plugins", "--offline", "--isolated", "--no-cache",
        "--format", "json", "--model-map", f"{model}={CONFIGS / (stem + '.json')}"])
    return [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]


def fake_wheel(path: Path, files: dict[str, str]) -> Path:
    """A wheel (a zip) at ``path`` holding ``files`` (name -> text): what the generators that
    read engines' wheels are given in tests."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def lint_deployment(tmp_path: Path, image: str, args: list[str], model: str, config: Path,
                    selector: str = "") -> list[dict[str, Any]]:
    """The findings (JSON report dicts) of ``kvlint lint`` on a one-container Deployment of
    ``image`` with ``args`` (one per line, the first on line 12), one GPU, offline, with
    ``model`` mapped to ``config``; ``selector`` a ``nodeSelector`` label value
    (``nvidia.com/gpu.product``)."""
    from click.testing import CliRunner

    from kvlint.cli import main

    lines = "".join(f"            - {a}\n" for a in args)
    node = f"      nodeSelector: {{nvidia.com/gpu.product: {selector}}}\n" if selector else ""
    (tmp_path / "deploy.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n  template:\n"
        f"    spec:\n{node}      containers:\n        - name: vllm\n"
        f"          image: {image}\n          args:\n{lines}"
        "          resources: {limits: {nvidia.com/gpu: 1}}\n", "utf-8")
    result = CliRunner().invoke(main, [
        "lint", str(tmp_path / "deploy.yaml"), "--no-plugins", "--offline", "--isolated",
        "--no-cache", "--format", "json", "--model-map", f"{model}={config}"])
    return [f for r in json.loads(result.stdout)["results"] for f in r["findings"]]
