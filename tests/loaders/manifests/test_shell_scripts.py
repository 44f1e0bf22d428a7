"""Shell scripts that start an engine, directly or with ``docker run`` (kvlint/manifests/
shell_scripts.py): the engine, its arguments, the image's version and the GPUs given."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.shell_scripts import is_script, script_models


def served(text: str, name: str = "serve.sh") -> list[dict[str, object]]:
    out = []
    for model in script_models(text, name):
        def value(field: object) -> object:
            return field.value if isinstance(field, Located) else field
        out.append({"engine": value(model.engine), "model": value(model.model),
                    "tp": value(model.tp), "version": value(model.engine_version),
                    "gpus": value(model.gpus), "line": model.line})
    return out


def test_docker_run_of_an_entrypoint_image_runs_its_server() -> None:
    text = ("#!/bin/bash\nMODEL=meta-llama/Llama-3.1-8B-Instruct\n"
            "docker run --rm --gpus 2 -p 8000:8000 -v ~/.cache:/root/.cache \\\n"
            "  --ipc=host vllm/vllm-openai:v0.8.5 --model $MODEL --tensor-parallel-size 2\n")
    assert served(text) == [{"engine": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct",
                             "tp": 2, "version": "0.8.5", "gpus": 2, "line": 4}]


def test_tgi_reads_its_settings_from_the_container_environment() -> None:
    text = ("docker run --gpus '\"device=0,1\"' -e MODEL_ID=org/model -e NUM_SHARD=2 "
            "ghcr.io/huggingface/text-generation-inference:3.0.1\n")
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"], found["gpus"], found["version"]) \
        == ("tgi", "org/model", 2, 2, "3.0.1")


def test_a_device_list_with_a_space_after_the_comma_is_two_gpus() -> None:
    """Docker reads ``--gpus`` as CSV: ``'"device=6, 7"'`` gives devices 6 and 7."""
    text = ("docker run --gpus '\"device=6, 7\"' lmsysorg/sglang:latest bash -c \"python3 -m "
            "sglang.launch_server --model-path Qwen/Qwen2.5-VL-32B-Instruct --tp-size 2\"\n")
    (found,) = served(text)
    assert (found["engine"], found["tp"], found["gpus"]) == ("sglang", 2, 2)


def test_the_gpus_of_a_script_variable() -> None:
    """``GPUS="device=0"`` then ``--gpus "$GPUS"``: the variable's plain-run value."""
    text = ('GPUS="device=0"\n'
            'docker run -d --gpus "$GPUS" lmsysorg/sglang:latest python -m '
            "sglang.launch_server --model-path org/m\n")
    (found,) = served(text)
    assert (found["engine"], found["gpus"]) == ("sglang", 1)


def test_the_image_tag_from_a_script_variable() -> None:
    text = ("tgi_version=2.1.1\nnum_shard=\"4\"\n"
            "docker run --gpus all ghcr.io/huggingface/text-generation-inference:$tgi_version "
            "--model-id /data/$1/ --num-shard $num_shard\n"
            "docker run --gpus all vllm/vllm-openai:${VLLM_TAG} --model org/m\n")
    tgi, vllm = served(text)
    assert (tgi["engine"], tgi["version"], tgi["tp"]) == ("tgi", "2.1.1", 4)
    assert (vllm["engine"], vllm["version"]) == ("vllm", None)  # a tag nobody set: unknown


def test_a_server_started_in_sh_c_under_nohup() -> None:
    text = ('DIR="/models"\n'
            'nohup sh -c "CUDA_VISIBLE_DEVICES=0 python -m lmdeploy serve api_server \\\n'
            '  ${DIR}/Qwen/Qwen2.5-7B-Instruct --tp 2" > log 2>&1 &\n'
            "bash -lc 'exec vllm serve org/m --tensor-parallel-size 4'\n")
    lmdeploy, vllm = served(text)
    assert (lmdeploy["engine"], lmdeploy["model"], lmdeploy["tp"]) == \
        ("lmdeploy", "/models/Qwen/Qwen2.5-7B-Instruct", 2)
    assert (vllm["engine"], vllm["model"], vllm["tp"]) == ("vllm", "org/m", 4)


def test_fewer_visible_devices_than_the_engine_needs() -> None:
    """``CUDA_VISIBLE_DEVICES`` names a bare command's GPUs on its node, as a container's
    limit does: fewer than tp (KV206 then says the engine cannot place its ranks), or more
    (KV206: idle). A server that spans nodes sees one node's devices: not read."""
    few = served("CUDA_VISIBLE_DEVICES=4,5 lmdeploy serve api_server org/m --tp 4\n")
    assert few[0]["gpus"] == 2
    many = served("CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve org/m\n")
    assert many[0]["gpus"] == 4
    bare = served("vllm serve org/m -tp 2\n")
    assert bare[0]["gpus"] == 2  # no list: the world it takes of the host's GPUs
    ray = served("export CUDA_VISIBLE_DEVICES=0\nray start --head\n"
                 "vllm serve org/m --pipeline-parallel-size 2\n")
    assert ray[0]["gpus"] == 2


def test_a_command_after_the_image_is_the_engine_it_names() -> None:
    text = ("sudo docker run -d --gpus all --shm-size 32g lmsysorg/sglang:v0.4.6.post1 "
            "python3 -m sglang.launch_server --model-path Qwen/QwQ-32B --tp 4\n")
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"], found["version"], found["gpus"]) \
        == ("sglang", "Qwen/QwQ-32B", 4, "0.4.6.post1", 4)  # --gpus all: the engine's tp


def test_a_direct_launch_with_a_pip_pin() -> None:
    text = "pip install vllm==0.11.0\nvllm serve org/m -tp 4 --max-model-len 8192\n"
    (found,) = served(text, "run.bash")
    assert (found["engine"], found["tp"], found["version"]) == ("vllm", 4, "0.11.0")


def test_a_wheel_installed_by_path_pins_its_version() -> None:
    """A release wheel installed from a folder: the version is in its file name, here through
    a variable the script sets once (TGI's Python server carries the launcher's version)."""
    text = ("TGI_VERSION='1.4.4'\nif [ -z \"$R\" ]; then R=$HOME/rel; fi\n"
            "pip install --no-index $R/vllm-*.whl "
            "\"$R/text_generation_server-$TGI_VERSION-py3-none-any.whl[bnb]\"\n"
            "text-generation-launcher --model-id org/m --num-shard 1\n")
    (found,) = served(text, "run.sh")
    assert (found["engine"], found["version"]) == ("tgi", "1.4.4")


@pytest.mark.parametrize(("path", "text", "script"), [
    ("a.sh", "", True), ("a.yaml", "#!/usr/bin/env bash\n", True),
    ("a", "#!/bin/sh -e\n", True), ("a.yaml", "key: value\n", False),
    ("a.txt", "#!/usr/bin/python3\n", False),
])
def test_what_is_a_script(path: str, text: str, script: bool) -> None:
    assert is_script(path, text) is script


def test_a_script_through_kvlint_lint(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kvlint.cli import main

    script = tmp_path / "deploy.sh"
    script.write_text("docker run --gpus 1 vllm/vllm-openai:v0.8.5 --model org/m "
                      "--tensor-parallel-size 2\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(script), "--isolated", "--no-plugins",
                                       "--offline", "--format", "json"])
    import json

    data = json.loads(result.stdout)
    (entry,) = [r for r in data["results"] if r["target"]["ref"] == "org/m"]
    assert entry["serving"]["tp"] == 2


def test_no_engine_in_a_script_is_no_model() -> None:
    assert served("echo hello\ndocker run --rm busybox ls\n") == []


