"""vLLM servers one host runs side by side on a GPU (kvlint/manifests/shared_gpus.py): which
servers run together in a script (shell_jobs.py), which GPUs they take, and how each vLLM
release treats a second server whose fraction does not fit beside the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kvlint.cli import main
from kvlint.manifests.shared_gpus import used_devices
from kvlint.manifests.shell_jobs import ScriptLines
from kvlint.manifests.shell_scripts import script_models
from tests.loaders.manifests.support import extract_text

PIN = "pip install vllm==0.10.1.1\n"


def _shared(text: str) -> list[tuple[int | None, bool]]:
    """``(line, certain)`` of each shared-GPU problem of a script."""
    return [(p.line, not p.data.get("newer_may_accept"))
            for served in script_models(text, "serve.sh")
            for p in served.engine_problems if p.data.get("reason") == "shared-gpu"]


def _serve(model: str, fraction: float, tail: str = " &", prefix: str = "") -> str:
    return f"{prefix}vllm serve {model} --gpu-memory-utilization {fraction}{tail}\n"


@pytest.mark.parametrize(("script", "found"), [
    # both in the background on the default GPU: the second cannot start
    (PIN + _serve("org/a", 0.5, " > a.log 2>&1 &") + "sleep 30\n" + _serve("org/b", 0.6),
     [(4, True)]),
    # the second in the foreground still runs beside the first
    (PIN + _serve("org/a", 0.5) + _serve("org/b", 0.5, ""), [(3, True)]),
    # exactly all of it: the second finds less free than its fraction (its own context)
    (PIN + _serve("org/a", 0.35) + _serve("org/b", 0.65), [(3, True)]),
    # pm2 leaves the script running on
    (PIN + 'pm2 start --name a "vllm serve org/a --gpu-memory-utilization 0.5"\n'
     'pm2 start --name b "vllm serve org/b --gpu-memory-utilization 0.5"\n', [(3, True)]),
    # a server in the foreground holds the script: the next starts after it exits
    (PIN + _serve("org/a", 0.9, "") + _serve("org/b", 0.9, ""), []),
    # the first is stopped before the second starts
    (PIN + _serve("org/a", 0.9) + "PID=$!\nsleep 60\nkill $PID\n" + _serve("org/b", 0.9), []),
    # fractions that fit, and servers on GPUs of their own
    (PIN + _serve("org/a", 0.45) + _serve("org/b", 0.45), []),
    (PIN + _serve("org/a", 0.9, prefix="CUDA_VISIBLE_DEVICES=0 ") +
     _serve("org/b", 0.9, prefix="CUDA_VISIBLE_DEVICES=1 "), []),
    # the ranks of a tp=2 server take GPUs 0 and 1: one on GPU 1 shares it
    (PIN + "vllm serve org/a -tp 2 &\n" + _serve("org/b", 0.5, prefix="CUDA_VISIBLE_DEVICES=1 "),
     [(3, True)]),
    # alternatives and functions: not known to run together
    (PIN + 'case "$1" in\n  a) ' + _serve("org/a", 0.9) + "  ;;\n  b) " +
     _serve("org/b", 0.9) + "  ;;\nesac\n", []),
    (PIN + "start() {\n  " + _serve("$1", 0.9) + "}\n" + _serve("org/b", 0.9), []),
    # a device list kvlint cannot read: not judged
    (PIN + _serve("org/a", 0.9, prefix="CUDA_VISIBLE_DEVICES=$GPU ") + _serve("org/b", 0.9),
     []),
])
def test_servers_a_script_leaves_running_on_one_gpu(script: str,
                                                    found: list[tuple[int, bool]]) -> None:
    assert _shared(script) == found


@pytest.mark.parametrize(("gpus", "found"), [
    ("--gpus 1", [(3, True)]),  # Docker's count is the host's first N: both get GPU 0
    ("--gpus all", [(3, True)]),
    ("--gpus '\"device=0\"'", [(3, True)]),
])
def test_detached_containers_given_the_same_gpu(gpus: str, found: list[tuple[int, bool]]
                                                ) -> None:
    script = "".join(
        f"docker run -d {gpus} vllm/vllm-openai:v0.10.1.1 --model org/{name} "
        f"--gpu-memory-utilization 0.6\n" for name in ("a", "b"))
    assert _shared("#!/bin/bash\n" + script) == found
    other = script.replace("--gpus 1 vllm/vllm-openai:v0.10.1.1 --model org/b",
                           "--gpus '\"device=1\"' vllm/vllm-openai:v0.10.1.1 --model org/b")
    if other != script:
        assert _shared("#!/bin/bash\n" + other) == []
    assert _shared("#!/bin/bash\n" + script.replace(" -d ", " ", 1)) == []


@pytest.mark.parametrize(("pin", "first", "second", "found"), [
    ("0.5.5", 0.5, 0.6, [(3, True)]),  # V0: out of memory allocating the KV cache
    ("0.9.0", 0.5, 0.6, []),  # V1 before 0.9.1 counts the other's memory: 0.1 is left
    ("0.9.0", 0.6, 0.5, [(3, True)]),  # ... and nothing when its own is no larger
    ("0.9.1", 0.5, 0.6, [(3, True)]),  # the start-up check
    ("0.34.0", 0.5, 0.6, []),  # the extensible KV cache takes what is left
    (None, 0.5, 0.6, [(3, False)]),  # no release named: fails on some, a warning
])
def test_each_release_treats_a_second_server_as_its_code_does(
        pin: str | None, first: float, second: float, found: list[tuple[int, bool]]) -> None:
    head = f"pip install vllm=={pin}\n" if pin else "source venv/bin/activate\n"
    assert _shared(head + _serve("org/a", first) + _serve("org/b", second)) == found


def test_the_extensible_cache_switched_off_brings_the_check_back() -> None:
    script = ("pip install vllm==0.34.0\n" + _serve("org/a", 0.5) +
              "vllm serve org/b --gpu-memory-utilization 0.6 "
              "--no-enable-extensible-kv-cache &\n")
    assert _shared(script) == [(3, True)]


def test_compose_services_of_count_one_share_the_first_gpu() -> None:
    def service(name: str, device: str) -> str:
        return (f"  {name}:\n    image: vllm/vllm-openai:v0.10.1.1\n"
                f'    command: ["--model", "org/{name}", "--gpu-memory-utilization", "0.6"]\n'
                "    deploy: {resources: {reservations: {devices: [{driver: nvidia, "
                f"{device}, capabilities: [gpu]}}]}}}}}}\n")
    same = "services:\n" + service("a", "count: 1") + service("b", "count: 1")
    apart = "services:\n" + service("a", "count: 1") + service("b", "device_ids: ['1']")
    reasons = [[p.data.get("reason") for p in s.engine_problems]
               for s in extract_text(same, "docker-compose.yml")]
    assert reasons == [[], ["shared-gpu"]]
    assert all(not s.engine_problems for s in extract_text(apart, "docker-compose.yml"))
    # a reservation with neither count nor device_ids is every GPU (compose spec: "If count
    # is set to all or not specified, Compose reserves all devices")
    bare = same.replace("count: 1, ", "")
    assert [[p.data.get("reason") for p in s.engine_problems]
            for s in extract_text(bare, "docker-compose.yml")] == [[], ["shared-gpu"]]


def test_compose_services_on_a_visible_devices_variables_default() -> None:
    """``CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}`` in both services: the plain run's
    GPU 0 for each (a default is read as the file's other values are); no default, or
    different defaults, is not judged as one GPU."""
    def service(name: str, devices: str) -> str:
        return (f"  {name}:\n    image: vllm/vllm-openai:v0.10.1.1\n"
                f'    command: ["--model", "org/{name}", "--gpu-memory-utilization", "0.6"]\n'
                f"    environment:\n      - CUDA_VISIBLE_DEVICES={devices}\n"
                "    deploy: {resources: {reservations: {devices: [{driver: nvidia, "
                "count: all, capabilities: [gpu]}]}}}\n")

    def reasons(a: str, b: str) -> list[list[object]]:
        text = "services:\n" + service("a", a) + service("b", b)
        return [[p.data.get("reason") for p in s.engine_problems]
                for s in extract_text(text, "docker-compose.yml")]

    same = "${CUDA_VISIBLE_DEVICES:-0}"
    assert reasons(same, same) == [[], ["shared-gpu"]]
    assert reasons(same, "${CUDA_VISIBLE_DEVICES:-1}") == [[], []]
    assert reasons("${GPU_A}", "${GPU_A}") == [[], []]


def test_used_devices() -> None:
    assert used_devices(None, 2) == frozenset({"0", "1"})
    assert used_devices(["3", "5"], 1) == frozenset({"3"})
    assert used_devices(["3"], 2) is None  # too few: it does not start at all


def test_script_lines() -> None:
    lines = ScriptLines("vllm serve a \\\n  --port 1 > log 2>&1 &\n"
                        "vllm serve b 2>&1 | tee log\n# kill it\nwait_for_it\nwait\n")
    assert lines.span([1]) == (1, 2)
    assert lines.detached(1, 2)
    assert not lines.detached(3, 3)  # 2>&1 is a redirection, not a background job
    assert not lines.stops_between(2, 5)  # a comment and wait_for_it stop nothing
    assert lines.stops_between(2, 7)


def test_lint_reports_the_second_server(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\n" + PIN + _serve("org/a", 0.5) + _serve("org/b", 0.6),
                      encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(script), "--no-plugins", "--offline",
                                       "--isolated", "--no-cache", "--format", "json"])
    shared = [f for r in json.loads(result.stdout)["results"] for f in r["findings"]
              if f["data"].get("reason") == "shared-gpu"]
    assert [(f["code"], f["severity"], f["line"]) for f in shared] == [("KV702", "error", 4)]
    # the fractions as written, and their sum: 0.5 + 0.6 on GPU 0 (no CUDA_VISIBLE_DEVICES)
    assert "shares GPU 0 with the server on line 3, which holds 0.5 of it, and asks for " \
        "0.6 (1.1 in all)" in shared[0]["message"]
    assert "exits at start" in shared[0]["message"]  # 0.10.1.1: the start-up check
    assert shared[0]["data"]["sum"] == pytest.approx(1.1)
