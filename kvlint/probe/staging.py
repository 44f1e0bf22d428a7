"""The staging path of ``kvlint probe``: ask a running vLLM what it allocated (pure HTTP).

Two measurements, neither needing torch or a GPU here:

* **Allocation** (``method="metrics"``): vLLM's Prometheus ``/metrics`` carries the info gauge
  ``vllm:cache_config_info`` whose labels are its ``CacheConfig`` (``block_size``,
  ``num_gpu_blocks``, ``cache_dtype``...). With the KV pool's bytes (``kv_cache_memory_bytes``)
  and its size in tokens (``kv_cache_size_tokens``, else ``num_gpu_blocks * block_size``) that
  gives the bytes vLLM allocated per token per GPU, compared with kvlint's theory.
* **Inter-token latency** (optional): a decode step reads the whole KV history, so at batch
  ``B`` the ITL grows with the context ``L`` as ``t(L) = t0 + s * L`` where
  ``s = B * beta / BW``; the fitted slope and the GPU's memory bandwidth give the effective
  bytes read per token per GPU, ``beta = s * BW / B``.

``httpx`` and ``prometheus_client`` are imported inside the functions that use them, so that
``import kvlint.cli`` stays light.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kvlint.engines import behaviour as engine_behaviour
from kvlint.errors import UsageError
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.kv import ParallelLayout
from kvlint.model.serving import ServingPlan, analyze
from kvlint.probe.result import ImplMeasurement, ProbeReport
from kvlint.probe.slope import LinearFit, effective_bytes_per_token
from kvlint.probe.slope import fit as fit_line

if TYPE_CHECKING:
    import httpx

CACHE_CONFIG_METRIC = "vllm:cache_config_info"
"""The info gauge (value 1) whose labels are vLLM's ``CacheConfig``."""
VLLM_CONFIG_METRIC = "vllm:vllm_config_info"
"""Newer vLLMs also export the whole ``VllmConfig``, cache fields prefixed ``cache_config_``."""
_VLLM_CONFIG_PREFIX = "cache_config_"
_UNSET = frozenset({"", "none", "null", "nan"})

MIN_TOKEN_ID = 100
"""Random prompt tokens avoid the low ids (special and control tokens)."""
MAX_TOKEN_ID = 30000
"""... and stay below every vocabulary kvlint expects to meet."""
GOOD_R2 = 0.98
"""Below this the ITL fit is reported as noisy."""

_BYTES_HINT = (
    "vLLM's /metrics gives no KV cache bytes (kv_cache_memory_bytes unset): its startup log "
    "lines 'Available KV cache memory: X GiB' and 'GPU KV cache size: N tokens' do "
    "(X GiB / N tokens is the bytes per token per GPU)"
)
_MLA_HINT = (
    "for MLA and hybrid models num_gpu_blocks * block_size may not reconstruct the capacity "
    "(block_size is the smallest block of the KV cache groups)"
)


# ------------------------------------------------------------------------------ allocation
@dataclass(frozen=True)
class CacheConfigInfo:
    """The labels of ``vllm:cache_config_info`` that size the KV cache (``None``: unset)."""

    block_size: int | None
    num_gpu_blocks: int | None
    cache_dtype: str | None
    kv_cache_memory_bytes: int | None
    kv_cache_size_tokens: int | None
    labels: Mapping[str, str] = field(default_factory=dict)
    """Every label, as vLLM wrote it."""

    @property
    def capacity_tokens(self) -> int | None:
        """Tokens the KV pool holds per GPU: ``kv_cache_size_tokens``, else blocks x block."""
        if self.kv_cache_size_tokens is not None:
            return self.kv_cache_size_tokens
        if self.num_gpu_blocks is not None and self.block_size is not None:
            return self.num_gpu_blocks * self.block_size
        return None

    @property
    def bytes_per_token(self) -> float | None:
        """KV pool bytes per token per GPU, when vLLM exposes both bytes and capacity."""
        capacity = self.capacity_tokens
        if self.kv_cache_memory_bytes is None or not capacity:
            return None
        return self.kv_cache_memory_bytes / capacity