def test_a_script_that_requests_no_gpu_count_takes_the_engines_world() -> None:
    (bare,) = served("vllm serve Qwen/Qwen2.5-7B --tensor-parallel-size 2 "
                     "--pipeline-parallel-size 2 --data-parallel-size 2\n")
    assert bare["gpus"] == 8  # tp x pp x dp workers, one GPU each
    (dpa,) = served("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 "
                    "--tp 8 --dp 8 --enable-dp-attention\n")
    assert dpa["gpus"] == 8  # DP attention reuses the TP group
    (counted,) = served("docker run --gpus 2 vllm/vllm-openai:v0.11.0 --model m/x --tp 4\n")
    assert counted["gpus"] == 2  # what docker grants wins (KV206 compares it)
    (unresolved,) = served("vllm serve Qwen/Qwen2.5-7B --tensor-parallel-size $TP\n")
    assert unresolved["gpus"] is None


DETACHED = """\
#!/bin/bash
vllm serve Qwen/Qwen3-8B \\
    --tensor-parallel-size 2
    --max-model-len 32768 \\
    --gpu-memory-utilization=0.85

--port 8000
"""


def test_options_a_missing_backslash_cuts_off_are_kv704() -> None:
    """Line 3 ends without ``\\``: lines 4-5 are a command of their own, not vLLM's (line 7
    is after a blank line: another command, not part of the cut)."""
    (served_,) = script_models(DETACHED, "serve.sh")
    assert served_.max_model_len is None  # as the shell runs it
    assert isinstance(served_.tp, Located) and served_.tp.value == 2
    (problem,) = served_.engine_problems
    assert (problem.kind, problem.option, problem.line) == ("detached", "--max-model-len", 4)
    assert problem.data["options"] == ["--max-model-len", "--gpu-memory-utilization"]
    assert problem.data["known_options"] == problem.data["options"]
    assert "line 3 ends the vLLM command without a trailing \\" in problem.message


def test_a_comment_line_inside_a_continued_command_cuts_it() -> None:
    """The comment's own trailing ``\\`` is part of the comment: the command ends there."""
    script = ("vllm serve m \\\n  --tensor-parallel-size 2 \\\n  # --enforce-eager \\\n"
              "  # --max-num-seqs 8 \\\n  --max-model-len 4096 \\\n  --port 8001\n")
    (served_,) = script_models(script, "serve.sh")
    assert served_.max_model_len is None and isinstance(served_.tp, Located)
    (problem,) = served_.engine_problems
    assert (problem.option, problem.line) == ("--max-model-len", 5)
    assert problem.data["options"] == ["--max-model-len", "--port"]
    assert problem.message.startswith("line 3 is a comment, which ends the vLLM command")


@pytest.mark.parametrize("script", [
    "vllm serve m \\\n    --port 8000\n",  # every line continued
    "vllm serve m --port 8000\n# a note\necho done\n",  # a command after the comment
    "vllm serve m --port 8000\necho done\n",
    "vllm serve m --port 8000\n\n--x 1\n",  # a blank line between: not a cut continuation
    "vllm serve m --port 8000; --x 1\n",  # the same line
])
def test_no_cut_off_options(script: str) -> None:
    (served_,) = script_models(script, "serve.sh")
    assert not [p for p in served_.engine_problems if p.kind == "detached"]


def test_kv704_through_kvlint_lint(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from kvlint.cli import main

    script = tmp_path / "serve.sh"
    script.write_text(DETACHED, encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(script), "--isolated", "--no-plugins",
                                       "--offline", "--format", "json", "--select", "KV704"])
    data = json.loads(result.stdout)
    (finding,) = [f for r in data["results"] for f in r["findings"]]
    assert (finding["code"], finding["severity"], finding["line"]) == ("KV704", "error", 4)


def test_llama_server_sampling_and_fit_options_are_known() -> None:
    """--min-p, --top-k, --fit on and -fa on are llama-server options (common/arg.cpp at
    7c158fbb4 and 0c1e57098); --no-mmap and --mlock those of earlier builds."""
    (served_,) = script_models(
        "llama-server -m m.gguf --min-p 0.01 --top-k 40 --top-p 0.9 --fit on -fa on "
        "--no-mmap --mlock -ngl 99 -c 8192\n", "serve.sh")
    assert not served_.engine_problems


def test_apptainer_exec_runs_the_command_after_the_image() -> None:
    (served_,) = script_models(
        'apptainer exec --nv --cleanenv --bind "$HOME/hf":/root/.cache/huggingface '
        '--env PORT=8000 vllm.sif \\\n  bash -lc "vllm serve openai/gpt-oss-120b '
        '--tensor-parallel-size 2"\n', "serve.sbatch")
    assert isinstance(served_.model, Located) and served_.model.value == "openai/gpt-oss-120b"
    assert isinstance(served_.tp, Located) and served_.tp.value == 2
    assert isinstance(served_.image, Located) and served_.image.value == "vllm.sif"


@pytest.mark.parametrize(("image", "expected", "version"), [
    ("vllm-openai_latest.sif", "vllm-openai:latest", "latest"),
    ("/scratch/images/vllm-openai_v0.8.5.sif", "vllm-openai:v0.8.5", "0.8.5"),
    ("sglang_v0.5.5-cu129.simg", "sglang:v0.5.5-cu129", None),
    ("vllm.sif", "vllm.sif", None),  # no tag in the name: as written
])
def test_apptainer_pull_names_name_the_image(image: str, expected: str,
                                            version: str | None) -> None:
    """``apptainer pull docker://vllm/vllm-openai:latest`` writes ``vllm-openai_latest.sif``;
    the file's name gives the image and its tag back."""
    (served_,) = script_models(f"apptainer exec --nv {image} vllm serve org/m\n", "run.sh")
    assert isinstance(served_.image, Located) and served_.image.value == expected
    if version is not None:
        assert isinstance(served_.engine_version, Located)
        assert served_.engine_version.value == version


@pytest.mark.parametrize("command", [
    "python -m trl.scripts.vllm_serve --model Qwen/Qwen3-4B --tensor_parallel_size 2 "
    "--max_model_len 32768 --enable_prefix_caching True --log_level info &",
    "trl vllm-serve --model Qwen/Qwen3-4B --tensor-parallel-size 2 --max_model_len 32768",
])
def test_trl_vllm_serve_is_a_vllm_server(command: str) -> None:
    """TRL's launcher takes vLLM's options with underscores, and its own (``--log_level``),
    which are not judged against vLLM's table."""
    (served_,) = script_models(command + "\n", "serve.sh")
    assert isinstance(served_.engine, Located) and served_.engine.value == "vllm"
    assert isinstance(served_.tp, Located) and served_.tp.value == 2
    assert isinstance(served_.max_model_len, Located) and served_.max_model_len.value == 32768
    assert not served_.engine_problems


def test_a_command_with_thousands_of_unknown_options_is_summed_up() -> None:
    """A generated (or hostile) script: 5,000 options vLLM does not know. The first
    MAX_PROBLEMS are reported one by one, the rest in one problem, unjudged (each judged
    option costs a search of the option table)."""
    from kvlint.manifests.engine_options import MAX_PROBLEMS

    script = "vllm serve org/m \\\n" + "  --x-unknown-option 1 \\\n" * 5000 + "\n"
    (served_,) = script_models(script, "serve.sh")
    problems = served_.engine_problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].data["reason"] == "too-many"
    assert "more options and arguments after 64" in problems[-1].message


def test_ssh_runs_its_command_on_the_remote_host() -> None:
    """``ssh HOST "COMMAND"``: the remote shell parses the words after the host, after the
    local shell expanded them, so a ``;`` inside a variable the script set separates
    commands there."""
    text = ('#!/bin/bash\n'
            'common="source env.sh; export X=1; \\\n'
            'nohup python3 -m sglang.launch_server --model-path org/Big-671B \\\n'
            '--tp-size 16"\n'
            'start() {\n'
            '  ssh -o StrictHostKeyChecking=no -p 22 $1 "$common --node-rank $2 &"\n'
            '}\n')
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"]) == ("sglang", "org/Big-671B", 16)


