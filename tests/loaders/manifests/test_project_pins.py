"""The engine release a project's lock or requirements pin, for the commands its scripts run
on the host (kvlint/manifests/project_pins.py): the nearest file that pins the engine
exactly, inside the linted tree; never for a command run in a container image."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.lint.extraction import extract
from kvlint.manifests.base import Located, ServedModel
from kvlint.plugins import get_plugin_manager

UV_LOCK = ('version = 1\n\n[[package]]\nname = "torch"\nversion = "2.7.1"\n\n'
           '[[package]]\nname = "vllm"\nversion = "0.10.0"\n'
           'source = { registry = "https://pypi.org/simple" }\n')


def served(path: Path) -> list[ServedModel]:
    pm = get_plugin_manager(load_entry_points=False)
    found = extract(path, pm, [c() for b in pm.hook.kvlint_manifest_parsers() for c in b])
    assert isinstance(found, list), found
    return found


def version_of(tree: Path, files: dict[str, str], script: str = "scripts/serve.sh",
               text: str = "#!/bin/bash\nuv run vllm serve org/m\n") -> object:
    for name, content in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(content, encoding="utf-8")
    (tree / script).parent.mkdir(parents=True, exist_ok=True)
    (tree / script).write_text(text, encoding="utf-8")
    (m,) = served(tree / script)
    return m.engine_version


@pytest.mark.parametrize(("files", "version"), [
    ({"uv.lock": UV_LOCK}, "0.10.0"),
    ({"requirements.txt": "torch\nvllm==0.9.2  # pinned\n"}, "0.9.2"),
    ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["vllm==0.8.5"]\n'}, "0.8.5"),
    ({"pyproject.toml": '[tool.poetry.dependencies]\nvllm = "0.6.3"\n'}, "0.6.3"),
    ({"Pipfile.lock": '{"default": {"vllm": {"version": "==0.7.3"}}}'}, "0.7.3"),
    ({"pylock.toml": 'lock-version = "1.0"\n[[packages]]\nname = "vllm"\nversion = "0.11.0"\n'},
     "0.11.0"),
    # the nearest pin wins: the script's own folder before the project's root
    ({"uv.lock": UV_LOCK, "scripts/requirements.txt": "vllm==0.5.5\n"}, "0.5.5"),
    # a range pins nothing; a lock that does not parse is passed over
    ({"pyproject.toml": '[project]\nname = "x"\ndependencies = ["vllm>=0.8"]\n'}, None),
    ({"uv.lock": "[[package]\nname = "}, None),
])
def test_the_projects_pin_is_the_release_a_host_command_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str],
        version: str | None) -> None:
    monkeypatch.chdir(tmp_path)  # the linted tree: the checkout kvlint runs in
    found = version_of(tmp_path, files)
    if version is None:
        assert found is None
    else:
        assert isinstance(found, Located) and found.value == version
        assert "the project's pin" in found.source


def test_a_container_runs_its_image_not_the_projects_pin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    found = version_of(tmp_path, {"uv.lock": UV_LOCK},
                       text="#!/bin/bash\ndocker run --gpus 1 vllm/vllm-openai:v0.8.5 "
                            "--model org/m\n")
    assert isinstance(found, Located) and found.value == "0.8.5"
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM python:3.12\nRUN pip install vllm\n"
                          'CMD ["vllm", "serve", "org/m"]\n', encoding="utf-8")
    (m,) = served(dockerfile)
    assert not (isinstance(m.engine_version, Located) and m.engine_version.value == "0.10.0")


def test_a_lock_outside_the_linted_tree_is_not_read(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "uv.lock").write_text(UV_LOCK, encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    monkeypatch.chdir(tree)
    assert version_of(tree, {}) is None
