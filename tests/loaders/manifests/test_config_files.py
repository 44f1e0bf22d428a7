"""Engine config files a launch names with ``--config``, read from the linted tree where the
manifest puts them (kvlint/manifests/config_files.py): a compose service's bind mount, a
``docker run -v``, a path a script on the host names; the command line wins (vLLM, SGLang),
values sit on the command's line with the file's line in their source."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvlint.lint.extraction import extract
from kvlint.manifests.base import Located, ServedModel
from kvlint.plugins import get_plugin_manager

CONFIG = ("model: org/served\ntensor-parallel-size: 2\nmax_model_len: 16384\n"
          "max-num-seqs: 64\n")


def served(path: Path) -> list[ServedModel]:
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract(path, pm, parsers)
    assert isinstance(found, list), found
    return found


def v(value: object) -> object:
    return value.value if isinstance(value, Located) else value


def beside_config(tree: Path, name: str, text: str) -> ServedModel:
    """The one served model of the manifest ``name`` (``text``), with ``config.yaml`` beside."""
    (tree / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (tree / name).write_text(text, encoding="utf-8")
    (m,) = served(tree / name)
    return m


def test_a_compose_service_reads_the_config_it_mounts(tmp_path: Path) -> None:
    m = beside_config(tmp_path, "compose.yaml",
                      "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.1\n"
                      '    command: ["--config", "/app/config.yaml", "--max-num-seqs", "8"]\n'
                      "    volumes:\n      - ./config.yaml:/app/config.yaml:ro\n")
    assert (v(m.model), v(m.tp), v(m.max_model_len), v(m.max_num_seqs)) == \
        ("org/served", 2, 16384, 8)  # the command line's --max-num-seqs wins
    assert isinstance(m.tp, Located) and m.tp.line == 4
    assert m.tp.source == "./config.yaml line 2: tensor-parallel-size"
    assert any("read from ./config.yaml, mounted at /app/config.yaml" in n for n in m.notes)
    assert not any("is not read from here" in n for n in m.notes)


def test_docker_run_reads_a_config_mounted_from_the_scripts_folder(tmp_path: Path) -> None:
    # CONFIG="$(pwd)/config.yaml": the script checks for the file where it runs
    m = beside_config(
        tmp_path, "run.sh",
        '#!/bin/bash\nCONFIG="$(pwd)/config.yaml"\nIMAGE="vllm/vllm-openai:v0.15.1"\n'
        '[[ -f "${CONFIG}" ]] || exit 1\n'
        'docker create --name x --gpus all -v "${CONFIG}:/workspace/config.yaml:ro" \\\n'
        '  "${IMAGE}" \\\n  --config /workspace/config.yaml\n')
    assert (v(m.engine), v(m.engine_version), v(m.model), v(m.tp)) == \
        ("vllm", "0.15.1", "org/served", 2)


def test_a_host_command_reads_its_config_beside_the_script(tmp_path: Path) -> None:
    (tmp_path / "serve.yaml").write_text(CONFIG, encoding="utf-8")
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve --config serve.yaml --max-model-len 4096\n",
                      encoding="utf-8")
    (m,) = served(script)
    assert (v(m.model), v(m.tp), v(m.max_model_len)) == ("org/served", 2, 4096)


def test_a_config_that_is_not_there_is_said_not_read(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve org/m --config /etc/vllm/c.yaml\n",
                      encoding="utf-8")
    (m,) = served(script)
    assert v(m.model) == "org/m"
    assert any("engine config file /etc/vllm/c.yaml is not read from here" in n
               for n in m.notes)


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_a_config_linked_out_of_the_tree_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.yaml").write_text(CONFIG, encoding="utf-8")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "c.yaml").symlink_to(outside / "c.yaml")
    (tree / ".git").mkdir()
    script = tree / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve --config c.yaml\n", encoding="utf-8")
    (m,) = served(script)
    assert m.model is None and v(m.tp) is None


def test_a_config_that_is_not_a_mapping_is_said_not_read(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\nvllm serve org/m --config c.yaml\n", encoding="utf-8")
    (m,) = served(script)
    assert v(m.model) == "org/m"
    assert any("engine config file c.yaml is not read" in n for n in m.notes)