def test_ssh_with_a_plain_command_and_single_quotes() -> None:
    text = "ssh gpu-node-1 'vllm serve org/model -tp 2 --port 8000'\n"
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"]) == ("vllm", "org/model", 2)


def test_ssh_without_a_command_starts_nothing() -> None:
    assert served("ssh -i key.pem -l ubuntu host\n") == []


def test_pm2_runs_a_command_string_and_a_program_with_its_arguments() -> None:
    """``pm2 start "CMD"``: a script with a space is run by ``/bin/bash -c`` (pm2's
    lib/Common.js); ``pm2 start PROGRAM [options] -- ARGS`` runs PROGRAM with ARGS."""
    text = ('pm2 start --name "mistral" "vllm serve org/a --gpu-memory-utilization 0.35"\n'
            'pm2 start vllm --name qwen -i 1 -- serve org/b --tensor-parallel-size 2\n'
            'pm2 start --max-restarts 3 -k 5000 "vllm serve org/c" --watch\n'
            'pm2 start --log "vllm serve org/d"\n'  # an optional value: the log's path
            'pm2 start app.js --name web\n'
            'pm2 start --name nothing\n')
    found = served(text)
    assert [(f["engine"], f["model"], f["tp"]) for f in found] == [
        ("vllm", "org/a", None), ("vllm", "org/b", 2), ("vllm", "org/c", None)]


def test_a_program_named_by_a_variable_is_found() -> None:
    """``VLLM="${HOME}/venv/bin/vllm"`` then ``"${VLLM}" serve``: HOME is set in any user's
    shell, so the program is vLLM's, whatever the home directory."""
    text = ('VLLM="${HOME}/vllm-env/bin/vllm"\n'
            'CUDA_VISIBLE_DEVICES=0 "${VLLM}" serve "org/model-a" --port 8002 &\n'
            'CUDA_VISIBLE_DEVICES=1 $VLLM serve org/model-b --port 8003 &\n')
    found = served(text)
    assert [(f["engine"], f["model"]) for f in found] == [("vllm", "org/model-a"),
                                                            ("vllm", "org/model-b")]


def test_tgis_image_entrypoint_script_runs_the_launcher() -> None:
    text = ('docker run --gpus all -e MODEL_ID=org/model my-tgi-build:sm120 \\\n'
            '  bash -lc "exec /tgi-entrypoint.sh --num-shard 2"\n')
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"]) == ("tgi", "org/model", 2)


def test_process_tools_and_conditions_name_no_served_engine() -> None:
    """``pkill -f llama-server`` and ``if ! pgrep -f "vllm serve"`` mention an engine but
    start none."""
    text = ('pkill -f "llama-server"\n'
            'if ! pgrep -f "vllm serve org/m" > /dev/null; then\n'
            '  echo "not running"\n'
            'fi\n'
            'killall llama-server || true\n'
            'while ! pidof llama-server; do sleep 1; done\n')
    assert served(text) == []
    started = 'if vllm serve org/model -tp 2; then echo ok; fi\n'
    (found,) = served(started)
    assert (found["engine"], found["model"], found["tp"]) == ("vllm", "org/model", 2)


def test_an_array_of_options_is_its_words() -> None:
    """``ARGS=( ... )``, ``ARGS+=( ... )`` and ``"${ARGS[@]}"``: the engine gets the words,
    each quoted as written; lines keep their numbers."""
    text = ('#!/bin/bash\n'
            'MODEL=org/model\n'
            'ARGS=(\n'
            '  --tensor-parallel-size 2   # two GPUs\n'
            '  --max-model-len "32768"\n'
            ')\n'
            'if [ -n "$X" ]; then\n'
            '  ARGS+=(--served-model-name "my model")\n'
            'fi\n'
            'exec vllm serve "$MODEL" "${ARGS[@]}"\n')
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"], found["line"]) == (
        "vllm", "org/model", 2, 10)


@pytest.mark.parametrize("text", [
    "A=(--tp 2\nvllm serve m \"${A[@]}\"\n",                  # never closed
    "A=($(cat args.txt))\nvllm serve m \"${A[@]}\"\n",        # a substitution inside
    "read -a A <<< \"--tp 2\"\nvllm serve m \"${A[@]}\"\n",   # not a literal list
])
def test_an_array_kvlint_cannot_read_stays_unresolved(text: str) -> None:
    (found,) = served(text)
    assert found["engine"] == "vllm" and found["tp"] is None


def test_an_array_echoed_inside_a_string_is_not_put_in_there() -> None:
    """``echo "> vllm serve ${ARGS[*]}"`` is one quoted word: the array's quoted items put
    into it would close its quotes and swallow the real command on the next line."""
    text = ('#!/bin/bash\n'
            'ARGS=(\n'
            '  "org/model" "--tensor-parallel-size" "2"\n'
            '  "--speculative-config" \'{"method":"mtp","num_speculative_tokens":2}\'\n'
            ')\n'
            'echo "> vllm serve ${ARGS[*]}"\n'
            'vllm serve "${ARGS[@]}"\n')
    (found,) = served(text)
    assert (found["model"], found["tp"], found["line"]) == ("org/model", 2, 7)