def _base_url(endpoint: str) -> str:
    """``host:8000/v1/`` -> ``http://host:8000``: the server root both paths hang off."""
    base = endpoint.strip().rstrip("/")
    if "://" not in base:
        base = f"http://{base}"
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base


def _transport_error(url: str, err: Exception, timeout: float, expected: str) -> UsageError:
    import httpx

    if isinstance(err, httpx.TimeoutException):
        return UsageError(f"{url}: no answer within {timeout:g} s; expected {expected}")
    detail = str(err) or type(err).__name__
    return UsageError(f"{url}: cannot reach it ({detail}); expected {expected}")


def fetch_metrics(endpoint: str, *, timeout: float = 10.0) -> str:
    """GET ``{endpoint}/metrics``: the Prometheus text of a running vLLM."""
    import httpx

    url = f"{_base_url(endpoint)}/metrics"
    expected = "a running vLLM serving Prometheus /metrics"
    try:
        response = httpx.get(url, timeout=timeout, follow_redirects=True)
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        raise _transport_error(url, err, timeout, expected) from None
    if response.status_code != 200:
        raise UsageError(f"{url}: HTTP {response.status_code} {response.reason_phrase}; "
                         f"expected {expected}")
    return response.text


def _int_label(labels: Mapping[str, str], name: str, url: str) -> int | None:
    raw = labels.get(name)
    if raw is None or raw.strip().lower() in _UNSET:
        return None
    text = raw.strip()
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not number.is_integer():
            raise UsageError(f"{url}: {CACHE_CONFIG_METRIC} label {name}={raw!r}; expected a "
                             "whole number or 'None'") from None
        value = int(number)
    if value < 0:
        raise UsageError(f"{url}: {CACHE_CONFIG_METRIC} label {name}={raw!r}; expected a "
                         "non-negative number or 'None'")
    return value


def _cache_config_labels(text: str, url: str) -> dict[str, str]:
    from prometheus_client.parser import text_string_to_metric_families

    fallback: dict[str, str] | None = None
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == CACHE_CONFIG_METRIC:
                    return dict(sample.labels)
                if sample.name == VLLM_CONFIG_METRIC and fallback is None:
                    fallback = {
                        key[len(_VLLM_CONFIG_PREFIX):]: value
                        for key, value in sample.labels.items()
                        if key.startswith(_VLLM_CONFIG_PREFIX)
                    }
    except (ValueError, IndexError, KeyError) as err:
        raise UsageError(f"{url}: not Prometheus text exposition ({err}); expected vLLM's "
                         "/metrics") from None
    if fallback:
        return fallback
    raise UsageError(f"{url}: no {CACHE_CONFIG_METRIC} metric; expected the /metrics of a "
                     "running vLLM (is this a vLLM OpenAI server?)")


def parse_metrics(text: str, url: str) -> CacheConfigInfo:
    """The KV cache figures of ``vllm:cache_config_info`` in Prometheus ``text`` from ``url``.

    Labels are strings: ``"16"``, or ``"None"`` when unset (``None`` here). Raises
    :class:`UsageError` when the metric is missing or a size label is not a number.
    """
    labels = _cache_config_labels(text, url)
    dtype = labels.get("cache_dtype")
    return CacheConfigInfo(
        block_size=_int_label(labels, "block_size", url),
        num_gpu_blocks=_int_label(labels, "num_gpu_blocks", url),
        cache_dtype=None if dtype is None or dtype.strip().lower() in _UNSET else dtype.strip(),
        kv_cache_memory_bytes=_int_label(labels, "kv_cache_memory_bytes", url),
        kv_cache_size_tokens=_int_label(labels, "kv_cache_size_tokens", url),
        labels=labels,
    )


