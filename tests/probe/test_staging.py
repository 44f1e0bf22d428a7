"""The staging path of ``kvlint probe`` against a loopback fake of a vLLM OpenAI server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")
pytest.importorskip("prometheus_client")

from kvlint.errors import UsageError
from kvlint.loaders.hf_config import resolve_geometry
from kvlint.model.geometry import AttentionGeometry
from kvlint.probe.slope import LinearFit
from kvlint.probe.staging import (
    CacheConfigInfo,
    ItlFit,
    allocation,
    fetch_metrics,
    itl_measurement,
    measure_itl,
    parse_metrics,
    report,
)
from tests.hub_server import unused_port

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
LLAMA_8B_BYTES = 131072
"""Llama-3.1-8B, bf16, tp 1: 32 layers x 8 KV heads x (128 + 128) x 2 bytes."""
MODEL_NAME = "meta-llama/Llama-3.1-8B-Instruct"

# The label set of a vLLM 0.10 ``CacheConfig`` (``metrics_info()``: every attribute, str()).
CACHE_LABELS = {
    "block_size": "16",
    "cache_dtype": "auto",
    "calculate_kv_scales": "False",
    "cpu_offload_gb": "0",
    "enable_prefix_caching": "True",
    "engine": "0",
    "gpu_memory_utilization": "0.9",
    "is_attention_free": "False",
    "kv_cache_memory_bytes": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_cache_dtype": "auto",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks": "27000",
    "num_gpu_blocks_override": "None",
    "prefix_caching_hash_algo": "builtin",
    "sliding_window": "None",
    "swap_space": "4",
    "swap_space_bytes": "4294967296",
}


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))


def metrics_text(*, info_metric: str | None = "vllm:cache_config_info", **overrides: str) -> str:
    """A /metrics page as vLLM serves it, with ``vllm:cache_config_info`` among the others;
    ``overrides`` replace or add labels (``None``-valued labels are dropped)."""
    labels = {**CACHE_LABELS, **overrides}
    model = f'engine="0",model_name="{MODEL_NAME}"'
    lines = [
        "# HELP python_gc_objects_collected_total Objects collected during gc",
        "# TYPE python_gc_objects_collected_total counter",
        'python_gc_objects_collected_total{generation="0"} 14210.0',
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        f"vllm:num_requests_running{{{model}}} 0.0",
        "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{{{model}}} 0.0",
        "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
        "# TYPE vllm:kv_cache_usage_perc gauge",
        f"vllm:kv_cache_usage_perc{{{model}}} 0.0",
        "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of tokens.",
        "# TYPE vllm:prefix_cache_queries_total counter",
        f"vllm:prefix_cache_queries_total{{{model}}} 0.0",
    ]
    if info_metric == "vllm:cache_config_info":
        lines += [
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
            "# TYPE vllm:cache_config_info gauge",
            f"vllm:cache_config_info{{{_labels(labels)}}} 1.0",
        ]
    elif info_metric == "vllm:vllm_config_info":
        prefixed = {f"cache_config_{k}": v for k, v in labels.items() if k != "engine"}
        prefixed["model_config_model"] = MODEL_NAME
        lines += [
            "# HELP vllm:vllm_config_info Information of the LLMEngine VllmConfig",
            "# TYPE vllm:vllm_config_info gauge",
            f"vllm:vllm_config_info{{{_labels(prefixed)}}} 1.0",
        ]
    lines += [
        "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.",
        "# TYPE vllm:time_to_first_token_seconds histogram",
        f'vllm:time_to_first_token_seconds_bucket{{{model},le="0.001"}} 0.0',
        f'vllm:time_to_first_token_seconds_bucket{{{model},le="+Inf"}} 0.0',
        f"vllm:time_to_first_token_seconds_count{{{model}}} 0.0",
        f"vllm:time_to_first_token_seconds_sum{{{model}}} 0.0",
    ]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- the fake server
@dataclass
class FakeVllm:
    """What the fake answers; tests change it between calls."""

    endpoint: str = ""
    metrics: str = field(default_factory=metrics_text)
    metrics_status: int = 200
    completions_status: int = 200
    stream: bool = True
    itl_base_s: float = 0.002
    """Inter-token delay ``a + b * len(prompt)``: a = 2 ms ..."""
    itl_per_token_s: float = 2e-6
    """... b = 2 us per prompt token."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    disable_nagle_algorithm = True  # each SSE event leaves when written

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path != "/metrics":
            self._send(404, b'{"detail":"Not Found"}', "application/json")
        elif fake.metrics_status != 200:
            self._send(fake.metrics_status, b"Internal Server Error", "text/plain")
        else:
            self._send(200, fake.metrics.encode(), "text/plain; version=0.0.4; charset=utf-8")

    def do_POST(self) -> None:
        fake = self.server.fake
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with fake.lock:
            fake.requests.append(payload)
        if self.path != "/v1/completions":
            self._send(404, b'{"detail":"Not Found"}', "application/json")
            return
        if fake.completions_status != 200:
            error = {"object": "error", "message": f"The model `{payload['model']}` does not "
                     "exist.", "type": "NotFoundError", "code": fake.completions_status}
            self._send(fake.completions_status, json.dumps(error).encode(), "application/json")
            return
        if not fake.stream:
            answer = {"id": "cmpl-1", "object": "text_completion",
                      "choices": [{"index": 0, "text": " hello", "finish_reason": "length"}]}
            self._send(200, json.dumps(answer).encode(), "application/json")
            return
        delay = fake.itl_base_s + fake.itl_per_token_s * len(payload["prompt"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.end_headers()
        for i in range(int(payload["max_tokens"])):
            time.sleep(delay)
            chunk = {"id": "cmpl-1", "object": "text_completion", "created": 0,
                     "model": payload["model"],
                     "choices": [{"index": 0, "text": f" t{i}", "logprobs": None,
                                  "finish_reason": None, "stop_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeVllm


@pytest.fixture
def vllm() -> Iterator[FakeVllm]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = FakeVllm(endpoint=f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01},
                              daemon=True)
    thread.start()
    try:
        yield server.fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _geometry(name: str = "meta-llama--Meta-Llama-3.1-8B") -> AttentionGeometry:
    return resolve_geometry(json.loads((CONFIGS / f"{name}.json").read_text()))


def _info(vllm: FakeVllm, **labels: str) -> CacheConfigInfo:
    vllm.metrics = metrics_text(**labels)
    return parse_metrics(fetch_metrics(vllm.endpoint), f"{vllm.endpoint}/metrics")


# --------------------------------------------------------------------------- /metrics
def test_parse_real_label_set_without_bytes(vllm: FakeVllm) -> None:
    info = _info(vllm)
    assert (info.block_size, info.num_gpu_blocks, info.cache_dtype) == (16, 27000, "auto")
    assert info.kv_cache_memory_bytes is None and info.kv_cache_size_tokens is None
    assert info.capacity_tokens == 27000 * 16
    assert info.bytes_per_token is None
    assert info.labels["gpu_memory_utilization"] == "0.9"
    assert info.labels["engine"] == "0"

    measured = allocation(info, _geometry(), tp=1, kv_cache_dtype="auto", engine_version=None)
    assert measured.impl == "vllm"
    assert measured.dtype == "bfloat16"
    assert measured.theory_cache_bytes == measured.theory_read_bytes == LLAMA_8B_BYTES
    assert measured.measured_cache_bytes is None and measured.measured_read_bytes is None
    assert measured.details["capacity_tokens"] == 432000
    assert measured.details["num_gpu_blocks"] == 27000
    assert any("Available KV cache memory" in note and "GPU KV cache size" in note
               for note in measured.notes)
    assert measured.verdict == "ok"


def test_bytes_from_kv_cache_memory_bytes(vllm: FakeVllm) -> None:
    info = _info(vllm, kv_cache_memory_bytes=str(27000 * 16 * LLAMA_8B_BYTES))
    assert info.bytes_per_token == pytest.approx(LLAMA_8B_BYTES)
    measured = allocation(info, _geometry(), tp=1, kv_cache_dtype="auto", engine_version="0.10.1")
    assert measured.measured_cache_bytes == LLAMA_8B_BYTES
    assert measured.cache_ratio == pytest.approx(1.0)
    assert not any("Available KV cache memory" in note for note in measured.notes)


def test_kv_cache_size_tokens_wins_over_blocks(vllm: FakeVllm) -> None:
    tokens = 440_000
    info = _info(vllm, kv_cache_size_tokens=str(tokens),
                 kv_cache_memory_bytes=str(2 * tokens * LLAMA_8B_BYTES))
    assert info.kv_cache_size_tokens == tokens
    assert info.capacity_tokens == tokens
    assert info.bytes_per_token == pytest.approx(2 * LLAMA_8B_BYTES)
    measured = allocation(info, _geometry(), tp=1, kv_cache_dtype="auto", engine_version=None)
    assert measured.measured_cache_bytes == 2 * LLAMA_8B_BYTES
    assert measured.cache_ratio == pytest.approx(2.0)
    assert measured.verdict == "error"


def test_fp8_from_the_server_halves_theory(vllm: FakeVllm) -> None:
    info = _info(vllm, cache_dtype="fp8")
    measured = allocation(info, _geometry(), tp=1, kv_cache_dtype="auto", engine_version=None)
    assert measured.dtype == "fp8"
    assert measured.theory_cache_bytes == LLAMA_8B_BYTES // 2


def test_requested_dtype_wins_and_mismatch_is_noted() -> None:
    info = parse_metrics(metrics_text(cache_dtype="fp8_e5m2"), "http://x/metrics")
    measured = allocation(info, _geometry(), tp=1, kv_cache_dtype="fp8", engine_version=None)
    assert measured.theory_cache_bytes == LLAMA_8B_BYTES // 2
    assert any("fp8_e5m2" in note for note in measured.notes)
    same = allocation(parse_metrics(metrics_text(), "http://x/metrics"), _geometry(), tp=1,
                      kv_cache_dtype="fp8", engine_version=None)
    assert same.theory_cache_bytes == LLAMA_8B_BYTES // 2
    assert not same.notes[:-1]  # only the missing-bytes hint


def test_tensor_parallel_splits_heads() -> None:
    info = parse_metrics(metrics_text(), "http://x/metrics")
    measured = allocation(info, _geometry(), tp=2, kv_cache_dtype="auto", engine_version=None)
    assert measured.theory_cache_bytes == LLAMA_8B_BYTES // 2


def test_mla_note_when_capacity_comes_from_blocks() -> None:
    info = parse_metrics(metrics_text(), "http://x/metrics")
    measured = allocation(info, _geometry("deepseek-ai--DeepSeek-V2-Lite"), tp=1,
                          kv_cache_dtype="auto", engine_version=None)
    # 27 layers x (512 + 64) latent x 2 bytes
    assert measured.theory_cache_bytes == 27 * 576 * 2
    assert any("MLA" in note and "num_gpu_blocks" in note for note in measured.notes)


def test_vllm_config_info_fallback() -> None:
    text = metrics_text(info_metric="vllm:vllm_config_info", num_gpu_blocks="1000")
    info = parse_metrics(text, "http://x/metrics")
    assert (info.block_size, info.num_gpu_blocks, info.cache_dtype) == (16, 1000, "auto")


def test_missing_metric_names_the_url(vllm: FakeVllm) -> None:
    vllm.metrics = metrics_text(info_metric=None)
    url = f"{vllm.endpoint}/metrics"
    with pytest.raises(UsageError, match="vllm:cache_config_info") as err:
        parse_metrics(fetch_metrics(vllm.endpoint), url)
    assert url in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("text", ["<html><body>Not vLLM</body></html>\n",
                                  'vllm:cache_config_info{block_size="16" 1.0\n'])
def test_not_prometheus_text(text: str) -> None:
    with pytest.raises(UsageError, match=r"http://x/metrics: .*Prometheus"):
        parse_metrics(text, "http://x/metrics")


@pytest.mark.parametrize("label", ["num_gpu_blocks", "block_size", "kv_cache_memory_bytes"])
def test_malformed_label(label: str) -> None:
    with pytest.raises(UsageError, match=rf"http://x/metrics: .*{label}='lots'"):
        parse_metrics(metrics_text(**{label: "lots"}), "http://x/metrics")


def test_unreachable_endpoint() -> None:
    endpoint = f"http://127.0.0.1:{unused_port()}"
    with pytest.raises(UsageError, match="cannot reach") as err:
        fetch_metrics(endpoint, timeout=2.0)
    assert f"{endpoint}/metrics" in str(err.value)


def test_http_error_status(vllm: FakeVllm) -> None:
    vllm.metrics_status = 500
    with pytest.raises(UsageError, match="HTTP 500") as err:
        fetch_metrics(vllm.endpoint)
    assert f"{vllm.endpoint}/metrics" in str(err.value)


def test_endpoint_spellings(vllm: FakeVllm) -> None:
    host = vllm.endpoint.removeprefix("http://")
    for endpoint in (f"{vllm.endpoint}/", f"{vllm.endpoint}/v1/", host):
        assert "vllm:cache_config_info" in fetch_metrics(endpoint)


def test_report_is_per_token_per_gpu() -> None:
    measured = allocation(parse_metrics(metrics_text(), "http://x/metrics"), _geometry(), tp=1,
                          kv_cache_dtype="auto", engine_version=None)
    block = report(measured, endpoint="http://x:8000/v1", layers=32)
    assert (block.context, block.batch, block.method) == (1, 1, "metrics")
    assert block.impls == (measured,)
    assert block.device == "cuda"
    assert "http://x:8000" in block.notes[0]


def test_staging_imports_no_http_client() -> None:
    code = ("import sys, kvlint.probe.staging; "
            "print(sorted(m for m in ('httpx', 'prometheus_client', 'torch') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2])
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------- inter-token latency
CONTEXTS = (256, 1024, 2048, 4096)


def test_itl_fit_recovers_the_slope(vllm: FakeVllm) -> None:
    batch = 2
    result = measure_itl(vllm.endpoint, model=MODEL_NAME, contexts=CONTEXTS, batch=batch,
                         max_tokens=12, skip_tokens=2, timeout=10.0, vocab_size=128256)
    assert result.contexts == CONTEXTS and result.batch == batch
    assert len(result.itl_seconds) == len(CONTEXTS)
    assert result.fit.slope == pytest.approx(vllm.itl_per_token_s, rel=0.25)
    assert result.fit.r2 > 0.95
    assert result.itl_seconds[0] == pytest.approx(0.002 + 256 * 2e-6, rel=0.5)

    # The requests: one per context and batch slot, streaming, ignore_eos, no shared prefix.
    assert len(vllm.requests) == len(CONTEXTS) * batch
    prompts = [tuple(r["prompt"]) for r in vllm.requests]
    assert sorted(len(p) for p in prompts) == sorted(c for c in CONTEXTS for _ in range(batch))
    assert len({p[:16] for p in prompts}) == len(prompts)
    assert all(100 <= t < 30000 for p in prompts for t in p)
    assert all(r["stream"] is True and r["ignore_eos"] is True and r["temperature"] == 0
               and r["max_tokens"] == 12 and r["model"] == MODEL_NAME for r in vllm.requests)

    # Into bytes: beta = slope * BW / batch; pick the BW that makes the fake read the theory.
    bandwidth = LLAMA_8B_BYTES * batch / vllm.itl_per_token_s
    measured, details = itl_measurement(result, LLAMA_8B_BYTES, bandwidth)
    assert measured == pytest.approx(LLAMA_8B_BYTES, rel=0.25)
    assert details["slope_s_per_token"] == result.fit.slope
    assert details["contexts"] == list(CONTEXTS)
    assert len(details["itl_ms"]) == len(CONTEXTS)
    assert details["bandwidth_bytes_per_s"] == bandwidth

    info = parse_metrics(metrics_text(), "http://x/metrics")
    impl = allocation(info, _geometry(), tp=1, kv_cache_dtype="auto", engine_version=None,
                      itl=result, bandwidth_bytes_per_s=bandwidth)
    assert impl.measured_read_bytes == measured
    assert impl.read_ratio == pytest.approx(1.0, rel=0.25)
    assert impl.seconds == result.itl_seconds[-1]
    assert impl.details["itl"]["r2"] == result.fit.r2


def test_itl_needs_two_contexts(vllm: FakeVllm) -> None:
    with pytest.raises(UsageError, match="at least 2"):
        measure_itl(vllm.endpoint, model=MODEL_NAME, contexts=[1024])
    with pytest.raises(UsageError, match="at least 2"):
        measure_itl(vllm.endpoint, model=MODEL_NAME, contexts=[1024, 1024])
    assert vllm.requests == []


def test_itl_non_streaming_answer(vllm: FakeVllm) -> None:
    vllm.stream = False
    with pytest.raises(UsageError, match="not a stream") as err:
        measure_itl(vllm.endpoint, model=MODEL_NAME, contexts=[16, 32], max_tokens=8)
    assert f"{vllm.endpoint}/v1/completions" in str(err.value)


def test_itl_http_error(vllm: FakeVllm) -> None:
    vllm.completions_status = 404
    with pytest.raises(UsageError, match=r"HTTP 404.*does not exist"):
        measure_itl(vllm.endpoint, model="nope", contexts=[16, 32], max_tokens=8)


def test_itl_unreachable() -> None:
    endpoint = f"http://127.0.0.1:{unused_port()}"
    with pytest.raises(UsageError, match="cannot reach") as err:
        measure_itl(endpoint, model=MODEL_NAME, contexts=[16, 32], max_tokens=8, timeout=2.0)
    assert f"{endpoint}/v1/completions" in str(err.value)


def test_itl_too_few_tokens(vllm: FakeVllm) -> None:
    with pytest.raises(UsageError, match="max_tokens"):
        measure_itl(vllm.endpoint, model=MODEL_NAME, contexts=[16, 32], max_tokens=5,
                    skip_tokens=4)


def test_itl_measurement_notes_a_noisy_fit() -> None:
    noisy = ItlFit(contexts=(1024, 2048), itl_seconds=(0.010, 0.012),
                   fit=LinearFit(slope=2e-6, intercept=0.008, r2=0.9, points=2), batch=1)
    measured, details = itl_measurement(noisy, LLAMA_8B_BYTES, 6.5536e10)
    assert measured == LLAMA_8B_BYTES
    assert "r2" in details["note"]
    with pytest.raises(UsageError, match="bandwidth"):
        itl_measurement(noisy, LLAMA_8B_BYTES, 0.0)
    single = ItlFit(contexts=(1024,), itl_seconds=(0.01,),
                    fit=LinearFit(slope=0.0, intercept=0.01, r2=1.0, points=1), batch=1)
    with pytest.raises(UsageError, match="at least 2"):
        itl_measurement(single, LLAMA_8B_BYTES, 6.5536e10)
