"""The serving settings of a manifest reach the figures (README "Capacity"), a GPU the
manifest names wins over ``--gpu``, and KV703 (max_model_len above the model's own limit),
through the real CLI on manifests written to tmp dirs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner, Result

from kvlint.cli import main
from kvlint.linter import context_limit, limit_policy
from kvlint.model.context_limit import ContextLimit, LimitPolicy, derive
from kvlint.model.hardware import find_gpu
from kvlint.model.serving import ServingPlan
from tests.helpers import CONFIGS

GIB = 1024**3
LLAMA31_8B = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
LLAMA33_70B = CONFIGS / "meta-llama--Llama-3.3-70B-Instruct.json"
PHI3 = CONFIGS / "microsoft--Phi-3-medium-4k-instruct.json"
LLAMA_8B_WEIGHTS = 16_060_522_496  # 8,030,261,248 parameters x 2 bytes (estimate)


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"):
        monkeypatch.delenv(name, raising=False)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--no-plugins", "--isolated"])


def as_json(*args: str) -> dict[str, Any]:
    result = run(*args, "--format", "json")
    assert result.exit_code in (0, 1), result.output
    data: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(data, json.loads(CliRunner().invoke(main, ["schema"]).stdout))
    return data


def only(data: dict[str, Any]) -> dict[str, Any]:
    assert len(data["results"]) == 1
    result: dict[str, Any] = data["results"][0]
    return result


def codes(result: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(f["code"], f["line"]) for f in result["findings"]]


def deployment(tmp_path: Path, args: list[str], *, env: dict[str, str] | None = None,
               name: str = "dep.yaml", image: str = "vllm/vllm-openai:v0.33.0") -> Path:
    """A Kubernetes Deployment whose container runs ``args`` (one per line from line 12)."""
    lines = [
        "apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: llm", "spec:",
        "  template:", "    spec:", "      containers:", "        - name: engine",
        f"          image: {image}", "          args:",
        *[f"            - {json.dumps(a)}" for a in args],
    ]
    if env:
        lines.append("          env:")
        for key, value in env.items():
            lines += [f"            - name: {key}", f"              value: {json.dumps(value)}"]
    lines += ["          resources:", "            limits:", '              nvidia.com/gpu: "1"']
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def model_map(name: str, config: Path) -> list[str]:
    return ["--model-map", f"{name}={config}"]


# ---------------------------------------------------------------------------------------------
# B. every serving setting of the manifest reaches the figures


@pytest.mark.parametrize("fraction", [0.3, 0.95])
def test_manifest_gpu_memory_utilization_sizes_the_kv_budget(tmp_path: Path,
                                                             fraction: float) -> None:
    path = deployment(tmp_path, ["--model=org/llama", "--max-model-len=8192",
                                 f"--gpu-memory-utilization={fraction}", "--max-num-seqs=4"])
    result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                          *model_map("org/llama", LLAMA31_8B)))
    memory = find_gpu("H100-80GB").runtime_memory_bytes
    assert memory == 85_020_639_232
    # README "Capacity": KV budget = memory x gpu_memory_utilization - weights - overhead;
    # overhead = vLLM 0.33's profile on an H100 (estimates): 8,192 profiled tokens x
    # 110,592 B (max_num_seqs 4 keeps the sampler's 4 rows below it) + 300 MiB non-torch
    # + 512 MiB CUDA graphs
    overhead = 8192 * 110_592 + 300 * 2**20 + 512 * 2**20
    assert result["capacity"]["overhead_bytes_per_gpu"] == overhead
    budget = int(memory * fraction) - LLAMA_8B_WEIGHTS - overhead
    assert result["capacity"]["gpu_memory_utilization"] == fraction
    assert result["capacity"]["weight_bytes_per_gpu"] == LLAMA_8B_WEIGHTS
    assert result["capacity"]["kv_budget_bytes_per_gpu"] == budget
    # 131,072 B per token (32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes)
    assert result["capacity"]["max_tokens"] == budget // (16 * 131_072) * 16  # whole blocks
    assert result["capacity"]["max_sequences"] == budget // (8192 * 131_072)
    assert result["serving"]["max_model_len"] == 8192
    assert result["serving"]["max_num_seqs"] == 4


def test_manifest_max_num_batched_tokens_sizes_the_profile_run(tmp_path: Path) -> None:
    """vLLM profiles --max-num-batched-tokens tokens at start-up: 32,768 instead of the
    H100's default 8,192 makes the activation estimate 32,768 x 110,592 B (Llama-3.1-8B:
    2 B x (3 x 14,336 + 3 x 4,096)), which comes out of the KV budget."""
    base = ["--model=org/llama", "--max-model-len=8192"]
    default = only(as_json("lint", str(deployment(tmp_path, base, name="a.yaml")), "--gpu",
                           "H100-80GB", *model_map("org/llama", LLAMA31_8B)))
    given = only(as_json("lint", str(deployment(
        tmp_path, [*base, "--max-num-batched-tokens", "32768"], name="b.yaml")), "--gpu",
        "H100-80GB", *model_map("org/llama", LLAMA31_8B)))
    assert default["capacity"]["memory_profile"]["profiled_tokens"] == 8192
    assert given["capacity"]["memory_profile"]["profiled_tokens"] == 32_768
    assert given["capacity"]["memory_profile"]["activation_peak_bytes"] == 32_768 * 110_592
    # at the default 8,192 tokens the dummy sampler's 1,024 rows x 128,256 logits x 16 B are
    # the larger part of the peak
    sampler = 1024 * 128_256 * 16
    assert default["capacity"]["memory_profile"]["activation_peak_bytes"] == sampler
    assert default["capacity"]["kv_budget_bytes_per_gpu"] - \
        given["capacity"]["kv_budget_bytes_per_gpu"] == 32_768 * 110_592 - sampler


@pytest.mark.parametrize(("value", "budget"), [
    ("20G", 20 * 2**30), ("20g", 20 * 10**9), ("21474836480", 20 * 2**30),
    ("1.5g", 1_500_000_000)])
def test_manifest_kv_cache_memory_bytes_is_the_kv_budget(tmp_path: Path, value: str,
                                                         budget: int) -> None:
    """vLLM >= 0.10.2 reserves exactly --kv-cache-memory-bytes per GPU for the KV cache (no
    memory profile, no gpu_memory_utilization); human_readable_int: G = 2**30, g = 1e9.
    Llama-3.1-8B's bf16 KV is 131,072 B/token, and vLLM 0.33 counts whole 16-token blocks."""
    path = deployment(tmp_path, ["--model=org/llama", "--max-model-len=8192",
                                 "--gpu-memory-utilization=0.5",
                                 f"--kv-cache-memory-bytes={value}"])
    cap = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                       *model_map("org/llama", LLAMA31_8B)))["capacity"]
    assert cap["kv_budget_bytes_per_gpu"] == budget
    assert cap["max_tokens"] == budget // (131_072 * 16) * 16
    assert cap["memory_profile"] is None
    assert cap["kv_budget_source"] == "--kv-cache-memory-bytes (line 15)"