def _served_dtype(info: CacheConfigInfo, requested: str) -> tuple[str, list[str]]:
    """The KV dtype the theory uses: vLLM's own when the caller left it ``auto``."""
    served = info.cache_dtype
    if requested.strip().lower() == "auto":
        return (served or "auto"), []
    if served and served.lower() not in ("auto", requested.strip().lower()):
        return requested, [f"vLLM reports cache_dtype={served}, but the theory uses the "
                           f"requested {requested}"]
    return requested, []


def allocation(
    info: CacheConfigInfo,
    geometry: AttentionGeometry,
    *,
    tp: int,
    kv_cache_dtype: str,
    engine_version: str | None,
    itl: ItlFit | None = None,
    bandwidth_bytes_per_s: float | None = None,
) -> ImplMeasurement:
    """vLLM's KV bytes per token per GPU (allocated, and read when ``itl`` is given) against
    kvlint's theory for ``geometry`` at tensor parallelism ``tp``.

    ``kv_cache_dtype="auto"`` takes the ``cache_dtype`` vLLM reports. An ``itl`` fit needs the
    GPU's memory bandwidth to turn its slope into bytes.
    """
    dtype_name, notes = _served_dtype(info, kv_cache_dtype)
    try:
        plan = ServingPlan(
            layout=ParallelLayout(tp=tp),
            kv_cache_dtype=dtype_name,
            engine="vllm",
            engine_version=engine_version,
            behaviour=engine_behaviour("vllm", engine_version, geometry.model_type,
                                       is_mla=geometry.is_mla),
        )
        analysis = analyze(geometry, plan)
    except ValueError as err:
        raise UsageError(f"vLLM probe: {err}") from None
    theory = analysis.footprint.bytes_per_token_per_gpu
    if theory is None:
        raise UsageError(f"vLLM probe: {analysis.plan.behaviour.label} cannot shard this "
                         f"model's KV heads over tp={tp}")

    bytes_per_token = info.bytes_per_token
    measured_cache = None if bytes_per_token is None else round(bytes_per_token)
    details: dict[str, Any] = {
        "block_size": info.block_size,
        "num_gpu_blocks": info.num_gpu_blocks,
        "capacity_tokens": info.capacity_tokens,
        "kv_cache_memory_bytes": info.kv_cache_memory_bytes,
        "kv_cache_size_tokens": info.kv_cache_size_tokens,
        "cache_dtype": info.cache_dtype,
        "bytes_per_token": bytes_per_token,
        "engine": analysis.plan.behaviour.label,
        "tp": tp,
    }
    if info.kv_cache_memory_bytes is None:
        notes.append(_BYTES_HINT)
    elif info.capacity_tokens is None:
        notes.append("vLLM's /metrics gives the KV cache bytes but not its capacity "
                     "(num_gpu_blocks, block_size or kv_cache_size_tokens)")
    if info.kv_cache_size_tokens is None and (geometry.is_mla or analysis.cached.is_mla):
        notes.append(_MLA_HINT)

    measured_read: int | None = None
    seconds: float | None = None
    if itl is not None:
        if bandwidth_bytes_per_s is None:
            raise UsageError("vLLM probe: an ITL fit needs the GPU's memory bandwidth "
                             "(bytes/s) to turn its slope into bytes")
        measured_read, details["itl"] = itl_measurement(itl, theory, bandwidth_bytes_per_s)
        seconds = itl.itl_seconds[itl.contexts.index(max(itl.contexts))]
        if "note" in details["itl"]:
            notes.append(str(details["itl"]["note"]))

    return ImplMeasurement(
        impl="vllm",
        dtype=analysis.dtype.name,
        theory_read_bytes=theory,
        measured_read_bytes=measured_read,
        theory_cache_bytes=theory,
        measured_cache_bytes=measured_cache,
        seconds=seconds,
        details=details,
        notes=tuple(notes),
    )


