"""Cheap entry-point discovery: ``kvlint.plugins.may_have_entry_points`` reads only the
``entry_points.txt`` files of the distributions on the path, so a run without any kvlint
plugin installed never parses every distribution's metadata."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from kvlint.plugins import may_have_entry_points
from tests.helpers import ROOT


def _dist(root: Path, folder: str, text: str) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "entry_points.txt").write_text(text, encoding="utf-8")


def test_no_kvlint_group_means_no_plugin(tmp_path: Path) -> None:
    _dist(tmp_path, "tool-1.0.dist-info", "[console_scripts]\ntool = tool:main\n")
    _dist(tmp_path, "old-1.0.egg-info", "[pytest11]\nkvlint = x\n")  # kvlint as a name only
    assert not may_have_entry_points([str(tmp_path), str(tmp_path / "missing")])


def test_kvlint_group_in_any_layout_is_found(tmp_path: Path) -> None:
    for folder in ("p-1.0.dist-info", "q-1.0.egg-info", "r-1.0-py3.11.egg/EGG-INFO"):
        root = tmp_path / folder.split("/")[0].replace(".", "_")
        _dist(root, folder, "[console_scripts]\nx = y:z\n\n [kvlint] \nmine = pkg.rules\n")
        assert may_have_entry_points([str(root)]), folder


def test_zip_path_entry_defers_to_importlib_metadata(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("x.py", "")
    assert may_have_entry_points([str(archive)])


def test_installed_example_plugin_is_still_discovered(tmp_path: Path) -> None:
    """A real distribution with a ``[kvlint]`` entry point, made importable by a path entry:
    the pre-scan lets it through and importlib.metadata loads it."""
    site = tmp_path / "site"
    (site / "kvlint_probe_plugin").mkdir(parents=True)
    (site / "kvlint_probe_plugin" / "__init__.py").write_text("", encoding="utf-8")
    dist = site / "kvlint_probe_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kvlint-probe-plugin\n"
                                   "Version: 0.1\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[kvlint]\nprobe_example = kvlint_probe_plugin\n",
                                           encoding="utf-8")
    code = (f"import sys; sys.path.insert(0, {str(site)!r})\n"
            "from kvlint.plugins import entry_points_of_installed\n"
            "print([ep.name for ep in entry_points_of_installed()])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, check=True, timeout=60,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert "probe_example" in proc.stdout