def test_kv_cache_memory_bytes_beyond_the_gpu_and_before_vllm_0_10_2(tmp_path: Path) -> None:
    args = ["--model=org/llama", "--kv-cache-memory-bytes=80G"]
    result = only(as_json("lint", str(deployment(tmp_path, args)), "--gpu", "H100-80GB",
                          *model_map("org/llama", LLAMA31_8B)))
    (kv503,) = [f for f in result["findings"] if f["code"] == "KV503"]
    weights = result["capacity"]["weight_bytes_per_gpu"]
    gpu = result["capacity"]["gpu_memory_bytes"]
    assert kv503["data"] == {"weight_bytes_per_gpu": weights,
                             "kv_cache_memory_bytes": 80 * 2**30, "gpu_memory_bytes": gpu}
    assert weights + 80 * 2**30 > gpu
    assert kv503["message"].startswith(
        "The KV cache --kv-cache-memory-bytes (line 13) sets (80.0 GiB) and the weights")
    assert "the server runs out of memory at start" in kv503["message"]
    text = run("check", str(LLAMA31_8B), "--gpu", "H100-80GB", "--kv-cache-memory-bytes",
               "80G").stdout
    assert "KV cache set by --kv-cache-memory-bytes (no memory profile, no " \
        "gpu_memory_utilization)" in text, text
    assert "more than the GPU has, the server runs out of memory at start" in text
    assert "TPOT ≥" in text  # the decode roofline stays
    assert "KV503" in text
    bad = run("check", str(LLAMA31_8B), "--gpu", "H100-80GB", "--kv-cache-memory-bytes", "1.5G")
    assert bad.exit_code == 2 and "not a byte count vLLM accepts" in bad.output
    old = only(as_json("lint", str(deployment(tmp_path, args, name="old.yaml",
                                              image="vllm/vllm-openai:v0.8.5")),
                       "--gpu", "H100-80GB", *model_map("org/llama", LLAMA31_8B)))
    assert old["capacity"]["kv_budget_source"] is None  # 0.8.5 has no such option ...
    assert "KV701" in {f["code"] for f in old["findings"]}  # ... and refuses it at start


def test_vllm_0_34_without_its_extensible_kv_cache(tmp_path: Path) -> None:
    """vLLM 0.34's extensible KV cache (on by default) makes gpu_memory_utilization default to
    1.0 and keeps max(1 GiB, 0.75 x peak) free; --no-enable-extensible-kv-cache goes back to
    0.92 and no margin (CacheConfig.resolved_gpu_memory_utilization)."""
    image = "vllm/vllm-openai:v0.34.0"
    base = ["--model=org/llama", "--max-model-len=8192"]
    on, off, explicit = (only(as_json("lint", str(deployment(
        tmp_path, [*base, *extra], name=f"{i}.yaml", image=image)), "--gpu", "H100-80GB",
        *model_map("org/llama", LLAMA31_8B)))["capacity"] for i, extra in enumerate(
            ([], ["--no-enable-extensible-kv-cache"], ["--enable-extensible-kv-cache"])))
    assert (on["gpu_memory_utilization"], off["gpu_memory_utilization"]) == (1.0, 0.92)
    assert on["memory_profile"]["kv_margin_bytes"] == max(  # utilization 1.0: all of it
        GIB, int(on["memory_profile"]["activation_peak_bytes"] * 0.75))
    assert off["memory_profile"]["kv_margin_bytes"] == 0
    assert explicit == on
    gpu = on["gpu_memory_bytes"]
    assert on["memory_profile"]["requested_bytes"] == gpu
    assert off["memory_profile"]["requested_bytes"] == int(gpu * 0.92)


