"""Package metadata as PyPI shows it: SPDX licence with its file, classifiers, URLs, one
version. Read from pyproject.toml and from the metadata setuptools actually builds."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kvlint import __version__

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_licence_is_an_spdx_expression_with_its_file() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"]), \
        "PEP 639: the licence expression replaces licence classifiers"


def test_version_has_one_source() -> None:
    assert "version" not in PROJECT and "version" in PROJECT["dynamic"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kvlint.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", __version__)


def test_classifiers_urls_and_keywords() -> None:
    classifiers = PROJECT["classifiers"]
    assert "Typing :: Typed" in classifiers
    assert f"Programming Language :: Python :: 3.{sys.version_info.minor}" in classifiers \
        or sys.version_info >= (3, 14)
    trove = pytest.importorskip("trove_classifiers", reason="trove-classifiers not installed")
    assert set(classifiers) <= trove.classifiers
    urls = PROJECT["urls"]
    assert {"Homepage", "Documentation", "Changelog", "Issues", "Source"} <= set(urls)
    assert all(u.startswith("https://") for u in urls.values())
    assert len(PROJECT["keywords"]) >= 5


def test_documents_the_urls_name_exist_in_the_repository() -> None:
    for url in PROJECT["urls"].values():
        match = re.search(r"/blob/main/(.+)$", url)
        if match:
            assert (ROOT / match.group(1)).is_file(), url


def test_readme_links_work_on_pypi() -> None:
    """PyPI renders the README away from the repository: links must be absolute (or anchors),
    and every repository file they name must exist."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert targets
    relative = [t for t in targets if not t.startswith(("https://", "http://", "#", "mailto:"))]
    assert relative == []
    for target in targets:
        match = re.match(r"https://(?:github\.com/kvlint/kvlint/blob|raw\.githubusercontent\.com"
                         r"/kvlint/kvlint)/main/([^#]+)", target)
        if match:
            assert (ROOT / match.group(1)).exists(), target
    assert "docs/design.md" in readme and "CHANGELOG.md" in readme and "LICENSE" in readme
