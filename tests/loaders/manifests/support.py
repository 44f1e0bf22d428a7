"""Shared helpers of the manifest parser tests: run the key-recognised parsers (Helm values,
compose, launchers, engine configs) on a fixture or a text, and read Located values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kvlint.manifests import compose, flat_configs, helm, launchers, ray_serve, trtllm_configs
from kvlint.manifests.base import (
    DocumentContext,
    Located,
    ManifestParser,
    ManifestProblem,
    ServedModel,
    Unresolved,
)
from kvlint.manifests.yaml_marks import load_documents

CORPUS = Path(__file__).resolve().parents[3] / "fixtures" / "manifests"
MINE = [cls for module in (helm, compose, launchers, flat_configs, trtllm_configs, ray_serve)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, ManifestParser) and cls.name
        and cls.__module__ == module.__name__]


def claims(document: object, ctx: DocumentContext) -> list[str]:
    """The names of the parsers that detect ``document`` (at most one may)."""
    return [cls.name for cls in MINE if cls().detect(document, ctx)]


def extract_text(text: str, path: str = "manifest.yaml") -> list[ServedModel]:
    docs = load_documents(text, path)
    assert not isinstance(docs, ManifestProblem), docs
    out: list[ServedModel] = []
    for index, doc in enumerate(docs):
        ctx = DocumentContext(path, index, tuple(docs))
        names = claims(doc, ctx)
        assert len(names) <= 1, names
        if names:
            parser = next(cls() for cls in MINE if cls.name == names[0])
            out.extend(parser.parse(doc, ctx))
    return out


def extract(rel: str) -> list[ServedModel]:
    path = CORPUS / rel
    return extract_text(path.read_text(encoding="utf-8"), str(path))


def extract_path(path: Path) -> list[ServedModel]:
    """Every served model kvlint's whole extraction (all built-in parsers) finds in the file
    ``path``, as ``kvlint lint`` reads it."""
    from kvlint.lint.extraction import extract as lint_extract
    from kvlint.plugins import get_plugin_manager

    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = lint_extract(path, pm, parsers)
    assert isinstance(found, list)
    return found


def tree_with_a_link_out(tmp_path: Path, link: str) -> Path:
    """A tree (``tmp_path/tree``) holding ``link``, a symlink to a script outside it that
    serves ``org/secret``, and a folder named ``dir.sh``: hostile inputs that must not be
    read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.sh").write_text("vllm serve org/secret\n", encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / link).symlink_to(outside / "secret.sh")
    (tree / "dir.sh").mkdir()
    return tree


def one(rel: str) -> ServedModel:
    found = extract(rel)
    assert len(found) == 1, found
    return found[0]


def v(value: Any) -> Any:
    return value.value if isinstance(value, Located) else value


def line(value: Any) -> int | None:
    return value.line if isinstance(value, Located | Unresolved) else None


def parse_with(parsers: Sequence[ManifestParser], text: str,
               path: str = "manifest.yaml") -> list[ServedModel]:
    """Every served model ``parsers`` find in ``text`` (at most one claims each document)."""
    docs = load_documents(text, path)
    assert isinstance(docs, list), docs
    out: list[ServedModel] = []
    for index, doc in enumerate(docs):
        ctx = DocumentContext(path=path, index=index, documents=tuple(docs))
        claimed = [p for p in parsers if p.detect(doc, ctx)]
        assert len(claimed) <= 1, f"document {index} claimed by {[p.name for p in claimed]}"
        for parser in claimed:
            out.extend(parser.parse(doc, ctx))
    return out


def model_map(models: Mapping[str, str], configs: Path) -> list[str]:
    """``--model-map REF=CONFIG`` arguments for ``models`` (ref -> file in ``configs``)."""
    return [arg for ref, file in models.items()
            for arg in ("--model-map", f"{ref}={configs / file}")]