def test_budgets_differ_by_exactly_the_fraction(tmp_path: Path) -> None:
    budgets = []
    for fraction in ("0.3", "0.95"):
        path = deployment(tmp_path, ["--model=org/llama",
                                     f"--gpu-memory-utilization={fraction}"],
                          name=f"dep-{fraction}.yaml")
        result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                              *model_map("org/llama", LLAMA31_8B)))
        budgets.append(result["capacity"]["kv_budget_bytes_per_gpu"])
    # int(85,020,639,232 x f) - 16,060,522,496 weights - 2,952,790,016 overhead: vLLM 0.33's
    # profile on an H100, the sampler's 1,024 x 128,256 x 16 B + 300 MiB + 512 MiB (estimates)
    assert budgets == [6_492_879_257, 61_756_294_758]
    assert budgets[1] - budgets[0] == int(85_020_639_232 * 0.95) - int(85_020_639_232 * 0.3)


def sglang_compose(tmp_path: Path, args: str) -> Path:
    """A compose file running SGLang 0.5.23 on org/llama with ``args`` (line 4)."""
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n"
        "  sglang:\n"
        "    image: lmsysorg/sglang:v0.5.23\n"
        f"    command: python3 -m sglang.launch_server --model-path org/llama {args}\n",
        encoding="utf-8")
    return path


def test_sglang_mem_fraction_static_sizes_the_kv_budget(tmp_path: Path) -> None:
    path = sglang_compose(tmp_path, "--mem-fraction-static 0.5")
    result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                          *model_map("org/llama", LLAMA31_8B)))
    assert result["capacity"]["gpu_memory_utilization"] == 0.5
    # SGLang's budget: the memory free at start (the CUDA total less the start-up context,
    # 380 MiB at tp 1) x mem_fraction_static - weights (kvlint/model/sglang_memory.py)
    assert result["capacity"]["kv_budget_bytes_per_gpu"] == \
        int((85_020_639_232 - 380 * 1024**2) * 0.5) - LLAMA_8B_WEIGHTS


@pytest.mark.parametrize(("cap", "tokens", "capped"), [
    ("50000", 50_000, True), ("5000000", None, False)])
def test_sglang_max_total_tokens_caps_the_pool(tmp_path: Path, cap: str, tokens: int | None,
                                               capped: bool) -> None:
    """SGLang's pool holds min(profiled, --max-total-tokens) tokens (model_runner.py
    @0.4.6.post1 lines 774-781, @0.5.5.post3 lines 1636-1643; kv_cache_configurator.py
    @0.5.23 _apply_token_constraints): a cap below what the budget holds binds, one above
    it does nothing (SGLang warns and uses the profiled size)."""
    path = sglang_compose(tmp_path, f"--context-length 8192 --max-total-tokens {cap}")
    result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                          *model_map("org/llama", LLAMA31_8B)))
    cap_info = result["capacity"]
    fraction = cap_info["gpu_memory_utilization"]  # SGLang's default for the GPU
    assert fraction == 0.83  # 0.5.23 on an H100 at tp 1: round((81559 - 13904) / 81559, 3)
    budget = int((85_020_639_232 - 380 * 1024**2) * fraction) - LLAMA_8B_WEIGHTS
    held = budget // 131_072
    assert cap_info["kv_budget_bytes_per_gpu"] == budget  # the budget is not the cap's
    assert held > 50_000
    assert cap_info["max_tokens"] == (tokens if capped else held)
    assert cap_info["max_sequences"] == (tokens if capped else held) // 8192
    assert (cap_info["kv_tokens_capped_by"] is not None) == capped
    if capped:
        assert cap_info["kv_tokens_capped_by"] == "--max-total-tokens (line 4)"


def test_an_impossible_fraction_falls_back_to_the_engine_default(tmp_path: Path) -> None:
    path = deployment(tmp_path, ["--model=org/llama", "--gpu-memory-utilization=1.5"])
    result = run("lint", str(path), "--gpu", "H100-80GB", "--format", "json",
                 *model_map("org/llama", LLAMA31_8B))
    assert result.exit_code in (0, 1), result.output
    capacity = json.loads(result.stdout)["results"][0]["capacity"]
    assert capacity["gpu_memory_utilization"] == 0.92  # vLLM 0.33's default


# ---------------------------------------------------------------------------------------------
# C. --gpu is a default: a GPU the manifest names wins, and the output says where it came from


def dstack(tmp_path: Path, gpu: str, *, tp: int = 8, extra: str = "") -> Path:
    path = tmp_path / "svc.dstack.yml"
    path.write_text(
        "type: service\n"
        "name: llama\n"
        "image: vllm/vllm-openai:v0.33.0\n"
        f"{extra}"
        "commands:\n"
        f"  - vllm serve org/llama-70b --tensor-parallel-size {tp} --max-model-len 8192\n"
        "port: 8000\n"
        "resources:\n"
        f"  gpu: {gpu}\n", encoding="utf-8")
    return path