def test_array_words_are_bounded() -> None:
    from kvlint.manifests.shell_arrays import MAX_ARRAY_CHARS, inline_arrays

    big = "A=(" + " --x" * (MAX_ARRAY_CHARS // 2) + ")\n" + "vllm serve m \"${A[@]}\"\n" * 3
    assert inline_arrays(big) == big  # past the bound: as written


def test_an_arrays_comments_do_not_swallow_its_other_words() -> None:
    text = ('ARGS=(\n'
            '  --max-model-len "32768"   # "context", quoted\n'
            '  --tensor-parallel-size 4\n'
            ')\n'
            'vllm serve org/model "${ARGS[@]}"\n')
    (found,) = served(text)
    assert found["tp"] == 4


@pytest.mark.parametrize("text", [
    "CID=$(docker run -d --gpus all vllm/vllm-openai:v0.8.5 --model org/m "
    "--tensor-parallel-size 2)\necho \"$CID\"\n",
    'cid="$(docker run -d --gpus all vllm/vllm-openai:v0.8.5 --model org/m '
    '--tensor-parallel-size 2 2>err.log)"\n',
    "cmd=(docker run -d --gpus all vllm/vllm-openai:v0.8.5 --model org/m\n"
    "     --tensor-parallel-size 2)\n"
    'container_id="$("${cmd[@]}" 2>"$OUT/docker-run.stderr.log")"\n',
    "echo `vllm serve org/m --tensor-parallel-size 2`\n",
])
def test_a_command_substitution_runs_its_command(text: str) -> None:
    """``CID=$(docker run ...)`` starts the container before the assignment: the command
    in a substitution is read as one the script runs."""
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"]) == ("vllm", "org/m", 2)


def test_substitutions_are_found_where_the_shell_runs_them() -> None:
    from kvlint.manifests.shell_words import MAX_SUBSTITUTIONS, substitutions

    assert substitutions('a=$(b "$(c)") d=`e` f=$((1 + 2))') == ['b "$(c)"', "e"]
    assert substitutions("'$(not run)'") == []
    assert substitutions("$(unterminated") == ["unterminated"]
    assert len(substitutions("$(x)" * (MAX_SUBSTITUTIONS * 2))) == MAX_SUBSTITUTIONS
    assert served("V=$(vllm --version)\nN=$(nvidia-smi -L | wc -l)\n") == []


def test_an_option_loop_leaves_the_default_a_plain_run_has() -> None:
    """``-m|--model) MODEL="$2"`` in a getopt loop sets the model only when the script is
    given options; run as written, it serves the default (as ``${1:-default}`` does)."""
    text = ('MODEL="/models/Qwen2.5-0.5B-Instruct"\nTP=1\n'
            'while true; do\n  case "$1" in\n'
            '    -m|--model) MODEL="$2"; shift 2 ;;\n'
            '    --tp) TP=$OPTARG; shift 2 ;;\n'
            '    -x) MODEL=other/model; shift ;;\n'
            '    --) shift; break ;;\n  esac\ndone\n'
            'vllm serve "$MODEL" --tensor-parallel-size "$TP"\n')
    (found,) = served(text)
    assert not isinstance(found["model"], str)  # another literal in a branch: unresolved
    (plain,) = served(text.replace("    -x) MODEL=other/model; shift ;;\n", ""))
    assert (plain["model"], plain["tp"]) == ("/models/Qwen2.5-0.5B-Instruct", 1)


def test_an_append_guarded_by_an_empty_variable_does_not_happen() -> None:
    """``if [[ -n "${MAX_MODEL_LEN}" ]]; then ARGS+=(--max-model-len "${MAX_MODEL_LEN}")``
    after ``MAX_MODEL_LEN=""``: run as written, no option is added (and no empty value is
    judged); a guard on a variable with a value adds it."""
    text = ('MAX_MODEL_LEN=""\nTP="2"\nARGS=(serve org/m)\n'
            'if [[ -n "${MAX_MODEL_LEN}" ]]; then\n'
            '  ARGS+=(--max-model-len "${MAX_MODEL_LEN}")\nfi\n'
            'if [ -n "$TP" ]; then\n  ARGS+=(--tensor-parallel-size "$TP")\nfi\n'
            'vllm "${ARGS[@]}"\n')
    (model,) = script_models(text, "serve.sh")
    assert model.max_model_len is None and not model.engine_problems
    assert isinstance(model.tp, Located) and model.tp.value == 2


def test_a_set_dash_dash_list_is_the_engines_arguments() -> None:
    """POSIX sh has one list, the positional parameters: ``set -- serve "$MODEL" ...``,
    ``set -- "$@" --x`` appends, and ``exec vllm "$@"`` runs them. Before the first
    ``set --``, ``"$@"`` stays the script's own arguments."""
    text = ('#!/bin/sh\nMODEL=org/m\necho "$@"\n'
            'set -- serve "$MODEL" \\\n  --tensor-parallel-size 2\n'
            'if [ "${TRUST:-}" = "1" ]; then\n  set -- "$@" --trust-remote-code\nfi\n'
            'exec vllm "$@"\n')
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"], found["line"]) == (
        "vllm", "org/m", 2, 9)
    from kvlint.manifests.shell_arrays import inline_arrays

    assert inline_arrays(text).count("\n") == text.count("\n")
    assert 'echo "$@"' in inline_arrays(text)


def test_docker_run_of_a_custom_image_given_only_an_engines_options() -> None:
    """``docker run ... $image_id --model-id M --max-input-length N``: options only one
    engine has (TGI's) name the engine a custom build or image ID runs."""
    text = ("image_name=287785ff9b29\nmodel=org/m\n"
            "docker run --gpus all -p 8080:80 -itd $image_name --model-id $model "
            "--quantize bitsandbytes-nf4 --max-total-tokens 4096 --max-input-length 2048\n")
    (found,) = served(text)
    assert (found["engine"], found["model"]) == ("tgi", "org/m")
    assert served("docker run -d myimage:1 --port 8000\n") == []  # options of no one engine


def test_nested_substitutions_are_read_to_a_bound() -> None:
    deep = "X=" + "$(echo " * 200 + "vllm serve org/m" + ")" * 200 + "\n"
    assert served(deep) == []  # past the inline depth: not followed, no error


def test_many_guarded_appends_are_judged_once_a_variable() -> None:
    """A generated (or hostile) script of thousands of guarded appends: each guard's
    variable is looked up once, and none of the appends happens."""
    from kvlint.manifests.shell_arrays import inline_arrays

    text = ('X=""\nA=(serve org/m)\n' + 'if [[ -n "$X" ]]; then\n  A+=(--x "$X")\nfi\n' * 5000
            + 'vllm "${A[@]}"\n')
    assert inline_arrays(text).rstrip().endswith("vllm serve org/m")
    (found,) = served(text)
    assert found["model"] == "org/m"


@pytest.mark.parametrize("script", [
    "sglang serve Qwen/Qwen3-0.6B --port 30000",           # positional model (0.5.16 on)
    "sglang serve --model-path Qwen/Qwen3-0.6B",
    'SGLANG_BIN="$(command -v sglang)"\n"$SGLANG_BIN" serve "Qwen/Qwen3-0.6B"',
    'BIN=$(which sglang)\n$BIN serve Qwen/Qwen3-0.6B',
])
def test_sglang_serve_and_the_program_command_v_finds(script: str) -> None:
    (m,) = served("#!/bin/bash\n" + script + "\n")
    assert (m["engine"], m["model"]) == ("sglang", "Qwen/Qwen3-0.6B")


def test_python_m_launch_server_takes_no_positional_model() -> None:
    (m,) = served("#!/bin/bash\npython -m sglang.launch_server Qwen/Qwen3-0.6B\n")
    assert m["model"] is None


@pytest.mark.parametrize("script", [
    # a path whose directory kvlint cannot expand still names its program
    'SGLANG_BIN="$VENV_DIR/bin/sglang"\nnohup "$SGLANG_BIN" serve Qwen/Qwen3-0.6B > log 2>&1 &',
    # each branch finds the same program its own way
    'if [ -x "$VENV_DIR/bin/sglang" ]; then\n  SGLANG_BIN="$VENV_DIR/bin/sglang"\n'
    'elif command -v sglang >/dev/null 2>&1; then\n  SGLANG_BIN="$(command -v sglang)"\n'
    'else\n  exit 1\nfi\n"$SGLANG_BIN" serve "Qwen/Qwen3-0.6B" --port 30000',
    # a default path under a root computed at run time, overridable from outside
    'ROOT="$(cd "$(dirname "$0")/.." && pwd)"\n'
    'SGLANG_BIN="${SGLANG_BIN:-${ROOT}/.venv/bin/sglang}"\n"${SGLANG_BIN}" serve Qwen/Qwen3-0.6B',
    # ... handed to a launcher function from a sourced file
    'ROOT="$(pwd)"\nSGLANG_BIN="${SGLANG_BIN:-$ROOT/venv/bin/sglang}"\n'
    'start_bg run/sglang.pid "$SGLANG_BIN" serve Qwen/Qwen3-0.6B --port 30000',
])
def test_a_program_variable_whose_directory_is_unknown(script: str) -> None:
    (m,) = served("#!/bin/bash\n" + script + "\n")
    assert (m["engine"], m["model"]) == ("sglang", "Qwen/Qwen3-0.6B")


def test_branches_naming_two_programs_name_none() -> None:
    script = ('if [ -n "$A" ]; then\n  BIN="$X/bin/sglang"\nelse\n  BIN="$X/bin/vllm"\nfi\n'
              '"$BIN" serve Qwen/Qwen3-0.6B\n')
    assert served("#!/bin/bash\n" + script) == []


CASE_SCRIPT = """\
#!/bin/bash
MODE={mode}
case "$MODE" in
  fp16)
    MODEL="Qwen/Qwen2.5-7B-Instruct"
    TP=2
    ;;
  awq|int4) MODEL="Qwen/Qwen2.5-7B-Instruct-AWQ"; TP=1 ;;
  *)
    echo "unknown mode"; exit 1
    ;;
esac
vllm serve "$MODEL" --tensor-parallel-size "$TP"
"""


