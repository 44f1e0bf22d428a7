"""supervisord program sections (kvlint/manifests/supervisor_programs.py): ``command=`` split
as supervisord splits it (shlex, no shell), INI continuation lines, ``%(ENV_X)s`` and
``environment=``; other ``.conf`` files stay what they were."""

from __future__ import annotations

from pathlib import Path

from kvlint.manifests.base import Located
from kvlint.manifests.supervisor_programs import is_supervisor_config, supervisor_models
from tests.loaders.manifests.support import extract_path

CONF = """\
[supervisord]
nodaemon=true

[program:llm]
command=vllm serve Qwen/Qwen2.5-7B-Instruct --served-model-name "qwen 7b"
    --tensor-parallel-size 2 --max_model_len 32768   ; a comment
environment=CUDA_VISIBLE_DEVICES="0,1",HF_HOME="/data/hf"
autostart=true

[program:small]
command=python -m sglang.launch_server --model-path %(ENV_MODEL)s --tp 1
numprocs=2
process_name=%(program_name)s_%(process_num)02d

[program:web]
command=nginx -g "daemon off;"
"""


def value(v: object) -> object:
    return v.value if isinstance(v, Located) else v


def test_each_program_is_read_as_supervisord_runs_it() -> None:
    assert is_supervisor_config("conf.d/llm.conf", CONF)
    assert not is_supervisor_config("nginx.conf", "server {\n  listen 80;\n}\n")
    assert not is_supervisor_config("llm.yaml", CONF)
    vllm, sglang = supervisor_models(CONF, "supervisord.conf")
    assert (value(vllm.engine), value(vllm.model), value(vllm.tp), vllm.line) == \
        ("vllm", "Qwen/Qwen2.5-7B-Instruct", 2, 5)
    assert value(vllm.max_model_len) == 32768  # the continuation line, _ read as -
    assert value(vllm.gpus) == 2  # CUDA_VISIBLE_DEVICES from environment=
    assert value(sglang.engine) == "sglang" and not isinstance(sglang.model, Located)
    assert any("numprocs=2" in note for note in sglang.notes)


def test_lint_reads_a_conf_file_instead_of_calling_it_bad_yaml(tmp_path: Path) -> None:
    path = tmp_path / "llm.conf"
    path.write_text(CONF, encoding="utf-8")
    found = extract_path(path)
    assert [value(s.engine) for s in found] == ["vllm", "sglang"]


def test_another_programs_conf_is_not_called_bad_yaml(tmp_path: Path) -> None:
    from kvlint.lint.extraction import extract
    from kvlint.plugins import get_plugin_manager

    path = tmp_path / "nginx.conf"
    path.write_text("server {\n  listen 80;\n}\n", encoding="utf-8")
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract(path, pm, parsers)
    assert not isinstance(found, list) or not found
    problems = getattr(found, "problems", ())
    assert [p.kind for p in problems] == ["not-a-manifest"]


def test_a_comment_ends_its_own_line_only_and_long_values_stay_linear() -> None:
    text = ("[program:x]\ncommand=vllm serve org/m ; the model\n"
            "    --tensor-parallel-size 4 ; four GPUs\n")
    (found,) = supervisor_models(text, "x.conf")
    assert (value(found.model), value(found.tp)) == ("org/m", 4)
    long = "[program:x]\ncommand=vllm serve org/m\n" + "    --port 8000\n" * 20_000
    (found,) = supervisor_models(long, "x.conf")  # joined once, not line by line
    assert value(found.model) == "org/m"