def test_gpu_named_by_the_manifest_wins_over_the_option(tmp_path: Path) -> None:
    path = dstack(tmp_path, "8:H200", tp=1)
    args = ("lint", str(path), *model_map("org/llama-70b", LLAMA33_70B))
    result = only(as_json(*args, "--gpu", "H100-80GB"))
    assert result["capacity"]["gpu"] == "H200"
    assert result["capacity"]["gpu_source"] == "resources.gpu (line 8)"
    assert result["serving"]["gpu"] == "H200"
    # ~141 GB of 70B weights on one GPU: KV503, for the H200 the manifest asks for (and saying
    # where it came from), never for the H100 of --gpu
    messages = [f["message"] for f in result["findings"] if f["code"] == "KV503"]
    assert len(messages) == 1
    assert "each H200 (from resources.gpu (line 8))" in messages[0]
    assert "H100" not in messages[0]


def test_no_false_kv503_for_the_option_gpu(tmp_path: Path) -> None:
    path = dstack(tmp_path, "8:H200", tp=8)
    result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                          *model_map("org/llama-70b", LLAMA33_70B)))
    assert result["capacity"]["gpu"] == "H200"
    assert "KV503" not in [c for c, _ in codes(result)]
    assert result["capacity"]["kv_budget_bytes_per_gpu"] == \
        int(150_109_945_856 * 0.92) - result["capacity"]["weight_bytes_per_gpu"] \
        - result["capacity"]["overhead_bytes_per_gpu"]


def test_option_and_settings_gpu_apply_when_the_manifest_names_none(tmp_path: Path) -> None:
    path = deployment(tmp_path, ["--model=org/llama"])
    mapping = model_map("org/llama", LLAMA31_8B)
    option = only(as_json("lint", str(path), "--gpu", "L40S", *mapping))
    assert (option["capacity"]["gpu"], option["capacity"]["gpu_source"]) == ("L40S", "--gpu")
    settings = tmp_path / "kvlint.toml"
    settings.write_text('gpu = "H100-80GB"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["lint", str(path), "--no-plugins", "--config",
                                       str(settings), "--format", "json", *mapping])
    capacity = json.loads(result.stdout)["results"][0]["capacity"]
    assert (capacity["gpu"], capacity["gpu_source"]) == ("H100-80GB", "settings (gpu)")


def test_text_output_says_where_the_gpu_came_from(tmp_path: Path) -> None:
    path = dstack(tmp_path, "8:H200", tp=1)
    result = run("lint", str(path), "--gpu", "H100-80GB",
                 *model_map("org/llama-70b", LLAMA33_70B))
    assert result.exit_code == 1
    assert "H200 (from resources.gpu (line 8))" in " ".join(result.output.split())


# ---------------------------------------------------------------------------------------------
# A. KV703: max_model_len above the model's own limit


def test_kv703_on_the_max_model_len_line(tmp_path: Path) -> None:
    path = deployment(tmp_path, ["--model=microsoft/Phi-3-medium-4k-instruct",
                                 "--max-model-len", "8192"])
    result = only(as_json("lint", str(path), *model_map("microsoft/Phi-3-medium-4k-instruct",
                                                        PHI3)))
    assert codes(result) == [("KV703", 13)]
    finding = result["findings"][0]
    assert finding["severity"] == "error"
    assert finding["data"]["model_limit"] == 4096
    assert finding["data"]["limit_key"] == "max_position_embeddings"
    assert finding["data"]["override_env"] == "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
    assert "max_model_len 8,192 is above the model's own limit of 4,096 tokens" in \
        finding["message"]
    assert "vLLM 0.33.0" in finding["message"]
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in finding["message"]


@pytest.mark.parametrize(("value", "found"), [("1", False), ("true", False), (" TRUE ", False),
                                              ("0", True), ("yes", True)])