@pytest.mark.parametrize(("mode", "model", "tp"), [
    ('${1:-"awq"}', "Qwen/Qwen2.5-7B-Instruct-AWQ", 1),
    ("${MODE:-fp16}", "Qwen/Qwen2.5-7B-Instruct", 2),
    ("int4", "Qwen/Qwen2.5-7B-Instruct-AWQ", 1),
])
def test_a_case_on_the_scripts_own_mode_takes_the_plain_runs_branch(
        mode: str, model: str | None, tp: int | None) -> None:
    """``MODE=${1:-awq}`` then ``case "$MODE" in``: run as written, the script takes the
    branch its default matches (bash patterns, ``a|b``), and the engine line keeps its own
    line number."""
    (found,) = served(CASE_SCRIPT.format(mode=mode))
    assert (found["model"] if isinstance(found["model"], str) and
            "$" not in found["model"] else None) == model
    assert (found["tp"] if isinstance(found["tp"], int) else None) == tp
    assert found["line"] == 13


@pytest.mark.parametrize("mode", ["$(cat mode.txt)", "${OTHER:-awq}"])
def test_a_case_on_a_mode_kvlint_cannot_read_serves_each_branch_as_a_preset(
        mode: str) -> None:
    # a file's contents, or another variable the environment sets: not known, so each
    # branch that runs on is one of the script's presets (the one that exits is none)
    found = served(CASE_SCRIPT.format(mode=mode))
    assert [(f["model"], f["tp"], f["line"]) for f in found] == [
        ("Qwen/Qwen2.5-7B-Instruct", 2, 13), ("Qwen/Qwen2.5-7B-Instruct-AWQ", 1, 13)]


MODES_SCRIPT = """\
#!/bin/bash
MODE="${{1:-unified}}"
MODEL="Qwen/Qwen3-30B-A3B"
case "$MODE" in
unified)
    sglang serve --model-path "$MODEL" --tp 4
    ;;
prefill)
    CUDA_VISIBLE_DEVICES=0,1,2,3 \\
    sglang serve --model-path "$MODEL" --tp 4 --disaggregation-mode prefill
    ;;
decode)
    sglang serve --model-path "$MODEL" --tp 2 --disaggregation-mode decode
    ;;
{extra}esac
"""


def test_a_mode_the_caller_picks_keeps_every_branch_that_only_runs_a_server() -> None:
    """``MODE=${1:-unified}``: the caller picks the mode, so a branch that only runs a
    command with the script's shared settings is a run of its own: each is linted."""
    found = served(MODES_SCRIPT.format(extra=""))
    assert [(f["tp"], f["line"]) for f in found] == [(4, 6), (4, 10), (2, 13)]
    assert {f["model"] for f in found} == {"Qwen/Qwen3-30B-A3B"}
    # a fixed mode (a literal) runs its branch only; a branch that sets a variable
    # configures the run instead, so only the default's is read
    assert len(served(MODES_SCRIPT.format(extra="").replace('"${1:-unified}"', "unified"))) == 1
    assert len(served(MODES_SCRIPT.format(extra="small) MODEL=Qwen/Qwen3-0.6B ;;\n"))) == 3


def test_a_case_kvlint_cannot_decide_stays_as_written() -> None:
    from kvlint.manifests.shell_plain_run import plain_run_cases

    for text in ("M=a\ncase \"$M\" in\n  a) X=1 ;&\n  b) X=2 ;;\nesac\n",      # fall-through
                 "M=a\ncase \"$M\" in\n  $Y) X=1 ;;\nesac\n",                  # dynamic pattern
                 "if true; then\n  M=a\nfi\ncase \"$M\" in\n  a) X=1 ;;\nesac\n",  # in a branch
                 "M=a\nM=b\ncase \"$M\" in\n  a) X=1 ;;\nesac\n"):             # set twice
        assert plain_run_cases(text) == text
    many = "M=a\n" + "case \"$M\" in\n  a) X=1 ;;\nesac\n" * 100
    assert plain_run_cases(many).count("esac") == 100 - 64  # bounded


def test_docker_create_makes_the_container_docker_start_runs() -> None:
    """``docker create`` takes ``docker run``'s options and makes the same container (started
    later by ``docker start``): read as that run."""
    (found,) = served("docker create --name llm --gpus all vllm/vllm-openai:v0.10.1.1 "
                      "--model org/m --tensor-parallel-size 2\ndocker start -a llm\n")
    assert (found["engine"], found["model"], found["tp"], found["version"]) == (
        "vllm", "org/m", 2, "0.10.1.1")


@pytest.mark.parametrize(("use", "found_model"), [
    ("exec $CMD", True), ("$CMD", True), ('eval "$CMD"', True), ('sudo ${CMD}', True),
    ('"$CMD"', False),                         # one quoted word: no such program
])
def test_a_command_held_in_a_variable_is_read_where_it_runs(use: str, found_model: bool) -> None:
    """``CMD="docker run ... IMAGE ..."`` then ``exec $CMD``: the container is read as the
    command the variable holds, on the line that runs it."""
    text = ('#!/bin/bash\n'
            'PORT=8000\n'
            'CMD="docker run --gpus all -d -p ${PORT}:8000 \\\n'
            '  vllm/vllm-openai:v0.10.1.1 \\\n'
            '  --model org/m --tensor-parallel-size 2"\n'
            'echo "$CMD"\n'
            f'{use}\n')
    found = served(text)
    if not found_model:
        assert found == []
        return
    (model,) = found
    assert (model["model"], model["tp"], model["version"], model["line"]) == (
        "org/m", 2, "0.10.1.1", 7)


def test_a_command_variable_kvlint_cannot_read_stays_as_written() -> None:
    from kvlint.manifests.shell_plain_run import plain_run_commands

    for text in ('CMD="vllm serve \'org/m\'"\nexec $CMD\n',        # quotes kept literal
                 'CMD="$(cat cmd.txt)"\nexec $CMD\n',               # a substitution
                 'CMD="vllm serve a"\nCMD="vllm serve b"\n$CMD\n',  # set twice
                 'if x; then\n  CMD="vllm serve a"\nfi\n$CMD\n'):    # set in a branch
        assert plain_run_commands(text) == text


@pytest.mark.parametrize(("assign", "version"), [
    ("IMAGE=${IMAGE:-vllm/vllm-openai:v0.10.1.1}", "0.10.1.1"),
    ('IMAGE="vllm/vllm-openai:v0.10.1.1"', "0.10.1.1"),
    ("IMAGE=$(cat image.txt)", None),          # not known: the container stays unread
])
def test_a_docker_run_image_held_in_a_variable(assign: str, version: str | None) -> None:
    """``docker run ... $IMAGE ...`` with the image set once at the top: the engine image a
    plain run starts, so its entrypoint takes the options."""
    found = served(f"#!/bin/bash\n{assign}\n"
                   "docker run --gpus all -d $IMAGE --model org/m --tensor-parallel-size 2\n")
    if version is None:
        assert all(f["version"] != "0.10.1.1" for f in found)
        return
    (model,) = found
    assert (model["model"], model["tp"], model["version"]) == ("org/m", 2, version)


def test_a_check_that_the_server_is_installed_starts_nothing() -> None:
    # `command -v` / `-V`, `hash` and `which` only say where a program is (bash(1)); the
    # reserved words a condition begins with are not the program
    text = ("#!/bin/bash\nif ! command -v llama-server &> /dev/null; then\n  exit 1\nfi\n"
            "command -V vllm\nhash llama-server 2>/dev/null || exit 1\n"
            "while ! curl -s localhost:8080/health; do sleep 1; done &\n"
            "exec llama-server -hf bartowski/X-GGUF:Q5_K_M --port 8080\n")
    assert [(m["engine"], m["model"], m["line"]) for m in served(text)] == [
        ("llamacpp", "bartowski/X-GGUF:Q5_K_M", 8)]


def test_a_server_started_inside_a_condition_is_read() -> None:
    text = "if vllm serve org/model --tensor-parallel-size 2; then echo done; fi\n"
    assert [(m["engine"], m["model"], m["tp"]) for m in served(text)] == [
        ("vllm", "org/model", 2)]