def report(measurement: ImplMeasurement, *, endpoint: str, layers: int) -> ProbeReport:
    """The ``probe`` block for one vLLM: figures are per token per GPU (context 1, batch 1)."""
    return ProbeReport(
        device="cuda",
        method="metrics",
        context=1,
        batch=1,
        layers=layers,
        impls=(measurement,),
        built="nothing built: read from the running server",
        notes=(f"vLLM at {_base_url(endpoint)}; bytes per token per GPU",),
    )


# ------------------------------------------------------------------------ inter-token latency
@dataclass(frozen=True)
class ItlFit:
    """Median inter-token latency at each context and the line ``t(L) = t0 + s * L``."""

    contexts: tuple[int, ...]
    itl_seconds: tuple[float, ...]
    """Per context: the median over requests of each request's median inter-token gap."""
    fit: LinearFit
    batch: int


def _prompt(rng: random.Random, length: int, high: int) -> list[int]:
    return [rng.randrange(MIN_TOKEN_ID, high) for _ in range(length)]


def _stream_stamps(client: httpx.Client, url: str, payload: Mapping[str, Any],
                   timeout: float) -> list[float]:
    """POST one streaming completion; the arrival time of each chunk carrying text."""
    import httpx

    expected = "a vLLM OpenAI-compatible server streaming /v1/completions"
    stamps: list[float] = []
    try:
        with client.stream("POST", url, json=payload) as response:
            if response.status_code != 200:
                body = response.read().decode("utf-8", "replace").strip().replace("\n", " ")
                raise UsageError(f"{url}: HTTP {response.status_code} "
                                 f"{response.reason_phrase} ({body[:200]}); expected {expected}")
            kind = response.headers.get("content-type", "")
            if "text/event-stream" not in kind:
                raise UsageError(f"{url}: answered {kind or 'no content type'}, not a stream; "
                                 "expected text/event-stream (stream=true)")
            for line in response.iter_lines():
                now = time.perf_counter()
                if not line.startswith("data:"):
                    continue
                data = line[len("data:"):].strip()
                if data == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except ValueError:
                    raise UsageError(f"{url}: a stream event is not JSON ({data[:80]!r}); "
                                     f"expected {expected}") from None
                if not isinstance(chunk, dict):
                    continue
                if "error" in chunk:
                    raise UsageError(f"{url}: the stream reported an error "
                                     f"({str(chunk['error'])[:200]}); expected {expected}")
                choices = chunk.get("choices") or []
                if any(isinstance(c, dict) and c.get("text") for c in choices):
                    stamps.append(now)
    except (httpx.HTTPError, httpx.InvalidURL) as err:
        raise _transport_error(url, err, timeout, expected) from None
    return stamps


def _median_gap(stamps: Sequence[float], skip: int) -> float | None:
    kept = stamps[skip:]
    if len(kept) < 2:
        return None
    return statistics.median(b - a for a, b in itertools.pairwise(kept))