def test_kv703_override_in_the_container_env(tmp_path: Path, value: str, found: bool) -> None:
    # vllm/envs.py: os.environ.get(...).strip().lower() in ("1", "true")
    path = deployment(tmp_path, ["--model=microsoft/Phi-3-medium-4k-instruct",
                                 "--max-model-len=8192"],
                      env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": value})
    result = only(as_json("lint", str(path), *model_map("microsoft/Phi-3-medium-4k-instruct",
                                                        PHI3)))
    assert ("KV703" in [c for c, _ in codes(result)]) is found


def test_kv703_override_from_a_secret_is_not_guessed(tmp_path: Path) -> None:
    path = deployment(tmp_path, ["--model=microsoft/Phi-3-medium-4k-instruct",
                                 "--max-model-len=8192"])
    text = path.read_text(encoding="utf-8").replace(
        "          resources:",
        "          env:\n"
        "            - name: VLLM_ALLOW_LONG_MAX_MODEL_LEN\n"
        "              valueFrom:\n"
        "                secretKeyRef: {name: flags, key: long}\n"
        "          resources:")
    path.write_text(text, encoding="utf-8")
    result = only(as_json("lint", str(path), *model_map("microsoft/Phi-3-medium-4k-instruct",
                                                        PHI3)))
    assert codes(result) == []


def test_kv703_override_in_a_shell_prefix(tmp_path: Path) -> None:
    path = tmp_path / "svc.dstack.yml"
    path.write_text(
        "type: service\nname: phi\nimage: vllm/vllm-openai:v0.33.0\ncommands:\n"
        "  - VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve microsoft/Phi-3-medium-4k-instruct"
        " --max-model-len 8192\n"
        "  - vllm serve microsoft/Phi-3-medium-4k-instruct --max-model-len 8192\n"
        "port: 8000\n", encoding="utf-8")
    data = as_json("lint", str(path), *model_map("microsoft/Phi-3-medium-4k-instruct", PHI3))
    # dstack serves the first engine command: the one with the override
    assert [codes(r) for r in data["results"]] == [[]]


def test_kv703_sglang_context_length_and_its_override(tmp_path: Path) -> None:
    def compose(env: str) -> Path:
        path = tmp_path / "compose.yaml"
        path.write_text(
            "services:\n"
            "  sglang:\n"
            "    image: lmsysorg/sglang:v0.5.23\n"
            "    gpus: all\n"
            f"{env}"
            "    command: python3 -m sglang.launch_server --model-path org/phi\n"
            "      --context-length 5000\n", encoding="utf-8")
        return path

    mapping = model_map("org/phi", PHI3)
    result = only(as_json("lint", str(compose("")), *mapping))
    assert [c for c, _ in codes(result)] == ["KV703"]
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in result["findings"][0]["message"]
    assert "SGLang 0.5.23" in result["findings"][0]["message"]
    allowed = compose("    environment:\n      SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: 'yes'\n")
    assert codes(only(as_json("lint", str(allowed), *mapping))) == []


def test_kv703_at_the_limit_is_fine(tmp_path: Path) -> None:
    path = deployment(tmp_path, ["--model=org/phi", "--max-model-len=4096"])
    assert codes(only(as_json("lint", str(path), *model_map("org/phi", PHI3)))) == []


def test_kv703_engines_without_a_derivation_are_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n  tgi:\n    image: ghcr.io/huggingface/text-generation-inference:3.3.6\n"
        "    command: --model-id org/phi --max-total-tokens 8192 --max-input-tokens 8000\n",
        encoding="utf-8")
    result = only(as_json("lint", str(path), *model_map("org/phi", PHI3)))
    assert "KV703" not in [c for c, _ in codes(result)]


def test_check_max_model_len_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    result = only(as_json("check", str(PHI3), "--max-model-len", "4097"))
    assert [f["code"] for f in result["findings"]] == ["KV703"]
    assert result["findings"][0]["data"]["model_limit"] == 4096
    assert only(as_json("check", str(PHI3), "--max-model-len", "4096"))["findings"] == []
    # the override of kvlint's own environment is honoured, as the engine would honour it
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    assert only(as_json("check", str(PHI3), "--max-model-len", "4097"))["findings"] == []


def test_check_huge_max_model_len_does_not_crash() -> None:
    """A 400-digit --max-model-len is a usage error on one line (the option is bounded), not
    a crash; the largest accepted value is judged by KV703."""
    huge = "9" * 400
    result = run("check", str(PHI3), "--max-model-len", huge, "--format", "json")
    assert result.exit_code == 2, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("kvlint: error: --max-model-len: ") and "is not in the range" in line
    result = run("check", str(PHI3), "--max-model-len", str(2**32), "--format", "json")
    assert result.exit_code == 1, result.output
    finding = json.loads(result.stdout)["results"][0]["findings"][0]
    assert finding["code"] == "KV703"
    assert finding["data"]["max_model_len"] == 2**32
    assert finding["message"].startswith("max_model_len 4,294,967,296 is above the "
                                         "model's own limit of 4,096 tokens")


def test_check_rope_scaling_by_engine_version(tmp_path: Path) -> None:
    config = json.loads((CONFIGS / "Qwen--Qwen2.5-7B.json").read_text(encoding="utf-8"))
    config["max_position_embeddings"] = 32768
    config["rope_scaling"] = {"type": "yarn", "factor": 4.0,
                              "original_max_position_embeddings": 32768}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    # vLLM < 0.30 scales YaRN's original length (32,768 x 4); 0.30+ leaves it unscaled
    old = only(as_json("check", str(path), "--engine-version", "0.29.0",
                       "--max-model-len", "131072"))
    assert old["findings"] == []
    new = only(as_json("check", str(path), "--engine-version", "0.30.0",
                       "--max-model-len", "131072"))
    assert [f["data"]["model_limit"] for f in new["findings"]] == [32768]
    over = only(as_json("check", str(path), "--engine-version", "0.29.0",
                        "--max-model-len", "131073"))
    assert over["findings"][0]["data"]["model_limit"] == 131072
    assert "rope original_max_position_embeddings=32768 x rope factor 4 (yarn) = 131072" in \
        over["findings"][0]["message"]


# ---------------------------------------------------------------------------------------------
# the derivations themselves, with exact values (vllm/config/model.py@0.33.0,
# sglang/srt/utils/hf_transformers/common.py@0.5.23)


def policy(engine: str, version: str) -> LimitPolicy:
    from kvlint.engines import behaviour

    plan = ServingPlan(engine=engine, engine_version=version)
    found = limit_policy(ServingPlan(behaviour=behaviour(plan.engine, plan.engine_version,
                                                         "llama", is_mla=False)))
    assert found is not None
    return found


def test_vllm_linear_rope_multiplies() -> None:
    text = {"model_type": "llama", "max_position_embeddings": 4096,
            "rope_scaling": {"type": "linear", "factor": 4.0}}
    assert derive(text, "llama", policy("vllm", "0.33.0")) == ContextLimit(
        16384.0, "max_position_embeddings", 4096, "linear", 4.0)