def test_the_visible_devices_are_the_gpus_when_the_world_is_not_resolved() -> None:
    # NUM_GPUS=$(nvidia-smi -L | wc -l) is not evaluated: tp stays unresolved, but the one
    # device the command is given is all it can take
    text = ('#!/bin/bash\nCUDA_VISIBLE_DEVICES="0"\n'
            "NUM_GPUS=$(nvidia-smi -L | wc -l)\n"
            "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES vllm serve org/m "
            "--tensor-parallel-size $NUM_GPUS\n")
    (found,) = served(text)
    assert found["gpus"] == 1 and not isinstance(found["tp"], int)


@pytest.mark.parametrize("loop", [
    'for arg in "$@"; do\n  case $arg in\n    --model=*) MODEL="${arg#*=}" ;;\n  esac\ndone\n',
    "while [[ $# -gt 0 ]]\ndo\n  case $1 in\n    --model) MODEL=$2; shift 2;;\n"
    "    *) shift;;\n  esac\ndone\n",
    'while getopts "m:" opt; do\n  case $opt in m) MODEL=$OPTARG;; esac\ndone\n',
    'for a; do case $a in --model=*) MODEL="${a#*=}";; esac; done  # options\n',
])
def test_a_loop_over_the_scripts_arguments_runs_zero_times_on_a_plain_run(loop: str) -> None:
    text = 'MODEL="${MODEL:-Qwen/Qwen3-8B}"\n' + loop + 'vllm serve "$MODEL"\n'
    (found,) = served(text)
    assert found["model"] == "Qwen/Qwen3-8B"
    assert found["line"] == text.count("\n")  # lines keep their numbers


@pytest.mark.parametrize("loop", [
    "while [[ $# -gt 0 ]]; do\n  case $1 in\n    --model_name) MODEL=\"$2\"; shift ;;\n"
    "  esac\n  shift\ndone\n",
    'for a in "$@"; do MODEL="$a"; done\n',
    'while getopts "m:" opt; do\n  case $opt in m) MODEL=$OPTARG;; esac\ndone\n',
])
def test_an_empty_default_the_argument_loop_fills_is_the_scripts_argument(loop: str) -> None:
    """``MODEL=""`` then ``--model_name) MODEL="$2"``: the script needs the argument (an
    empty model serves nothing), so its plain run leaves the model unresolved, never "./"."""
    text = 'MODEL=""\n' + loop + 'vllm serve "./$MODEL" --max-model-len 4096\n'
    (found,) = served(text)
    assert found["model"] is None or "$" in str(found["model"])


def test_an_empty_default_an_if_fills_from_an_argument_is_unresolved() -> None:
    text = ('MODEL=""\nif [ -n "$1" ]; then MODEL="$1"; fi\n'
            'vllm serve "./$MODEL" --max-model-len 4096\n')
    (found,) = served(text)
    assert found["model"] is None or "$" in str(found["model"])


def test_a_loop_that_feeds_or_runs_more_is_left_as_written() -> None:
    from kvlint.manifests.shell_plain_run import plain_run_argument_loops

    text = 'while [[ $# -gt 0 ]]; do shift; done; vllm serve org/m\nfor i in 1 2; do :; done\n'
    assert plain_run_argument_loops(text) == text


@pytest.mark.parametrize(("setting", "model"), [
    ("MULTI_MODE=false", "org/single"), ("MULTI_MODE=true", "org/multi"),
    ('MULTI_MODE="${MULTI_MODE:-false}"', "org/single")])
def test_an_if_on_the_scripts_own_mode_takes_its_plain_run_branch(setting: str,
                                                                 model: str) -> None:
    text = (f"{setting}\n"
            'if [ "$MULTI_MODE" = true ]; then\n'
            "  for i in 0 1; do\n    vllm serve org/multi --port 800$i &\n  done\n"
            "else\n"
            '  if [ -n "$X" ]; then echo x; fi\n'
            "  vllm serve org/single --tensor-parallel-size 2\n"
            "fi\n")
    # the loop starts one server per pass (ports 8000 and 8001)
    assert [m["model"] for m in served(text)] == \
        ([model, model] if model == "org/multi" else [model])


def test_an_if_kvlint_cannot_decide_is_read_as_written() -> None:
    # a test of a variable the manifest does not set, or of a program: every branch is read
    text = ('if [ "$OTHER" = a ]; then\n  vllm serve org/a\nelse\n'
            "  vllm serve org/b\nfi\n"
            'if command -v nvidia-smi; then vllm serve org/c; fi\n')
    assert [m["model"] for m in served(text)] == ["org/a", "org/b", "org/c"]


def test_an_if_on_a_value_the_script_settles_takes_its_branch() -> None:
    # a mode set twice: the second value stands, so only its branch runs
    text = ('MODE=a\nMODE=b\nif [ "$MODE" = a ]; then\n  vllm serve org/a\nelse\n'
            "  vllm serve org/b\nfi\n")
    assert [m["model"] for m in served(text)] == ["org/b"]


@pytest.mark.parametrize(("extra", "chunk"), [
    ("", None), ("4096", 4096)])
def test_options_appended_under_tests_of_known_values(extra: str, chunk: int | None) -> None:
    """A command built up in a variable, each option appended under ``if [ -n "$X" ]`` (a
    compose service's script, a launcher's): the tests of values the script gives are read,
    so the variable stays known and the server's model is found."""
    text = (f'MODEL="${{MODEL:-Qwen/Qwen3-8B}}"\nCHUNK="${{CHUNK:-{extra}}}"\nEAGER=1\n'
            'ARGS="--model-path $MODEL --tp-size 1"\n'
            'if [ -n "$CHUNK" ]; then\n  ARGS="$ARGS --chunked-prefill-size $CHUNK"\nfi\n'
            'if [ "$EAGER" = "1" ]; then\n  ARGS="$ARGS --disable-cuda-graph"\n'
            'elif [ "$EAGER" = "2" ]; then\n  ARGS="$ARGS --enable-torch-compile"\nfi\n'
            'if [[ -n "$CHUNK" ]] && [[ -z "$EAGER" ]]; then ARGS="$ARGS --x"; fi\n'
            "exec python3 -m sglang.launch_server $ARGS\n")
    (m,) = served(text)
    assert (m["engine"], m["model"]) == ("sglang", "Qwen/Qwen3-8B")


@pytest.mark.parametrize(("command", "engine"), [
    ("%h/.local/bin/llama.cpp/server -m /m/x.Q4_K_M.gguf -ngl 40 --port 8090", "llamacpp"),
    ("./server -m models/x.gguf -c 2048", "llamacpp"),
    ("llama serve -m model.gguf --port 8080", "llamacpp"),
    ("python -m http.server 8000", None),
    ("./server --port 8080", None),
])
def test_llama_cpps_older_and_newer_server_binaries(command: str, engine: str | None) -> None:
    found = served("#!/bin/bash\n" + command + "\n")
    assert [m["engine"] for m in found] == ([engine] if engine else [])


@pytest.mark.parametrize(("count", "tp"), [
    ("$(echo $CUDA_VISIBLE_DEVICES | awk -F',' '{print NF}')", 3),
    ('$(echo "$CUDA_VISIBLE_DEVICES" | awk -F, \'{print NF}\')', 3),
    ("$(echo $CUDA_VISIBLE_DEVICES | tr ',' '\\n' | wc -l)", 3),
])
def test_a_count_of_the_listed_devices_is_evaluated(count: str, tp: int) -> None:
    text = (f'#!/bin/bash\nCUDA_VISIBLE_DEVICES="0,1,2"\nNUM_GPUS={count}\n'
            "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES vllm serve org/m "
            "--tensor-parallel-size $NUM_GPUS\n")
    (found,) = served(text)
    assert (found["tp"], found["gpus"]) == (tp, tp)


