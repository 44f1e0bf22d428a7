"""Rules about what the chosen engine and version do with the model's KV cache (KV3xx)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.hookspecs import hookimpl
from kvlint.model import kv
from kvlint.model.geometry import AttentionGeometry
from kvlint.model.serving import EngineBehaviour
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_bytes, fmt_int, fmt_tokens


def _unverified(ctx: RuleContext, fact: str) -> str:
    return (" (this engine fact is unverified in kvlint's table)"
            if fact in ctx.plan.behaviour.unverified else "")


def _newest(ctx: RuleContext, fixed: Callable[[EngineBehaviour], bool]) -> Suggestion | None:
    """The newest version of the plan's engine kvlint knows, when it does not do what the
    finding reports (``fixed`` says so of its behaviour)."""
    from kvlint.engines import behaviour, load_engines  # the engine table, only when run

    b, a = ctx.plan.behaviour, ctx.analysis
    if a is None:
        return None
    newest = str(load_engines()[b.engine].latest)
    if newest == b.version:
        return None
    if not fixed(behaviour(b.engine, newest, a.geometry.model_type, is_mla=a.geometry.is_mla,
                           architecture=a.geometry.architecture)):
        return None
    return Suggestion(f"use {b.display} {newest}", {"engine": b.engine, "engine_version": newest})


class MlaWithoutLatentCache(Rule):
    """## What it does
    Flags an MLA model (DeepSeek-V2/V3, Kimi-K2, MiniCPM3) on an engine or version that
    caches the up-projected per-head K and V instead of the compressed latent.

    ## Why is this bad?
    MLA exists to shrink the KV cache: DeepSeek-V2 needs 576 elements per token per layer as
    a latent, but 128 heads x (192 + 128) = 40,960 as per-head K/V: 71x more memory (more
    when the engine pads V to the K head dim), so a fraction of the expected sequences fit.

    ## Example
    ```console
    $ kvlint check deepseek-ai/DeepSeek-V2 --tp 8 --engine vllm --engine-version 0.6.3
    KV301 error mla-without-latent-cache: vLLM 0.6.3 caches DeepSeek-V2's reconstructed
    per-head K/V: 4,915,200 B/token (614,400 per GPU at tp=8) instead of the 69,120 B latent
    ```

    ## Use instead
    An engine version that caches the latent (vLLM >= 0.7.1 or SGLang for DeepSeek-V2/V3).

    ## References
    - vLLM PR #12601 (MLA latent cache, v0.7.1); kvlint's `engines.toml` lists the source of
      every engine fact.
    """

    code = "KV301"
    name = "mla-without-latent-cache"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        if a is None or not a.geometry.is_mla or a.cached.is_mla:
            return
        b = ctx.plan.behaviour
        full = a.footprint.bytes_per_token
        latent = a.latent_bytes_per_token
        per_gpu = a.footprint.bytes_per_token_per_gpu
        where = (f" ({fmt_int(per_gpu)} per GPU at tp={ctx.plan.layout.attention_tp})"
                 if per_gpu is not None and ctx.plan.layout.tp > 1 else "")
        pad = b.mla_cache == "full-padded-v"
        if b.mla_latent_versions:
            fix = f"latent MLA caching needs {b.mla_latent_versions}"
        elif b.mla_alternatives:
            fix = (f"{b.display} never caches this model's latent; "
                   f"{' and '.join(b.mla_alternatives)} do")
        else:
            fix = f"{b.display} never caches this model's latent"
        pad256 = b.mla_cache == "full-padded-256"
        exact = pad or pad256 or b.mla_cache == "generic"
        if b.mla_cache == "generic":
            ref = a.cached.reference_layer
            what = (f"per-head K and V {ref.k_head_dim} wide (its generic config builder: the "
                    "config's head_dim or hidden_size / num_attention_heads)"
                    if ref is not None else "per-head K and V of its generic config builder")
        else:
            what = ("reconstructed per-head K/V"
                    + (" with V padded to the K head dim" if pad else
                       " with K and V each padded to 256 per head" if pad256 else ""))
        yield self.finding(
            f"{b.label} caches {ctx.target}'s {what}: "
            f"{fmt_int(full)} B/token{where} instead of the {fmt_int(latent)} B latent, "
            f"{full / latent:.0f}x{'' if exact else ' (more if the engine pads V)'}; "
            f"{fix}{_unverified(ctx, 'mla')}.",
            suggestion=_newest(ctx, lambda nb: nb.mla_cache == "latent"),
            engine=b.engine,
            engine_version=b.version,
            cached_bytes_per_token=full,
            latent_bytes_per_token=latent,
            bytes_per_token_per_gpu=per_gpu,
            ratio=full / latent,
        )


class Fp8KvCacheMla(Rule):
    """## What it does
    Flags an fp8 KV cache for an MLA model on an engine version or backend without fp8 MLA
    kernels.

    ## Why is this bad?
    The engine either fails at start-up (vLLM 0.8.5's FlashMLA backend raised
    `NotImplementedError` for an fp8 KV cache) or silently picks a slower backend; the
    memory saving the flag promised may not materialise.

    ## Example
    ```console
    $ kvlint check deepseek-ai/DeepSeek-V3 --engine vllm --engine-version 0.8.5 --kv-cache-dtype fp8
    ```

    ## Use instead
    An engine version with fp8 MLA support, or `--kv-cache-dtype auto`.
    """

    code = "KV302"
    name = "fp8-kv-cache-mla"
    severity = Severity.WARNING

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        b = ctx.plan.behaviour
        if a is None or not a.cached.is_mla or not a.dtype.name.startswith("fp8"):
            return
        if b.fp8_mla is not False:
            return
        auto = kv.bytes_per_token(a.cached, kv.resolve_kv_dtype("auto", a.cached))
        fix = f"use {b.fp8_mla_versions}" if b.fp8_mla_versions else \
            f"{b.display} has no fp8 MLA cache"
        yield self.finding(
            f"{b.label} has no fp8 KV cache for MLA models: --kv-cache-dtype "
            f"{a.dtype.name} ({fmt_int(a.footprint.bytes_per_token)} B/token) fails or falls "
            f"back; {fix}, or --kv-cache-dtype auto ({fmt_int(auto)} B/token)"
            f"{_unverified(ctx, 'fp8_mla')}.",
            suggestion=Suggestion("use --kv-cache-dtype auto", {"kv_cache_dtype": "auto"}),
            engine=b.engine,
            engine_version=b.version,
            kv_cache_dtype=a.dtype.name,
        )


class SlidingWindowFullAllocation(Rule):
    """## What it does
    Notes a model with sliding-window or chunked attention layers (or caches kept for a
    window of tokens) on an engine version that allocates full-length KV blocks for them
    too.

    ## Why is this bad?
    A sliding layer only ever reads its last `window` tokens; an engine without windowed
    allocation keeps every token anyway. For gpt-oss (window 128 on half the layers) that
    is nearly twice the KV memory at long contexts.

    ## Example
    ```console
    $ kvlint check openai/gpt-oss-20b --engine tgi --engine-version 3.3.4 --context 131072
    ```

    ## Use instead
    An engine version with windowed allocation (vLLM's hybrid KV cache manager, SGLang's
    hybrid SWA pools, llama.cpp's iSWA cache).
    """

    code = "KV303"
    name = "sliding-window-full-allocation"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        a = ctx.analysis
        b = ctx.plan.behaviour
        if a is None or b.windowed_sliding_cache:
            return
        context = ctx.plan.max_model_len or ctx.plan.context  # the plan's sequence length
        windowed = kv.bytes_per_sequence(a.cached, a.dtype, context, windowed=True)
        full = kv.bytes_per_sequence(a.cached, a.dtype, context, windowed=False)
        if full == windowed:
            return  # no windowed layer, or the context fits inside every window
        fix = f"use {b.windowed_versions}" if b.windowed_versions else \
            "use an engine with windowed allocation"
        yield self.finding(
            f"{b.label} allocates full-length KV for {_windowed(a.cached)}: one "
            f"{fmt_tokens(context)}-token sequence takes {fmt_bytes(full)} instead of "
            f"{fmt_bytes(windowed)} (+{fmt_bytes(full - windowed)}); "
            f"{fix}{_unverified(ctx, 'sliding_window')}.",
            suggestion=_newest(ctx, lambda nb: nb.windowed_sliding_cache),
            engine=b.engine,
            context=context,
            engine_version=b.version,
            bytes_per_sequence=full,
            windowed_bytes_per_sequence=windowed,
        )


def _windowed(g: AttentionGeometry) -> str:
    """``the 24 windowed layers (window 4,096)``, ``the 40 windowed layers (windows 512 and
    1,024)``, ``the windowed compressed caches (window 128)``: what holds a window."""
    windows = sorted({layer.window for layer in g.kv_layers
                      if layer.is_windowed and layer.window is not None})
    extra = sorted({cache.window for layer in g.kv_layers for cache in layer.extra_caches
                    if cache.window is not None})
    names = sorted({cache.name for layer in g.kv_layers for cache in layer.extra_caches
                    if cache.window is not None})
    parts = []
    if windows:
        count = sum(1 for layer in g.kv_layers if layer.is_windowed)
        parts.append(f"the {count} windowed layers ({_windows(windows)})")
    if extra:
        parts.append(f"the windowed {' and '.join(names)} cache{'s' if len(names) > 1 else ''} "
                     f"({_windows(extra)})")
    return " and ".join(parts)


def _windows(windows: list[int]) -> str:
    if len(windows) == 1:
        return f"window {fmt_int(windows[0])}"
    return f"windows {', '.join(map(fmt_int, windows[:-1]))} and {fmt_int(windows[-1])}"


class EngineVersionUnpinned(Rule):
    """## What it does
    Notes an engine named without a version (or as `latest`/`nightly`), or whose version
    nothing in the manifest dates (a vendor's tag, a custom image): that one is judged by
    every version kvlint knows, and only the findings all of them give are reported.

    ## Why is this bad?
    MLA caches, fp8 MLA kernels and windowed allocation all changed between releases; kvlint
    assumed the newest version it knows, and the image you deploy may be older or newer.

    ## Example
    ```console
    $ kvlint check deepseek-ai/DeepSeek-V3 --engine vllm
    ```

    ## Use instead
    `--engine-version 0.11.0` (or pin the image tag in the manifest).
    """

    code = "KV304"
    name = "engine-version-unpinned"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        b = ctx.plan.behaviour
        if ctx.analysis is None or not b.named or b.pinned:
            return
        if b.unknown:
            shown = list(b.judged_by)
            if len(shown) > 1 and shown[0] == "0":
                shown[0] = f"one before {shown[1]}"
            judged = ", ".join(shown) or b.version
            yield self.finding(
                f"the {b.display} version is unknown (nothing in the manifest dates it): kvlint "
                f"judged the deployment by every {b.display} version it knows ({judged}) and "
                "reports only what holds for all of them; pin the version (--engine-version, "
                "or an image tag that names it) for the checks of the one you deploy.",
                engine=b.engine, judged_by=list(b.judged_by))
            return
        yield self.finding(
            f"no {b.display} version given: kvlint assumed the newest it knows ({b.version}); "
            f"pin the version (--engine-version, or the image tag) so the engine checks apply "
            f"to what you deploy.",
            suggestion=Suggestion(f"pin {b.display} {b.version}",
                                  {"engine": b.engine, "engine_version": b.version}),
            engine=b.engine,
            assumed_version=b.version,
        )


class EngineVersionUnknown(Rule):
    """## What it does
    Notes an engine version newer than any kvlint knows (`--engine-version 99.0`, an image
    tag from after this kvlint release).

    ## Why is this bad?
    kvlint's engine facts (KV-head sharding, MLA latent caching, windowed allocation,
    architectures, options) were read from the versions it knows. A newer version is judged
    as the newest of them, which may no longer be what that version does.

    ## Example
    ```console
    $ kvlint check meta-llama/Llama-3.1-8B --engine vllm --engine-version 99.0 --format concise
    meta-llama/Llama-3.1-8B:1:1: KV306 vLLM 99.0 is newer than any version kvlint knows (the
    newest is 0.34.0): its engine checks are vLLM 0.34.0's, which may not be what 99.0 does; pin
    a version kvlint knows or upgrade kvlint.
    ```

    ## Use instead
    Pin a version kvlint knows, or upgrade kvlint to one that knows yours.
    """

    code = "KV306"
    name = "engine-version-unknown"
    severity = Severity.INFO

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        from packaging.version import InvalidVersion, Version

        from kvlint.engines import load_engines  # the engine table, only when run

        b = ctx.plan.behaviour
        if not b.named or not b.pinned or b.version is None:
            return
        newest = load_engines()[b.engine].latest
        try:
            if Version(b.version) <= newest:
                return
        except InvalidVersion:
            return
        yield self.finding(
            f"{b.display} {b.version} is newer than any version kvlint knows (the newest is "
            f"{newest}): its engine checks are {b.display} {newest}'s, which may not be what "
            f"{b.version} does; pin a version kvlint knows or upgrade kvlint.",
            suggestion=Suggestion(f"use {b.display} {newest}",
                                  {"engine": b.engine, "engine_version": str(newest)}),
            engine=b.engine,
            engine_version=b.version,
            newest_known_version=str(newest),
        )


class KvCacheDtypeRefused(Rule):
    """## What it does
    Flags a KV cache dtype the engine version (and, for LMDeploy, the backend that serves
    the model: TurboMind where it serves the architecture, else the PyTorch engine) refuses
    at start: LMDeploy before 0.14.0 knows only `--quant-policy` 0, 4 and 8, so no fp8 KV
    cache at all; from 0.14.0 TurboMind asserts against fp8 while the PyTorch engine takes it.

    ## Why is this bad?
    The engine stops at start ("invalid quant_policy"), and no KV figure kvlint computes for
    the dtype is ever reached.

    ## Example
    ```console
    $ kvlint check Qwen/Qwen3-8B --engine lmdeploy --engine-version 0.7.3 --kv-cache-dtype fp8
    ```

    ## Use instead
    `--kv-cache-dtype auto`, `--quant-policy 8` (int8) where the release has it, a release
    that takes fp8 (LMDeploy >= 0.14.0 with `--backend pytorch`).
    """

    code = "KV307"
    name = "kv-cache-dtype-refused"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        from kvlint.engines import default_backend, refused_kv_cache_dtype

        a, b = ctx.analysis, ctx.plan.behaviour
        if a is None or not b.named or ctx.plan.kv_cache_dtype in ("auto", None):
            return
        if any(p.kind == "value" and p.option in ("--kv-cache-dtype", "--quant-policy")
               for p in ctx.engine_problems):
            return  # the option's value is KV702's: one finding for one mistake
        given = ctx.plan.engine_start.backend if ctx.plan.engine_start else None
        backend = given or default_backend(b.engine, b.version, a.geometry.architecture)
        try:
            fact = refused_kv_cache_dtype(b.engine, b.version, ctx.plan.kv_cache_dtype,
                                          backend=backend)
        except ValueError:
            return
        if fact is None:
            return
        on = f" on its {backend} backend" if backend else ""
        where = fact.source.split(":", 1)[0]  # the file@version (data keeps it all)
        yield self.finding(
            f"{b.label}{on} refuses a {ctx.plan.kv_cache_dtype} KV cache at start "
            f"({where}); use the model's own dtype (--kv-cache-dtype auto, LMDeploy "
            "--quant-policy 0)"
            + (" or --backend pytorch" if backend == "turbomind" and b.engine == "lmdeploy"
               and "pytorch" in fact.note else "") + ".",
            suggestion=Suggestion("use --kv-cache-dtype auto", {"kv_cache_dtype": "auto"}),
            engine=b.engine, engine_version=b.version, backend=backend,
            kv_cache_dtype=ctx.plan.kv_cache_dtype, source=fact.source,
        )


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [MlaWithoutLatentCache, Fp8KvCacheMla, SlidingWindowFullAllocation,
            EngineVersionUnpinned, EngineVersionUnknown, KvCacheDtypeRefused]