def test_vllm_llama3_and_gemma3_are_not_scaled() -> None:
    llama = {"max_position_embeddings": 131072,
             "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    assert derive(llama, "llama", policy("vllm", "0.33.0")) == ContextLimit(
        131072.0, "max_position_embeddings", 131072)
    gemma = {"max_position_embeddings": 32768, "rope_scaling": {"rope_type": "linear",
                                                                "factor": 8.0}}
    assert derive(gemma, "gemma3_text", policy("vllm", "0.33.0")).limit == 32768  # type: ignore[union-attr]


def test_vllm_smallest_key_and_model_max_length() -> None:
    both = {"max_position_embeddings": 8192, "seq_length": 4096}
    limit = derive(both, "x", policy("vllm", "0.33.0"))
    assert limit == ContextLimit(4096.0, "seq_length", 4096)
    cohere = {"max_position_embeddings": 8192, "model_max_length": 131072}
    limit = derive(cohere, "cohere", policy("vllm", "0.33.0"))
    assert limit == ContextLimit(131072.0, "model_max_length", 131072, model_max_length=131072)
    assert derive({"hidden_size": 8}, "x", policy("vllm", "0.33.0")) is None


def test_vllm_nested_rope_parameters_and_null_factor() -> None:
    nested = {"max_position_embeddings": 8192, "rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 2.0},
        "sliding_attention": {"rope_type": "default"}}}
    assert derive(nested, "x", policy("vllm", "0.33.0")).limit == 16384  # type: ignore[union-attr]
    null = {"max_position_embeddings": 8192, "rope_scaling": {"type": "dynamic",
                                                               "factor": None}}
    assert derive(null, "x", policy("vllm", "0.33.0")).limit == 8192  # type: ignore[union-attr]


def test_sglang_first_key_and_original_length_rule() -> None:
    sglang = policy("sglang", "0.5.23")
    text = {"seq_length": 8192, "max_position_embeddings": 4096,
            "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    assert derive(text, "x", sglang) == ContextLimit(16384.0, "seq_length", 8192,
                                                      "dynamic", 2.0)
    yarn = {"max_position_embeddings": 32768, "rope_scaling": {
        "type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert derive(yarn, "x", sglang) == ContextLimit(32768.0, "max_position_embeddings", 32768)


def test_fixture_limits_for_vllm() -> None:
    vllm = ServingPlan()  # the newest vLLM
    for name, limit in [("microsoft--Phi-3-medium-4k-instruct", 4096),
                        ("meta-llama--Llama-3.3-70B-Instruct", 131072),
                        ("deepseek-ai--DeepSeek-V3", 163840)]:
        config = json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))
        found = context_limit(config, limit_policy(vllm))
        assert found is not None and found.admitted == limit, name


# ---------------------------------------------------------------------------------------------
# the audit: every serving setting a manifest parser extracts changes the plan


NOT_PLAN_FIELDS = {
    "path", "line", "format", "document", "name", "role", "served_name", "image", "notes",
    "model",  # resolved to the config, not a plan setting
    "gpus",  # lint_served passes it as gpus_requested (KV206)
    "ep",  # expert parallelism is not modelled: weights per GPU follow tp x pp
    "engine_problems",  # lint_served passes them to the rules (KV701/KV702)
    "node_rank",  # which node of a multi-node server: the extraction folds ranks above 0
    # LoRA's slots qualify --enable-lora (vLLM ignores them without it): tested with it below
    "max_loras", "max_lora_rank", "lora_sharded",
}


def test_every_served_model_setting_reaches_the_plan() -> None:
    from dataclasses import fields

    from kvlint.lint.runner import plan_for
    from kvlint.manifests.base import Located, ServedModel

    samples: dict[str, Any] = {
        "engine": Located("sglang"), "engine_version": Located("0.4.0"), "tp": Located(2),
        "pp": Located(2), "dp": Located(4), "dp_attention": Located(True),
        "kv_cache_dtype": Located("fp8"), "max_model_len": Located(1024),
        "max_num_seqs": Located(8), "gpu_memory_utilization": Located(0.5),
        "max_num_batched_tokens": Located(4096), "kv_cache_memory_bytes": Located(2**34),
        "extensible_kv_cache": Located(False), "kv_tokens_cap": Located(4096),
        "gpu_type": Located("H200"), "env": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": Located("1")},
        "dtype": Located("float32"), "gpu_memory": Located(46_068 / 1024),
        "quantization": Located("fp8"),
        "config_overrides": Located('{"max_position_embeddings":8192}'),
        "prefill_chunk": Located(-1), "graph_batch": Located(64), "page_size": Located(64),
        "speculative": Located("eagle"), "backend": Located("pytorch"),
        "graph_off": Located(True), "swa_ratio": Located(0.5), "lora": Located(True),
        "cpu_offload": Located(4.0), "attention_windows": Located((4096,)),
        "trust_remote_code": Located(True),
    }
    settings = {f.name for f in fields(ServedModel)} - NOT_PLAN_FIELDS
    assert settings == set(samples), "a new ServedModel field: make it reach the plan"
    base = ServingPlan(gpu="L4", gpu_source="--gpu")
    common: dict[str, Any] = {"engine": Located("vllm"), "tp": Located(4), "dp": Located(2)}
    plain = plan_for(ServedModel("m.yaml", 1, "k8s", **common), base)
    for name, value in samples.items():
        served = ServedModel("m.yaml", 1, "k8s", **{**common, name: value})
        assert plan_for(served, base) != plain, name
    lora = plan_for(ServedModel("m.yaml", 1, "k8s", **common, lora=Located(True)), base)
    for name, value in (("max_loras", Located(4)), ("max_lora_rank", Located(64)),
                        ("lora_sharded", Located(True))):
        served = ServedModel("m.yaml", 1, "k8s", **common, lora=Located(True), **{name: value})
        assert plan_for(served, base) != lora, name