def test_a_python_held_in_a_variable_runs_the_engine_module() -> None:
    text = ("#!/bin/bash\nsource setenv.sh\n$PY -m vllm.entrypoints.openai.api_server "
            "--model /models/Qwen3-32B --max-model-len 8192\n")
    assert [(m["engine"], m["model"]) for m in served(text)] == [("vllm", "/models/Qwen3-32B")]


@pytest.mark.parametrize(("run", "refused"), [
    # the image left out: docker reads the engine's options as its own
    ("docker run --gpus all -p 8081:80 --model-id $MODEL --num-shard 1", "--model-id"),
    # a misspelt docker option before the image
    ("docker run --gpu all ghcr.io/huggingface/text-generation-inference:2.4.1 "
     "--model-id $MODEL", "--gpu"),
    ("docker run --gpus=all --shm-size 1g --detach-keys ctrl-x --init "
     "ghcr.io/huggingface/text-generation-inference:2.4.1 --model-id $MODEL", None),
    # podman has options of its own: not judged by Docker's table
    ("podman run --replace --gpus all ghcr.io/huggingface/text-generation-inference:2.4.1 "
     "--model-id $MODEL", None),
])
def test_a_docker_run_option_docker_does_not_have(run: str, refused: str | None) -> None:
    """docker/cli's run flags (opts.go ``addFlags``, run.go): any other long option before
    the image stops the docker CLI ('unknown flag'), so no container starts: KV701."""
    (found,) = script_models(f"#!/bin/bash\nMODEL=org/m\n{run}\n", "serve.sh")
    problems = [p for p in found.engine_problems
                if p.data.get("reason") == "docker-option-unknown"]
    assert [p.option for p in problems] == ([refused] if refused else [])
    if refused:
        assert problems[0].kind == "option" and problems[0].line == 3
        assert f"unknown flag: {refused}" in problems[0].message


def test_apptainer_run_of_an_engine_image_runs_its_server_after_a_launcher() -> None:
    """``apptainer run IMAGE OPTIONS`` starts the image's runscript, a Docker image's
    ENTRYPOINT; ``srun``'s own options come first; unquoted variables split into the words
    they hold (``${RUNNER} ${IMAGE} ${ARGS}``), as the shell splits them."""
    script = ('#!/bin/bash\nMODEL_REPO="meta-llama/Llama-3.2-3B"\n'
              'APPTAINER="apptainer run --nvccli -B ./data/:/data --env HF_TOKEN=$HF_TOKEN "\n'
              'CONTAINER="text-generation-inference_2.2.0.sif"\n'
              'TGI="--port 8080 --model-id $MODEL_REPO --num-shard=2"\n'
              'srun -n 1 --gpus=2 ${APPTAINER} ${CONTAINER} ${TGI}\n')
    (found,) = served(script)
    assert (found["engine"], found["model"], found["version"], found["tp"], found["line"]) \
        == ("tgi", "meta-llama/Llama-3.2-3B", "2.2.0", 2, 6)
    # exec runs the command given, not the runscript
    assert served("apptainer exec vllm-openai_v0.8.5.sif --port 8000\n") == []
    # a variable kvlint cannot read stays as written
    assert served("#!/bin/bash\n${RUNNER} --model-id x\n") == []


def test_splitting_variables_is_bounded() -> None:
    """Each variable of a split command is looked up once, at most MAX_CASES lookups (and
    MAX_SPLIT_SCAN characters read) in all; a command naming more than MAX_SPLIT_NAMES
    variables is left as written."""
    from kvlint.manifests.shell_plain_run import MAX_CASES, MAX_SPLIT_NAMES, _split_words

    script = 'X="a b"\n' + "$X $X\n" * (MAX_CASES * 4)
    lines = _split_words(script).split("\n")
    assert lines[1] == "a b a b"
    assert sum(1 for line in lines if line == "a b a b") == MAX_CASES
    many = " ".join(f"$V{i}" for i in range(MAX_SPLIT_NAMES + 1))
    assert _split_words(f'V0="x"\n{many}\n').split("\n")[1] == many


@pytest.mark.parametrize(("guard", "tp"), [
    ('[[ -n "$TP_OVERRIDE" ]] && TP="$TP_OVERRIDE"', 2),  # the override is empty: not run
    ('[ -z "$TP_OVERRIDE" ] || TP="$TP_OVERRIDE"', 2),  # the same with || and -z
    ('[[ -z "$TP_OVERRIDE" ]] && TP=4', 4),  # empty: runs
    ('test -n "$SET" && TP=8', 8),  # SET=yes: runs
    ('[[ ! -n "$SET" ]] && TP=8', 2),  # negated: not run
    ('[[ -n "$FROM_ENV" ]] && TP="$FROM_ENV"', None),  # set outside the script: unknown
    ('mkdir -p /tmp/x && TP=4', 4),  # not a test: taken to succeed, as before
    ('mkdir -p /tmp/x || TP=4', 2),  # ... so what runs on its failure does not
])
def test_an_assignment_after_a_test_runs_as_the_test_says(guard: str, tp: object) -> None:
    """``[[ -n "$X" ]] && VAR="$X"`` (an option loop's override applied after the defaults)
    runs only when the test holds; kvlint reads the test when it can expand its operand."""
    text = ("#!/bin/bash\nTP=2\nTP_OVERRIDE=\"\"\nSET=yes\n"
            f"{guard}\n"
            "python -m sglang.launch_server --model-path org/m --tp \"$TP\"\n")
    (found,) = served(text)
    if tp is None:
        assert isinstance(found["tp"], Unresolved)
    else:
        assert found["tp"] == tp


@pytest.mark.parametrize("test", ['[ $# -gt 0 ]', '[[ "$#" -ne 0 ]]', '(( $# ))',
                                  '(( $# > 0 ))', '[ -n "$1" ]'])
def test_an_entrypoint_that_runs_its_arguments_instead_runs_its_default(test: str) -> None:
    """``CMD="..."; if [ $# -gt 0 ]; then CMD="$@"; fi; exec $CMD``: run as written (no
    arguments), the default command runs, so its server is read."""
    text = ('#!/bin/bash\nCMD="python -m sglang.launch_server --model-path org/m --tp 2"\n'
            f"if {test}; then\n    CMD=\"$@\"\nfi\nexec $CMD\n")
    (found,) = served(text)
    assert (found["engine"], found["model"], found["tp"]) == ("sglang", "org/m", 2)


def test_a_command_built_by_appends_and_evaluated() -> None:
    """``CMD="vllm serve ..."``, ``CMD="$CMD --more"`` appends (an indented one inside an
    ``if`` is the optional flag a plain run leaves off), then ``eval $CMD``: the command is
    read; ``'$N'`` in the double-quoted string is N's value, held together for eval."""
    text = ('NUM_SHARD=${NUM_SHARD:-2}\nMODEL=${MODEL:-org/m}\nEAGER=${EAGER:-false}\n'
            "CMD=\"vllm serve $MODEL --tensor-parallel-size '$NUM_SHARD'\"\n"
            'CMD="$CMD --max-model-len 4096"\n'
            'if [ "$EAGER" = true ]; then\n    CMD="$CMD --enforce-eager"\nfi\n'
            "eval $CMD\n")
    (found,) = served(text)
    assert (found["model"], found["tp"]) == ("org/m", 2)
    (model,) = script_models(text, "serve.sh")
    assert getattr(model.max_model_len, "value", None) == 4096