def measure_itl(
    endpoint: str,
    *,
    model: str,
    contexts: Sequence[int],
    batch: int = 1,
    max_tokens: int = 32,
    skip_tokens: int = 4,
    timeout: float = 120.0,
    vocab_size: int | None = None,
) -> ItlFit:
    """Time decode at each context with ``batch`` concurrent streaming requests and fit the
    inter-token latency against the context length.

    Prompts are random token ids (seeded by the context, distinct per request) so that no
    request hits the prefix cache of another; ``ignore_eos`` makes every request decode
    ``max_tokens`` tokens. The first ``skip_tokens`` tokens are dropped (prefill, scheduling).
    At most ``len(contexts) * batch`` requests are sent, ``batch`` at a time.
    """
    url = f"{_base_url(endpoint)}/v1/completions"
    if len(set(contexts)) < 2:
        raise UsageError(f"{url}: an ITL fit needs at least 2 distinct contexts, "
                         f"got {list(contexts)}")
    if any(length < 1 for length in contexts):
        raise UsageError(f"{url}: contexts must be positive token counts, got {list(contexts)}")
    if batch < 1:
        raise UsageError(f"{url}: batch must be at least 1, got {batch}")
    if skip_tokens < 0 or max_tokens < skip_tokens + 2:
        raise UsageError(f"{url}: max_tokens ({max_tokens}) must exceed skip_tokens "
                         f"({skip_tokens}) by at least 2 to time a gap")
    high = min(vocab_size or MAX_TOKEN_ID, MAX_TOKEN_ID)
    if high <= MIN_TOKEN_ID + 1:
        raise UsageError(f"{url}: vocab_size {vocab_size} leaves no token ids to sample "
                         f"(expected more than {MIN_TOKEN_ID + 1})")

    import httpx

    itls: list[float] = []
    with httpx.Client(timeout=timeout,
                      limits=httpx.Limits(max_connections=batch,
                                          max_keepalive_connections=batch)) as client, \
            ThreadPoolExecutor(max_workers=batch) as pool:
        for length in contexts:
            rng = random.Random(length)
            payloads = [
                {"model": model, "prompt": _prompt(rng, length, high), "max_tokens": max_tokens,
                 "stream": True, "ignore_eos": True, "temperature": 0}
                for _ in range(batch)
            ]
            futures = [pool.submit(_stream_stamps, client, url, p, timeout) for p in payloads]
            gaps: list[float] = []
            for future in futures:
                stamps = future.result()
                gap = _median_gap(stamps, skip_tokens)
                if gap is None:
                    raise UsageError(
                        f"{url}: only {len(stamps)} tokens streamed at context {length}; "
                        f"expected {max_tokens} (does the server honour ignore_eos?)")
                gaps.append(gap)
            itls.append(statistics.median(gaps))
    line = fit_line([float(length) for length in contexts], itls)
    return ItlFit(contexts=tuple(contexts), itl_seconds=tuple(itls), fit=line, batch=batch)


def itl_measurement(fit: ItlFit, theory_bytes_per_token_per_gpu: int,
                    bandwidth_bytes_per_s: float) -> tuple[int, dict[str, Any]]:
    """Effective KV bytes read per token per GPU, ``slope * bandwidth / batch``, and the
    figures behind it."""
    if len(set(fit.contexts)) < 2:
        raise UsageError(f"an ITL fit needs at least 2 distinct contexts, "
                         f"got {list(fit.contexts)}")
    if not bandwidth_bytes_per_s > 0:
        raise UsageError(f"the GPU memory bandwidth must be positive, got "
                         f"{bandwidth_bytes_per_s} bytes/s")
    line = fit.fit
    beta = effective_bytes_per_token(line.slope, bandwidth_bytes_per_s, fit.batch)
    measured = max(0, round(beta))
    details: dict[str, Any] = {
        "slope_s_per_token": line.slope,
        "intercept_s": line.intercept,
        "r2": line.r2,
        "points": line.points,
        "contexts": list(fit.contexts),
        "itl_ms": [seconds * 1e3 for seconds in fit.itl_seconds],
        "batch": fit.batch,
        "bandwidth_bytes_per_s": bandwidth_bytes_per_s,
        "effective_bytes_per_token": beta,
        "theory_bytes_per_token_per_gpu": theory_bytes_per_token_per_gpu,
    }
    problems = []
    if line.slope <= 0:
        problems.append("the ITL does not grow with the context (slope <= 0): decode is not "
                        "bound by KV reads at these contexts, or the timing is noise")
    if line.r2 < GOOD_R2:
        problems.append(f"the ITL fit is noisy (r2 {line.r2:.3f} < {GOOD_R2}): use longer "
                        "contexts, more tokens or a quiet server")
    if problems:
        details["note"] = "; ".join(problems)
    return measured, details