@pytest.mark.parametrize(("dtype", "kv_dtype", "per_token"), [
    ("float32", "float32", 262_144), ("float", "float32", 262_144),
    ("half", "float16", 131_072), ("auto", "bfloat16", 131_072)])
def test_engine_dtype_reaches_an_auto_kv_cache(tmp_path: Path, dtype: str, kv_dtype: str,
                                               per_token: int) -> None:
    """vLLM's --kv-cache-dtype auto follows the model dtype the engine serves (--dtype):
    Llama-3.1-8B holds 32 layers x 8 KV heads x 128 x 2 (K and V) = 65,536 elements per
    token, 4 bytes each in float32, 2 in half or the config's bfloat16."""
    manifest = tmp_path / "compose.yaml"
    manifest.write_text("services:\n  vllm:\n    image: vllm/vllm-openai:v0.8.5\n"
                        f'    command: ["--model", "org/llama", "--dtype", "{dtype}"]\n'
                        "    gpus: all\n")
    config = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
    result = run("lint", str(manifest), "--isolated", "--format", "json",
                 "--model-map", f"org/llama={config}")
    assert result.exit_code == 0, result.output
    kv = json.loads(result.stdout)["results"][0]["kv"]
    assert (kv["dtype"], kv["bytes_per_token"]) == (kv_dtype, per_token)


@pytest.mark.parametrize(("version", "cell"), [
    ("0.4.10", 21 * 8192 + 0.8 * 21 * 8192),  # the hybrid SWA pool: full-pool tokens
    ("0.5.2", 42 * 8192),  # Gemma-2's SWA pool switched off: every layer full
])
def test_sglang_sizes_gemma2_in_its_own_pool_unit(version: str, cell: float) -> None:
    """SGLang's #tokens for Gemma-2-9B on an H100 (42 layers, 21 windowed, 8,192 B a layer
    a token at tp 1): the budget over one full-pool token's cost."""
    import json

    from click.testing import CliRunner

    from kvlint.cli import main
    from tests.helpers import CONFIGS

    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / "google--gemma-2-9b.json"), "--engine", "sglang",
        "--engine-version", version, "--gpu", "H100", "--format", "json"])
    cap = json.loads(result.stdout)["results"][0]["capacity"]
    assert cap["max_tokens"] == int(cap["kv_budget_bytes_per_gpu"] * 5 // int(cell * 5))


@pytest.mark.parametrize(("args", "fraction"), [
    # 0.5.23 on an H100 at tp 1 (kvlint/model/sglang_memory.py, restated from
    # arg_groups/memory_hook.py@0.5.23): 512 + 1.5 x chunk + 2 x graph batch + 128 + 8 x the
    # prefill graph sizes up to the chunk, with a 10 GiB floor; no speculative reserve
    ("", 0.830),
    ("--chunked-prefill-size 4096", round((81559 - 10240) / 81559, 3)),  # the floor
    ("--chunked-prefill-size 16384 --cuda-graph-max-bs 64",
     round((81559 - (512 + 24576 + 128 + 128 + 74 * 8)) / 81559, 3)),
    ("--speculative-algorithm EAGLE", 0.830),
])
def test_sglang_start_up_options_shape_its_default_fraction(tmp_path: Path, args: str,
                                                            fraction: float) -> None:
    path = sglang_compose(tmp_path, args)
    result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                          *model_map("org/llama", LLAMA31_8B)))
    assert result["capacity"]["gpu_memory_utilization"] == fraction


def test_sglang_page_size_rounds_the_pool(tmp_path: Path) -> None:
    plain = only(as_json("lint", str(sglang_compose(tmp_path, "")), "--gpu", "H100-80GB",
                         *model_map("org/llama", LLAMA31_8B)))["capacity"]
    paged = only(as_json("lint", str(sglang_compose(tmp_path, "--page-size 64")), "--gpu",
                         "H100-80GB", *model_map("org/llama", LLAMA31_8B)))["capacity"]
    assert paged["max_tokens"] == plain["max_tokens"] // 64 * 64


@pytest.mark.parametrize("version", ["0.7.3", "0.18.0"])
def test_lmdeploy_turbomind_budget_is_a_share_of_the_free_memory(version: str) -> None:
    """TurboMind (Llama's default backend): the cache takes cache_max_entry_count (0.8) of
    the memory free after the weights (the CUDA total less the start-up context), in whole
    64-token blocks (kvlint/model/lmdeploy_memory.py)."""
    import json

    from click.testing import CliRunner

    from kvlint.cli import main
    from tests.helpers import CONFIGS

    result = CliRunner().invoke(main, [
        "check", str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), "--engine", "lmdeploy",
        "--engine-version", version, "--gpu", "H100", "--format", "json"])
    cap = json.loads(result.stdout)["results"][0]["capacity"]
    weights = cap["weight_bytes_per_gpu"]
    budget = int((85_020_639_232 - 380 * 1024**2 - weights) * 0.8)
    assert cap["kv_budget_bytes_per_gpu"] == budget
    assert cap["max_tokens"] == budget // (131_072 * 64) * 64