@pytest.mark.parametrize(("header", "count", "tp"), [
    # Slurm confines the job to the GPUs it asks for: nvidia-smi lists those
    ("#SBATCH --gres=gpu:4\n", "$(nvidia-smi -L | wc -l)", 4),
    ("#SBATCH --gres=gpu:2\n", "$(nvidia-smi --list-gpus | grep -c GPU)", 2),
    ("#SBATCH --gres=gpu:2\n",
     "$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)", 2),
    # torch counts what CUDA_VISIBLE_DEVICES leaves
    ('CUDA_VISIBLE_DEVICES="0,1,2"\n',
     "$(python -c 'import torch; print(torch.cuda.device_count())')", 3),
    # a plain script on a host: every GPU of the host, which the file does not say
    ("", "$(nvidia-smi -L | wc -l)", "?"),
    ('CUDA_VISIBLE_DEVICES="0,1"\n', "$(nvidia-smi -L | wc -l)", "?"),  # nvidia-smi: all
])
def test_a_count_of_the_gpus_the_process_sees(header: str, count: str, tp: object) -> None:
    text = (f"#!/bin/bash\n{header}NUM_GPUS={count}\n"
            "vllm serve org/m --tensor-parallel-size $NUM_GPUS\n")
    (found,) = served(text)
    if tp == "?":
        assert isinstance(found["tp"], Unresolved)
        assert "counts the GPUs the process sees" in found["tp"].reason
    else:
        assert found["tp"] == tp


def test_a_container_counting_its_gpus_runs_with_its_limit() -> None:
    """``GPUS=$(nvidia-smi -L | grep -c '^GPU')`` in a container's script: the device plugin
    exposes the container's own GPUs, so the count is its nvidia.com/gpu limit."""
    text = """apiVersion: apps/v1
kind: Deployment
metadata: {name: m}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          command: ["/bin/sh", "-c"]
          args:
            - |
              GPUS=$(nvidia-smi -L | grep -c '^GPU')
              exec vllm serve org/m --tensor-parallel-size "$GPUS"
          resources: {limits: {nvidia.com/gpu: 2}}
"""
    import tempfile
    from pathlib import Path as _Path

    from tests.loaders.manifests.support import extract_path

    with tempfile.TemporaryDirectory() as folder:
        path = _Path(folder) / "deploy.yaml"
        path.write_text(text, encoding="utf-8")
        (m,) = extract_path(path)
    assert isinstance(m.tp, Located) and m.tp.value == 2


def test_a_script_saved_with_crlf_line_ends_continues_its_lines() -> None:
    text = ("#!/bin/bash\r\ndocker create --name a --gpus all -p 8002:8000 \\\r\n"
            "  vllm/vllm-openai:v0.6.3 \\\r\n  --model Qwen/Qwen2.5-7B-Instruct \\\r\n"
            "  --max-model-len 6144\r\n")
    (found,) = served(text)
    assert (found["model"], found["version"], found["line"]) == \
        ("Qwen/Qwen2.5-7B-Instruct", "0.6.3", 4)  # as with LF line ends


@pytest.mark.parametrize(("command", "engine"), [
    # a function of a sourced file, named for the server, given llama-server's options
    ("run_llama_server --model /m/q.gguf --gpu-layers 100 --ctx-size 8192", "llamacpp"),
    ("start-vllm --model org/m --max-model-len 4096 --enable-prefix-caching", "vllm"),
    # named for another engine than its options, or for none: not read
    ("run_llama_server --model org/m --max-model-len 4096 --enable-prefix-caching", None),
    ("run_benchmark --model org/m --max-model-len 4096 --enable-prefix-caching", None),
    ("start_vllm_server", None),
])
def test_a_wrapper_named_for_a_server_and_given_its_options(command: str,
                                                             engine: str | None) -> None:
    found = served(f"#!/bin/bash\nsource ../setup.sh\n{command}\n")
    assert [m["engine"] for m in found] == ([engine] if engine else [])


def test_an_evaluated_command_variable_with_escaped_quotes_and_redirections() -> None:
    text = ('#!/bin/bash\nM="/models/a b.gguf"\nCMD="/opt/llama-server \\\n'
            '  --model \\"$M\\" \\\n  --ctx-size 8192"\n'
            'if [ "${1:-}" = "--bg" ]; then\n  eval "$CMD" > /tmp/log 2>&1 &\nelse\n'
            '  eval "$CMD" &\nfi\n')
    (found,) = served(text)
    assert (found["engine"], found["model"]) == ("llamacpp", "/models/a b.gguf")


@pytest.mark.parametrize(("set_before", "model"), [
    ("", "/w/DotsOCR"),
    ("HF_MODEL_PATH=/other\n", "/other"),  # := keeps a value the variable has
])
def test_the_colon_builtins_default_assignment(set_before: str, model: str) -> None:
    text = (f'#!/bin/bash\n{set_before}: "${{HF_MODEL_PATH:=/w/DotsOCR}}"  # default\n'
            ': ${TP:=2}\nexec vllm serve "${HF_MODEL_PATH}" --tensor-parallel-size $TP\n')
    (found,) = served(text)
    assert (found["model"], found["tp"]) == (model, 2)


def test_an_unresolved_value_shows_what_it_is_built_from() -> None:
    """``MODEL_DIR="${SCRIPT_DIR}/models/x"`` with SCRIPT_DIR from a command substitution:
    the model shows the path with the one unknown part, not just ``${MODEL_DIR}``."""
    text = ('#!/bin/bash\nSCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"\n'
            'MODEL_DIR="${SCRIPT_DIR}/models/MiniCPM4.1-8B-GPTQ"\n'
            'vllm serve --model "${MODEL_DIR}" --tensor-parallel-size 1\n')
    (found,) = served(text)
    assert isinstance(found["model"], Unresolved)
    assert found["model"].text == "${SCRIPT_DIR}/models/MiniCPM4.1-8B-GPTQ"


@pytest.mark.parametrize("header", [
    "for i in 0 1 2 3; do",
    "for i in {0..3}; do",
    "for i in $(seq 0 3); do",
    "for i in $(seq 0 $((N - 1))); do",
    "for ((i=0; i<N; i++)); do",
    "for (( i = 0; i <= 3; ++i )); do",
])
def test_a_loop_that_starts_a_server_per_gpu(header: str) -> None:
    """One server per pass, each on its own GPU and port; the pass is named."""
    text = (f"#!/bin/bash\nN=4\nBASE=31000\n{header}\n  PORT=$((BASE + i))\n"
            "  CUDA_VISIBLE_DEVICES=$i python -m sglang.launch_server --model-path org/m "
            "--port $PORT &\ndone\nwait\n")
    found = script_models(text, "serve.sh")
    assert [(m.name, getattr(m.gpus, "value", None)) for m in found] == \
        [(f"i={n}", 1) for n in range(4)]
    assert all(any("one server per pass of the loop" in n for n in m.notes) for m in found)


@pytest.mark.parametrize("body", [
    "vllm serve org/m && break",            # a retry loop: the command is the same each pass
    "echo $i",
])
def test_a_loop_whose_passes_run_the_same_server_is_read_once(body: str) -> None:
    text = f"#!/bin/bash\nfor i in 1 2 3; do\n  {body}\ndone\nvllm serve org/n\n"
    assert [m["model"] for m in served(text)] == \
        (["org/m", "org/n"] if "serve org/m" in body else ["org/n"])


def test_a_loop_of_too_many_or_unknown_passes_is_read_once() -> None:
    for header in ("for i in $(seq 0 99); do", "for i in $GPUS; do",
                   "for ((i=0; i<$(nproc); i++)); do"):
        text = (f"#!/bin/bash\n{header}\n  CUDA_VISIBLE_DEVICES=$i vllm serve org/m "
                "--port $((8000 + i)) &\ndone\n")
        assert len(served(text)) == 1, header


def test_a_program_word_with_a_default_names_its_program() -> None:
    text = ('#!/bin/bash\nexec "${PYTHON:-python3}" -m vllm.entrypoints.openai.api_server '
            "--model org/m --port 8003\n")
    assert [(m["engine"], m["model"]) for m in served(text)] == [("vllm", "org/m")]
