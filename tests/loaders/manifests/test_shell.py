"""Shell splitting, environment expansion and engine argument parsing
(kvlint.manifests.shell_words, .shell_env and .engine_command) on the traps of
fixtures/manifests/SOURCES.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kvlint.manifests.base import Located, Unresolved
from kvlint.manifests.engine_command import (
    EngineArgs,
    env_args_llamacpp,
    env_args_tgi,
    parse_engine_args,
)
from kvlint.manifests.engine_env import engine_invocations
from kvlint.manifests.engine_programs import find_engine
from kvlint.manifests.shell_env import Env, env_from_k8s, env_from_mapping_or_list
from kvlint.manifests.shell_words import Word, split_env_prefix, split_script
from kvlint.manifests.yaml_marks import load_documents

MANIFESTS = Path(__file__).resolve().parents[3] / "fixtures" / "manifests"


def load(relative: str) -> list[Any]:
    path = MANIFESTS / relative
    docs = load_documents(path.read_text(encoding="utf-8"), str(path))
    assert isinstance(docs, list), docs
    return docs


def words(*texts: str) -> list[Word]:
    return [Word(t, None) for t in texts]


def line_of_word(commands: list[list[Word]], text: str) -> int | None:
    return next(w.line for c in commands for w in c if w.text == text)


def value(field: object) -> object:
    assert isinstance(field, Located), field
    return field.value


# --- split_script --------------------------------------------------------------------------


def test_lws_sh_c_string_maps_words_to_their_lines() -> None:
    docs = load("lws/vllm-llama3.1-405b-tp8-pp2-multinode.yaml")
    leader = docs[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    commands = split_script(leader["command"][2])
    assert len(commands) == 2  # `...multi-node-serving.sh leader ...; python3 -m vllm...`
    assert [w.text for w in commands[0]][:2] == ["bash", "/vllm-workspace/examples/"
                                                 "online_serving/multi-node-serving.sh"]
    assert commands[0][0].line == 24
    # the double-quoted scalar spans lines 24-25; the engine arguments are on line 25
    assert line_of_word(commands, "--tensor-parallel-size") == 25
    assert line_of_word(commands, "--pipeline_parallel_size") == 25
    assert line_of_word(commands, "--ray_cluster_size=$(LWS_GROUP_SIZE)") == 24


def test_literal_block_lines_continuations_comments_and_quoted_json() -> None:
    docs = load("llm-d/lws-wide-ep-deepseek-r1-decode-dp16-ep.yaml")
    container = docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"][
        "containers"][0]
    commands = split_script(container["args"][0])
    assert [w.text for w in commands[0]] == ["find", "/dev/shm", "-type", "f", "-delete"]
    assert commands[0][0].line == 61  # comment lines 59-60 dropped
    assert [w.text for w in commands[1]] == ["START_RANK=$(( ${LWS_WORKER_INDEX:-0} * "
                                             "DP_SIZE_LOCAL ))"]
    serve = commands[2]
    assert [w.text for w in serve[:4]] == ["exec", "vllm", "serve", "deepseek-ai/DeepSeek-R1-0528"]
    assert (serve[1].line, serve[3].line) == (74, 75)
    assert line_of_word(commands, "--data-parallel-size") == 82
    assert line_of_word(commands, "$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))") == 82
    json_word = next(w for w in serve if w.text.startswith('{"kv_connector"'))
    assert json_word.line == 87 and "\n" in json_word.text  # one word across two lines
    assert serve[-1].text == "--kv-cache-memory-bytes=${KV_CACHE_MEMORY_BYTES-}"
    assert serve[-1].line == 98
    assert len(commands) == 3


def test_folded_block_with_single_quoted_json() -> None:
    docs = load("kserve/llmisvc-nemotron3-ultra-pd-tp8-fp8kv.yaml")
    env = docs[0]["spec"]["template"]["containers"][0]["env"]
    args = next(e["value"] for e in env if e["name"] == "VLLM_ADDITIONAL_ARGS")
    assert args.style == ">"
    commands = split_script(args)
    assert len(commands) == 1
    assert line_of_word(commands, "--kv-cache-dtype=fp8") == 41
    assert line_of_word(commands, '{"enable_multithread_load": true, "num_threads": 96}') == 48
    # without the source text, a folded scalar maps every word to its own line
    flat = split_script(str(args), line=args.line, style=">")
    assert {w.line for w in flat[0]} == {37}


def test_multi_line_plain_scalar_in_a_list() -> None:
    docs = load("dstack/trtllm-serve-deepseek-r1-h200-envvars.dstack.yml")
    command = docs[0]["commands"][3]
    commands = split_script(command)
    assert len(commands) == 1
    assert commands[0][0].text == "trtllm-serve" and commands[0][0].line == 17
    assert line_of_word(commands, "--tp_size") == 22
    assert line_of_word(commands, "DeepSeek-R1") == 25


@pytest.mark.parametrize(("script", "words"), [
    ("vllm serve m --download-dir <DIR> # shared cache", ["vllm", "serve", "m", "--download-dir",
                                                         "<DIR>"]),
    ("tgi --path <SCRATCH DIR> \\\n  --cache <DIR TO WEIGHTS> # x",
     ["tgi", "--path", "<SCRATCH DIR>", "--cache", "<DIR TO WEIGHTS>"]),
    ("cat <in.txt >out.log", ["cat"]),  # redirections: a blank on one side
    ("cat < in.txt > out.log x", ["cat", "x"]),
    ("python x.py <input.txt", ["python", "x.py"]),
])
def test_an_angle_bracket_placeholder_is_one_word(script: str, words: list[str]) -> None:
    """``--download-dir <DIR>`` is a value the reader fills in, not two redirections (which
    would read the comment after them as arguments): one literal word."""
    (command,) = split_script(script)
    assert [w.text for w in command] == words
    assert all(w.literal for w in command if w.text.startswith("<"))


def test_separators_redirections_heredocs_and_quotes() -> None:
    script = ("a 1 && b '2 3' || c \"$X y\" | d; e 2>&1 > /dev/null &> log\n"
              "f <<EOF\nnot a command\nEOF\ng # trailing comment\n"
              "h x\\\n  y\n")
    commands = split_script(script, line=10, style="|")
    assert [[w.text for w in c] for c in commands] == [
        ["a", "1"], ["b", "2 3"], ["c", "$X y"], ["d"], ["e"], ["f"], ["g"], ["h", "x", "y"]]
    assert commands[-1][-1].line == 11 + 6  # literal block: line + 1 + newlines before it
    assert commands[2][1].split is False  # quoted: no field splitting after expansion
    assert split_script("echo $A")[0][1].split is True
    assert split_script("echo '$A'")[0][1].literal is True
    assert split_script("x=1#notacomment y")[0][0].text == "x=1#notacomment"
    assert Word("a", 1, split=True) == Word("a", 1)


def test_split_env_prefix() -> None:
    cmd = split_script("NUM_SHARD=$DSTACK_GPUS_NUM text-generation-launcher")[0]
    env, rest = split_env_prefix(cmd)
    assert env == {"NUM_SHARD": "$DSTACK_GPUS_NUM"}
    assert [w.text for w in rest] == ["text-generation-launcher"]
    env, rest = split_env_prefix(words("exec", "env", "-u", "X", "A=1", "B=", "vllm", "serve"))
    assert env == {"A": "1", "B": ""}
    assert [w.text for w in rest] == ["vllm", "serve"]


# --- Env -----------------------------------------------------------------------------------


def test_kubernetes_references() -> None:
    env = Env({"MODEL_ID": "google/gemma-3-27b-it"}, {"LWS_GROUP_SIZE": "2"})
    assert env.expand("--model=$(MODEL_ID)", k8s=True) == "--model=google/gemma-3-27b-it"
    assert env.expand("$(LWS_GROUP_SIZE)", k8s=True) == "2"
    missing = env.expand("$(LWS_WORKER_INDEX)", k8s=True)
    assert isinstance(missing, Unresolved)
    assert "LWS_WORKER_INDEX" in missing.reason and missing.text == "$(LWS_WORKER_INDEX)"
    assert env.expand("$$(MODEL_ID)", k8s=True) == "$(MODEL_ID)"  # $$ escapes
    # outside Kubernetes $(...) is command substitution, never run
    substitution = env.expand("$(MODEL_ID)", k8s=False)
    assert isinstance(substitution, Unresolved) and "command substitution" in substitution.reason


def test_shell_parameters() -> None:
    env = Env({"TP_SIZE": "1", "EMPTY": "", "SECRET": None}, {"LWS_GROUP_SIZE": "2"})
    assert env.expand("$TP_SIZE", k8s=False) == "1"
    assert env.expand("${TP_SIZE}x", k8s=False) == "1x"
    assert env.expand("--kv-cache-memory-bytes=${KV_CACHE_MEMORY_BYTES-}", k8s=False) == (
        "--kv-cache-memory-bytes=")
    assert env.expand("${UNSET:-8}", k8s=False) == "8"
    assert env.expand("${EMPTY-8}", k8s=False) == ""
    assert env.expand("${EMPTY:-8}", k8s=False) == "8"
    assert env.expand("${TP_SIZE:+on}", k8s=False) == "on"
    assert env.expand("${#TP_SIZE}", k8s=False) == "1"
    assert env.expand("${REGISTRY:-opea}/chatqna:${TAG:-latest}", k8s=False) == (
        "opea/chatqna:latest")
    unset = env.expand("--tp $TP", k8s=False)
    assert isinstance(unset, Unresolved)
    assert unset.reason == "$TP is not set in the manifest"
    secret = env.expand("$SECRET", k8s=False)
    assert isinstance(secret, Unresolved) and "no value in the manifest" in secret.reason
    for special in ("$0", "$@", "${1}", "$1", "${1:?need a model}", "${0:-x}"):
        assert isinstance(env.expand(special, k8s=False), Unresolved)
    # a script read as it runs without arguments: a positional parameter's default applies
    assert env.expand("${1:-meta-llama/Llama-3.1-8B}", k8s=False) == "meta-llama/Llama-3.1-8B"
    assert env.expand("${2-8000}", k8s=False) == "8000"
    assert env.expand("${3:-$TP_SIZE}", k8s=False) == "1"
    assert env.expand("${1:+--flag}", k8s=False) == ""
    # and an unresolved default shows as the default, not as the parameter
    unknown_dir = env.expand("${1:-$ROOT_DIR/models/m.gguf}", k8s=False)
    assert isinstance(unknown_dir, Unresolved) and unknown_dir.text == "$ROOT_DIR/models/m.gguf"
    assert env.expand("a $ b", k8s=False) == "a $ b"  # a lone $ is literal
    # the default word goes through quote removal, as sh does
    assert env.expand('${DTYPE:-"float16"}', k8s=False) == "float16"
    assert env.expand("${DTYPE:-'$HOME'}", k8s=False) == "$HOME"
    assert env.expand('${DTYPE-"a \\"b\\" $TP_SIZE"}', k8s=False) == 'a "b" 1'
    assert env.expand("${TP_SIZE:+\\$x}", k8s=False) == "$x"


def test_arithmetic() -> None:
    env = Env({"DP_SIZE_LOCAL": "8", "N": "-7"},
              {"LWS_GROUP_SIZE": "2", "SKYPILOT_NUM_GPUS_PER_NODE": "8",
               "SKYPILOT_NUM_NODES": "4"})
    assert env.expand("$((LWS_GROUP_SIZE * DP_SIZE_LOCAL))", k8s=False) == "16"
    assert env.expand("$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))",
                      k8s=False) == "32"
    assert env.expand("$(( ${LWS_WORKER_INDEX:-0} * DP_SIZE_LOCAL ))", k8s=False) == "0"
    assert env.expand("$(( (1 + 2) * 3 - 4 / 3 ))", k8s=False) == "8"
    assert env.expand("$((N / 2)) $((N % 2))", k8s=False) == "-3 -1"  # C truncation
    for bad in ("$((1 / 0))", "$((2 ** 3))", "$((UNSET + 1))", "$((__import__))",
                "$((1 if 1 else 2))", "$((010))"):
        assert isinstance(env.expand(bad, k8s=False), Unresolved), bad


def test_env_from_kubernetes_list() -> None:
    docs = load("llm-d/lws-wide-ep-deepseek-r1-decode-dp16-ep.yaml")
    container = docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"][
        "containers"][0]
    values = env_from_k8s(container["env"])
    assert values["DP_SIZE_LOCAL"] == "8"
    assert values["VLLM_NIXL_SIDE_CHANNEL_HOST"] is None  # valueFrom
    assert Env(values).line_of("DP_SIZE_LOCAL") == 109
    dependent = env_from_k8s([{"name": "A", "value": "x"}, {"name": "B", "value": "$(A)-y"},
                              {"name": "C", "value": 8}])
    assert dependent == {"A": "x", "B": "x-y", "C": "8"}
    from_secret = env_from_k8s([{"name": "IP", "valueFrom": {"fieldRef": {}}},
                                {"name": "URL", "value": "http://$(IP):8000"},
                                {"name": "RAW", "value": "$(NOPE)"}])
    assert from_secret == {"IP": None, "URL": None, "RAW": "$(NOPE)"}


def test_env_from_mapping_or_list() -> None:
    dstack = load("dstack/tgi-llama4-scout-numshard-from-gpus-num.dstack.yml")[0]
    values = env_from_mapping_or_list(dstack["env"])
    assert values["HF_TOKEN"] is None
    assert values["MODEL_ID"] == "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    assert Env(values).line_of("MAX_TOTAL_TOKENS") == 10
    azure = load("tgi/azureml-deployment-bloom-8gpu.yaml")[0]
    mapped = env_from_mapping_or_list(azure["environment_variables"])
    assert mapped["NUM_GPUS"] == "8"  # a YAML integer, as text
    assert Env(mapped).line_of("NUM_GPUS") is not None
    assert env_from_mapping_or_list({"A": None, "B": True}) == {"A": None, "B": "true"}


# --- find_engine ---------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "expected"), [
    ("uv run -m sglang.launch_server --model-path m --tp 8", ("sglang", 4)),  # uv#7754
    ("uv run --with vllm --module vllm.entrypoints.openai.api_server --model m", ("vllm", 6)),
    ("uv run -m http.server 8000", None),
    ("vllm serve m", ("vllm", 2)),
    ("command vllm serve m", ("vllm", 3)),   # bash's command runs the program after it
    ("pkill -f llama-server", None),
    ("sudo pkill -9 llama-server", None),  # sudo runs pkill, which only names the server
    ("sudo -u ai -E llama-server -m x", ("llamacpp", 5)),
    ("python3 -m vllm.entrypoints.openai.api_server --model m", ("vllm", 3)),
    ("python -u -m dynamo.vllm --model m", ("vllm", 4)),
    ("/usr/bin/python3.10 -m sglang.launch_server --model-path m", ("sglang", 3)),
    ("python3 -m dynamo.sglang --model-path m", ("sglang", 3)),
    ("text-generation-launcher --model-id m", ("tgi", 1)),
    ("trtllm-serve m --tp_size 8", ("trtllm", 1)),
    ("trtllm-serve serve m", ("trtllm", 2)),
    ("python3 -m dynamo.trtllm --model-path m", ("trtllm", 3)),
    ("lmdeploy serve api_server m", ("lmdeploy", 3)),
    ("/llama-server -m x", ("llamacpp", 1)),
    ("./llama-server -m x", ("llamacpp", 1)),
    ("llama-server -m x", ("llamacpp", 1)),
    ("/app/build/bin/llama-server -m x", ("llamacpp", 1)),
    ("exec vllm serve m", ("vllm", 3)),
    ("$PY -m vllm.entrypoints.openai.api_server --model m", ("vllm", 3)),
    # a launcher function from a sourced file, handed the interpreter in a variable
    ("start_with_pid_file $PID_FILE $PY -m sglang.launch_server --model-path m",
     ("sglang", 5)),
    ("run $X -m http.server", None),
    # a program held in a variable set outside the file, named for the engine's executable
    ("nohup $VLLM_BIN serve m --port 8000", ("vllm", 3)),
    ("${SGLANG} serve m", ("sglang", 2)),
    ("$LLAMA_SERVER_BIN -m x.gguf", ("llamacpp", 1)),
    ("$VLLM_URL /v1/models", None),
    ("text-embeddings-router --model-id BAAI/bge", None),
    ("trtllm-serve disaggregated -c cfg.yaml", None),
    ("python3 -m dynamo.frontend --http-port 8000", None),
    ("python3 -m sglang_router.launch_router --pd-disaggregation", None),
    ("pip install vllm serve", None),
    ("echo vllm serve", None),
    ("ray start --head", None),
])
def test_find_engine(command: str, expected: tuple[str, int] | None) -> None:
    assert find_engine(command.split()) == expected


# --- parse_engine_args ---------------------------------------------------------------------


def test_vllm_abbreviated_max_num_seq_in_the_production_stack_fixture() -> None:
    doc = load("production-stack/k8s-gie-vllm-llama3.2-1b-lora.yaml")[0]
    container = doc["spec"]["template"]["spec"]["containers"][0]
    argv = [Word(str(v), container["args"].item_lines[i][0])
            for i, v in enumerate(container["args"])]
    args = parse_engine_args("vllm", argv, Env({}))
    assert isinstance(args.max_num_seqs, Located)
    assert (args.max_num_seqs.value, args.max_num_seqs.line) == (1024, 27)
    assert any("abbreviation of --max-num-seqs" in n for n in args.notes)
    assert value(args.model) == "meta-llama/Llama-3.2-1B-Instruct"
    assert value(args.tp) == 1
    assert "--max-num-seq" not in args.unknown


def test_ambiguous_and_unknown_options_are_not_guessed() -> None:
    args = parse_engine_args("vllm", words("m", "--max-num", "8", "--no-such-option", "x"),
                             Env({}))
    assert args.max_num_seqs is None
    assert "--max-num" in args.unknown and "--no-such-option" in args.unknown
    assert any("ambiguous" in n for n in args.notes)


def test_vllm_spellings() -> None:
    args = parse_engine_args("vllm", words(
        "--trust-remote-code", "org/model", "--pipeline_parallel_size", "2",
        "--tensor-parallel-size=16", "-dp", "2", "--served-model-name", "a", "b",
        "--no-enable-expert-parallel", "--compilation-config.level", "3", "-O3",
        "--config", "cfg.yaml", "--kv_cache_dtype=fp8"), Env({}))
    assert value(args.model) == "org/model"  # the flag before it takes no value
    assert (value(args.pp), value(args.tp), value(args.dp)) == (2, 16, 2)
    assert isinstance(args.tp, Located) and args.tp.source == "--tensor-parallel-size"
    assert isinstance(args.pp, Located) and args.pp.source == "--pipeline_parallel_size"
    assert value(args.served_name) == "a"
    assert args.options["--served-model-name"] == Located(["a", "b"], None,
                                                         source="--served-model-name")
    assert args.expert_parallel == Located(False, None, source="--no-enable-expert-parallel")
    assert value(args.config_file) == "cfg.yaml"
    assert value(args.kv_cache_dtype) == "fp8"
    assert args.unknown == ()


@pytest.mark.parametrize(("text", "expected"), [
    ("1k", 1000), ("32K", 32768), ("25.6k", 25600), ("8192", 8192), ("2M", 2 * 2**20),
    ("auto", None), ("-1", None)])
def test_vllm_human_readable_max_model_len(text: str, expected: int | None) -> None:
    args = parse_engine_args("vllm", words("m", "--max-model-len", text), Env({}))
    got = args.max_model_len
    assert (got.value if isinstance(got, Located) else got) == expected


def test_vllm_rejects_decimals_with_binary_suffixes() -> None:
    args = parse_engine_args("vllm", words("m", "--max-model-len", "1.5K"), Env({}))
    assert isinstance(args.max_model_len, Unresolved)


def test_sglang_prefixes_but_no_underscores() -> None:
    docs = load("lws/sglang-llama3.1-8b-tp2-2nodes.yaml")
    container = docs[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"][
        "containers"][0]
    command = [Word(str(v), container["command"].item_lines[i][0])
               for i, v in enumerate(container["command"])]
    found = find_engine([w.text for w in command])
    assert found == ("sglang", 3)
    env = Env(env_from_k8s(container.get("env")), {"LWS_GROUP_SIZE": "2",
                                                   "LWS_WORKER_INDEX": "0"})
    args = parse_engine_args("sglang", command[found[1]:], env)
    assert isinstance(args.tp, Located) and (args.tp.value, args.tp.line) == (2, 27)
    assert value(args.nnodes) == 2
    assert value(args.model) == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    underscored = parse_engine_args("sglang", words("--model-path", "m", "--tp_size", "4"),
                                    Env({}))
    assert underscored.tp is None and "--tp_size" in underscored.unknown
    assert any("does not accept underscores" in n for n in underscored.notes)


def test_sglang_dp_attention() -> None:
    args = parse_engine_args("sglang", words("--model-path", "m", "--tp", "8", "--dp", "8",
                                             "--enable-dp-attention", "--ep-size", "8"),
                             Env({}))
    assert (value(args.tp), value(args.dp), value(args.dp_attention), value(args.ep)) == (
        8, 8, True, 8)
    new = parse_engine_args("sglang", words("--model-path", "m", "--tp-size", "8",
                                            "--attn-dp-size", "8"), Env({}))
    assert (value(new.dp), value(new.dp_attention)) == (8, True)


def test_trtllm_click_spellings() -> None:
    args = parse_engine_args("trtllm", words(
        "--backend", "pytorch", "--tp_size", "8", "--ep_size", "4", "--max_seq_len", "16384",
        "--max_batch_size", "256", "--extra_llm_api_options", "x.yaml", "--trust_remote_code",
        "DeepSeek-R1"), Env({}))
    assert (value(args.tp), value(args.ep), value(args.max_model_len),
            value(args.max_num_seqs)) == (8, 4, 16384, 256)
    assert value(args.config_file) == "x.yaml"
    assert value(args.model) == "DeepSeek-R1"
    dashed = parse_engine_args("trtllm", words("m", "--tp-size", "8"), Env({}))
    assert dashed.tp is None and "--tp-size" in dashed.unknown


def test_unresolved_values_carry_their_reason_and_line() -> None:
    commands = split_script("vllm serve $MODEL --tensor-parallel-size $TP", line=5)
    args = parse_engine_args("vllm", commands[0][2:], Env({}, k8s=False))
    assert isinstance(args.model, Unresolved) and args.model.reason == (
        "$MODEL is not set in the manifest")
    assert isinstance(args.tp, Unresolved) and args.tp.line == 5
    assert args.tp.text == "$TP"
    k8s = parse_engine_args("vllm", words("--model=$(MODEL_ID)"), Env({}))
    assert isinstance(k8s.model, Unresolved) and "MODEL_ID" in k8s.model.reason


def test_unquoted_expansion_is_split_into_arguments() -> None:
    env = Env({"VLLM_ARGS": "--max-model-len 8192 --enforce-eager"}, k8s=False)
    commands = split_script("vllm serve m $VLLM_ARGS")
    args = parse_engine_args("vllm", commands[0][2:], env)
    assert value(args.max_model_len) == 8192 and args.unknown == ()
    quoted = split_script('vllm serve m "$VLLM_ARGS"')
    assert parse_engine_args("vllm", quoted[0][2:], env).max_model_len is None
    literal = split_script("vllm serve '$HOME'")
    assert value(parse_engine_args("vllm", literal[0][2:], env).model) == "$HOME"


def test_tgi_env_prefix_from_dstack() -> None:
    doc = load("dstack/tgi-llama4-scout-numshard-from-gpus-num.dstack.yml")[0]
    env = Env(env_from_mapping_or_list(doc["env"]), {"DSTACK_GPUS_NUM": "2"}, k8s=False)
    found = [inv for c in doc["commands"] for inv in engine_invocations(split_script(c), env)]
    assert len(found) == 1
    args = found[0].args
    assert found[0].engine == "tgi" and found[0].line == 17
    assert isinstance(args.tp, Located) and (args.tp.value, args.tp.line) == (2, 17)
    assert args.tp.source == "env NUM_SHARD"
    assert value(args.model) == "meta-llama/Llama-4-Scout-17B-16E-Instruct"
    assert value(args.max_model_len) == 16384
    # the command line wins over the environment
    cli = parse_engine_args("tgi", words("--num-shard", "4"), env.with_values({"NUM_SHARD": "2"}))
    assert value(cli.tp) == 4


def test_tgi_env_names_and_legacy_num_gpus() -> None:
    azure = load("tgi/azureml-deployment-bloom-8gpu.yaml")[0]
    args = env_args_tgi(Env(env_from_mapping_or_list(azure["environment_variables"])))
    assert value(args.tp) == 8 and value(args.model) == "bigscience/bloom"
    assert any("NUM_GPUS" in n for n in args.notes)
    gke = load("tgi/k8s-gke-gemma-7b-numshard4-l4.yaml")[0]
    container = gke["spec"]["template"]["spec"]["containers"][0]
    gemma = env_args_tgi(Env(env_from_k8s(container["env"])))
    assert (value(gemma.tp), value(gemma.max_model_len), value(gemma.model)) == (
        4, 4096, "google/gemma-7b-it")
    assert gemma.notes == ()
    assert env_args_tgi(Env({})) == EngineArgs(engine="tgi")


def test_llamacpp_compose_alias_is_not_the_model() -> None:
    doc = load("llama.cpp/compose-llama-server-gemma2-baku-hf-repo-alias.yaml")[0]
    service = next(iter(doc["services"].values()))
    commands = split_script(service["command"])
    found = engine_invocations(commands, Env({}, k8s=False))
    assert len(found) == 1
    args = found[0].args
    assert value(args.model) == "alfredplpl/gemma-2-baku-2b-it-gguf"
    assert value(args.served_name) == "gpt-4o-mini"
    assert value(args.max_model_len) == 4096
    env_only = env_args_llamacpp(Env({"LLAMA_ARG_CTX_SIZE": "8192", "LLAMA_ARG_MODEL": "/m"}))
    assert (value(env_only.max_model_len), value(env_only.model)) == (8192, "/m")
    fallback = parse_engine_args("llamacpp", words("-m", "/m.gguf"),
                                 Env({"LLAMA_ARG_CTX_SIZE": "2048"}))
    assert value(fallback.max_model_len) == 2048


def test_llamacpp_router_mode_serves_a_directory_or_a_preset() -> None:
    """No model but ``--models-dir`` / ``--models-preset`` (or their LLAMA_ARG_ variables):
    llama-server's router mode, whose models are those of the directory or preset, each in a
    child server: unresolved, with the directory as its text; a model given wins."""
    routed = parse_engine_args("llamacpp", words("--models-dir", "/srv/models",
                                                 "--models-preset", "/p.ini"), Env({}))
    assert isinstance(routed.model, Unresolved) and routed.model.text == "/srv/models"
    assert "router mode (--models-dir)" in routed.model.reason
    by_env = parse_engine_args("llamacpp", words("--port", "8080"),
                               Env({"LLAMA_ARG_MODELS_PRESET": "/config/models.ini"}))
    assert isinstance(by_env.model, Unresolved) and by_env.model.text == "/config/models.ini"
    one = parse_engine_args("llamacpp", words("-m", "/m.gguf", "--models-dir", "/d"), Env({}))
    assert value(one.model) == "/m.gguf"


def test_lmdeploy_positional_model_and_quant_policy() -> None:
    doc = load("lmdeploy/k8s-internlm2-chat-7b-shell-string.yaml")
    container = next(d for d in doc if d["kind"] == "Deployment")["spec"]["template"][
        "spec"]["containers"][0]
    found = engine_invocations(split_script(container["args"][0]), Env({}))
    assert [f.engine for f in found] == ["lmdeploy"]
    assert value(found[0].args.model) == "internlm/internlm2-chat-7b"
    args = parse_engine_args("lmdeploy", words("m", "--tp", "2", "--quant-policy", "8",
                                               "--session-len", "4096"), Env({}))
    assert (value(args.tp), value(args.kv_cache_dtype), value(args.max_model_len)) == (
        2, "int8", 4096)


# --- whole scripts -------------------------------------------------------------------------


def test_skypilot_tp_from_arithmetic_assignment_and_ambiguous_branches() -> None:
    doc = load("skypilot/sglang-deepseek-r1-bf16-a100-4node-tp32.yaml")[0]
    env = Env({}, {"SKYPILOT_NUM_GPUS_PER_NODE": "8", "SKYPILOT_NUM_NODES": "4"}, k8s=False)
    found = engine_invocations(split_script(doc["run"]), env)
    assert [f.engine for f in found] == ["sglang"]
    args = found[0].args
    assert isinstance(args.tp, Located)
    assert (args.tp.value, args.tp.line, args.tp.source) == (32, 83, "--tp $TP")
    assert value(args.dp_attention) is True
    assert value(args.model) == "DeepSeek-R1-BF16"
    assert "$HEAD_NODE_ARGS" in args.unknown  # assigned differently in the if/else


def test_skypilot_platform_variables() -> None:
    doc = load("skypilot/vllm-llama4-maverick-fp8-2node-tp-pp-from-env.sky.yaml")[0]
    env = Env(env_from_mapping_or_list(doc["envs"]),
              {"SKYPILOT_NUM_GPUS_PER_NODE": "8", "SKYPILOT_NUM_NODES": "2"}, k8s=False)
    (found,) = engine_invocations(split_script(doc["run"]), env)
    assert (found.engine, found.line) == ("vllm", 52)
    assert (value(found.args.tp), value(found.args.pp), value(found.args.max_model_len)) == (
        8, 2, 32768)
    assert value(found.args.model) == "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"
    assert isinstance(found.args.tp, Located)
    assert found.args.tp.source == "--tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE"


def test_llm_d_dp_through_arithmetic_and_env_indirection() -> None:
    docs = load("llm-d/lws-wide-ep-deepseek-r1-decode-dp16-ep.yaml")
    container = docs[0]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"][
        "containers"][0]
    env = Env(env_from_k8s(container["env"]), {"LWS_GROUP_SIZE": "2"})
    (found,) = engine_invocations(split_script(container["args"][0]), env)
    args = found.args
    assert (found.engine, found.line) == ("vllm", 74)
    assert value(args.model) == "deepseek-ai/DeepSeek-R1-0528"
    assert isinstance(args.tp, Located) and (args.tp.value, args.tp.line) == (1, 81)
    assert isinstance(args.dp, Located) and (args.dp.value, args.dp.line) == (16, 82)
    assert args.dp.source == "--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))"
    assert value(args.dp_local) == 8
    assert value(args.expert_parallel) is True
    assert args.options["--kv-cache-memory-bytes"] == Located(
        "", 98, source="--kv-cache-memory-bytes ${KV_CACHE_MEMORY_BYTES-}")
    assert args.unknown == ()


def test_lws_tpu_equals_form_and_kubernetes_group_size() -> None:
    docs = load("lws/vllm-tpu-llama3.3-70b-tp16.yaml")
    leader = docs[0]["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    (found,) = engine_invocations(split_script(leader["command"][2]), Env({}))
    assert isinstance(found.args.tp, Located)
    assert (found.args.tp.value, found.args.tp.line) == (16, 33)


def test_text_embeddings_services_are_not_engines() -> None:
    doc = load("tgi/compose-opea-chatqna-tgi-envvar-model.yaml")[0]
    tei = doc["services"]["tei-embedding-service"]
    assert engine_invocations(split_script(tei["command"]), Env({}, k8s=False)) == []
    assert find_engine(["text-embeddings-router", "--model-id", "x"]) is None
    tgi = doc["services"]["tgi-service"]
    args = parse_engine_args("tgi", split_script(tgi["command"])[0], Env({}, k8s=False))
    assert isinstance(args.model, Unresolved)
    assert args.model.reason == "$LLM_MODEL_ID is not set in the manifest"


def test_exec_form_command_line_is_the_program_word() -> None:
    docs = load("dynamo/dgd-vllm-deepseek-r1-disagg-dep16-2node.yaml")
    found = []
    for service in docs[0]["spec"]["services"].values():
        container = service.get("extraPodSpec", {}).get("mainContainer")
        if not container or "command" not in container:
            continue
        argv = [Word(str(v), items.item_lines[i][0])
                for items in (container["command"], container.get("args", []))
                for i, v in enumerate(items)]
        found.extend(engine_invocations([argv], Env({})))
    assert [(f.engine, f.line) for f in found] == [("vllm", 71), ("vllm", 139)]
    decode = found[0].args
    assert (value(decode.tp), value(decode.dp), value(decode.max_num_seqs)) == (1, 16, 512)
    assert value(decode.model) == "/model-cache/deepseek-r1"
    assert value(decode.served_name) == "deepseek-ai/DeepSeek-R1"


def test_an_option_value_is_never_the_next_option() -> None:
    args = parse_engine_args("vllm", words("m", "--tensor-parallel-size", "--enforce-eager"),
                             Env({}))
    assert isinstance(args.tp, Unresolved) and "without a value" in args.tp.reason


def test_a_backslash_that_ends_the_script_is_dropped_as_bash_drops_it() -> None:
    """``--disable-log-requests \\`` as the script's last bytes (no newline after it): bash
    reads the continuation to the end of input and passes no empty argument; an escaped blank
    (``\\ ``) is a word of one space, which the engine does receive."""
    script = "vllm serve m \\\n    --port 8001 \\"
    assert [[w.text for w in c] for c in split_script(script)] == \
        [["vllm", "serve", "m", "--port", "8001"]]
    assert [w.text for w in split_script("vllm serve m \\ ")[0]] == ["vllm", "serve", "m", " "]


def test_an_unresolved_inline_value_is_the_value_not_the_word() -> None:
    """``--model=$(MODEL_NAME)`` with MODEL_NAME set at deploy time: the model shown is
    ``$(MODEL_NAME)``, not the whole ``--model=...`` word."""
    from kvlint.manifests.base import Unresolved
    from kvlint.manifests.engine_command import parse_engine_args
    from kvlint.manifests.shell_env import Env
    from kvlint.manifests.shell_words import Word

    args = parse_engine_args("vllm", [Word("serve", 1), Word("--model=$(MODEL_NAME)", 2),
                                      Word("--tensor-parallel-size=$(TP)", 3)],
                             Env({"MODEL_NAME": None, "TP": None}))
    assert isinstance(args.model, Unresolved) and args.model.text == "$(MODEL_NAME)"
    assert isinstance(args.tp, Unresolved) and args.tp.text == "$(TP)"


@pytest.mark.parametrize(("flags", "tp", "dp"), [
    ("--backend pytorch --tp 1 --dp 8 --ep 8", 8, 8),  # max(dp, tp, ep) GPUs
    ("--backend pytorch --tp 2 --dp 2", 2, 2),  # each rank on one of the 2 GPUs
    ("--tp 1 --dp 8 --ep 8", 1, 8),  # the backend the model picks: not read
])
def test_lmdeploy_dp_world(flags: str, tp: int, dp: int) -> None:
    """LMDeploy's PyTorch backend with --dp > 1 runs one server per DP rank over max(dp, tp,
    ep) GPUs (lmdeploy/serve/openai/launch_server.py@0.18.0): tp is that world, with DP
    attention over it."""
    (inv,) = engine_invocations(split_script(f"lmdeploy serve api_server org/m {flags}"),
                                Env({}, k8s=False))
    assert (inv.args.tp.value if inv.args.tp else 1, inv.args.dp.value) == (tp, dp)  # type: ignore[union-attr]
    assert inv.args.dp_attention is not None and inv.args.dp_attention.value


@pytest.mark.parametrize(("text", "expected"), [
    ("/models/$(basename $P)", "/models/c"),
    ('$(dirname "$P"):/models', "/a/b:/models"),
    ("$(basename x.gguf)", "x.gguf"),
    ("$(dirname x)", "."),
    ("$(dirname /x)", "/"),
    ("$(basename /)", "/"),
])
def test_basename_and_dirname_are_read_from_the_text(text: str, expected: str) -> None:
    assert Env({"P": "/a/b/c/"}, k8s=False).expand(text) == expected


def test_basename_of_an_unset_variable_is_unresolved() -> None:
    assert isinstance(Env({}, k8s=False).expand("$(basename $Q)"), Unresolved)


def test_a_template_field_is_a_value_not_yet_filled_in() -> None:
    """``--max-model-len {max_model_len}`` (a recipe rendered by str.format): unresolved,
    never "not an integer"."""
    from kvlint.manifests.shell_env import expand_words

    (token,) = expand_words([Word("{max_model_len}", 3)], Env({}, k8s=False))
    assert token.text is None and token.unresolved is not None
    assert "template's field" in token.unresolved.reason
    (json_word,) = expand_words([Word('{"a": 1}', 3)], Env({}, k8s=False))
    assert json_word.text == '{"a": 1}'  # JSON is no template field


def test_the_text_an_unresolved_value_shows_is_bounded() -> None:
    """Names that each refer to another many times over (generated here): each is worked
    out once, and a text that would grow past the expansion bound stays as written."""
    env = Env({"B": "$C" * 30_000, "C": "x" * 1_000}, k8s=False).with_values(
        {}, shown={"A": "$B" * 30_000})
    found = env.expand("$A$(cmd)")
    assert isinstance(found, Unresolved)
    assert len(found.text or "") <= 70_000