def test_lmdeploy_pytorch_engine_sets_its_runtime_reserve_aside(tmp_path: Path) -> None:
    """``--backend pytorch`` (LMDeploy 0.18.0): the runtime reserve, (8192 + 2 x 1024) x vocab
    x 2 B for an H100 (max_batch_size 1024 there from 0.10.0), comes off the memory free after the
    weights before cache_max_entry_count applies; the pool is whole 64-token blocks."""
    path = tmp_path / "compose.yaml"
    path.write_text(
        "services:\n  lmdeploy:\n    image: openmmlab/lmdeploy:v0.18.0-cu12\n"
        "    command: lmdeploy serve api_server org/llama --backend pytorch\n",
        encoding="utf-8")
    cap = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                       *model_map("org/llama", LLAMA31_8B)))["capacity"]
    runtime = (8192 + 2 * 1024) * 128_256 * 2
    budget = int((85_020_639_232 - 380 * 1024**2 - LLAMA_8B_WEIGHTS - runtime) * 0.8)
    assert cap["kv_budget_bytes_per_gpu"] == budget
    assert cap["max_tokens"] == budget // (131_072 * 64) * 64


def test_check_takes_sglangs_start_options_as_a_manifest_gives_them(tmp_path: Path) -> None:
    """``check --engine sglang`` with SGLang's own options (and spellings) sizes the pool as
    the same command in a compose file does."""
    llama = CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"
    flags = ["--mem-fraction-static", "0.8", "--max-running-requests", "16",
             "--chunked-prefill-size", "4096", "--cuda-graph-max-bs", "16", "--page-size", "16",
             "--context-length", "8192"]
    checked = only(as_json("check", str(llama), "--engine", "sglang", "--engine-version",
                           "0.5.3", "--gpu", "L40S", *flags))
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  sglang:\n    image: lmsysorg/sglang:v0.5.3\n    gpus: all\n"
        "    command: python3 -m sglang.launch_server --model-path org/llama "
        + " ".join(flags) + "\n", encoding="utf-8")
    linted = only(as_json("lint", str(compose), "--gpu", "L40S",
                          *model_map("org/llama", llama)))
    assert checked["capacity"]["max_tokens"] == linted["capacity"]["max_tokens"]
    assert checked["capacity"]["max_tokens"] % 16 == 0  # whole pages
    capped = only(as_json("check", str(llama), "--engine", "sglang", "--engine-version",
                          "0.5.3", "--gpu", "L40S", "--max-total-tokens", "1000"))
    assert capped["capacity"]["max_tokens"] == 1000


@pytest.mark.parametrize(("extra", "flagged"), [("", True), (" --disable-cuda-graph", False)])
def test_sglang_disable_cuda_graph_reaches_the_graph_state(tmp_path: Path, extra: str,
                                                           flagged: bool) -> None:
    """A compose file's ``--disable-cuda-graph`` reaches KV504 as ``check``'s flag does:
    without graphs, Llama-4-Scout's 2M-token start on 8 x H200 holds no graph state."""
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        "services:\n  sglang:\n    image: lmsysorg/sglang:v0.5.6.post2\n    gpus: all\n"
        "    command: python3 -m sglang.launch_server --model-path org/scout --tp 8 "
        "--context-length 2097152 --mem-fraction-static 0.85" + extra + "\n",
        encoding="utf-8")
    scout = CONFIGS / "meta-llama--Llama-4-Scout-17B-16E-Instruct.json"
    result = only(as_json("lint", str(compose), "--gpu", "H200",
                          *model_map("org/scout", scout)))
    assert ("KV504" in [code for code, _ in codes(result)]) is flagged


def test_gpu_alternatives_are_judged_on_the_smallest(tmp_path: Path) -> None:
    """SkyPilot ``accelerators: {L4: 1, T4: 1}``: the launcher may place the server on
    either, so it must start on the 16 GB T4 too; Llama-3.1-8B's 16.1 GB of weights do not
    fit there (KV503), whichever GPU --gpu names."""
    path = tmp_path / "serve.yaml"
    path.write_text("resources:\n  accelerators: {L4: 1, T4: 1}\n"
                    "run: |\n  vllm serve org/llama --max-model-len 1024\n", encoding="utf-8")
    result = only(as_json("lint", str(path), "--gpu", "H100-80GB",
                          *model_map("org/llama", LLAMA31_8B)))
    assert result["capacity"]["gpu"] == "T4"
    assert result["capacity"]["gpu_source"].endswith("T4, the smallest of L4 | T4 (line 2)")
    assert sorted(c for c, _ in codes(result)) == ["KV304", "KV503"]  # KV304: no version
    # one alternative kvlint does not know: no GPU is chosen from the alternatives
    path.write_text(path.read_text().replace("T4: 1", "Mystery9: 1"), encoding="utf-8")
    result = only(as_json("lint", str(path), *model_map("org/llama", LLAMA31_8B)))
    assert result["capacity"] is None or result["capacity"]["gpu"] != "L4"
