"""Rules about lengths the engine refuses at start (KV703)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from kvlint.diagnostics import Finding, Severity, Suggestion
from kvlint.hookspecs import hookimpl
from kvlint.rules.base import Rule, RuleContext
from kvlint.units import fmt_int


def _length(value: int) -> str:
    """``131,072``; a number too long to read as ``a 400-digit number``."""
    digits = len(str(value)) if value < 10**4000 else None
    if digits is not None and digits <= 18:
        return fmt_int(value)
    return f"(a {digits}-digit number)" if digits else "(a number of over 4,000 digits)"


class MaxModelLenExceedsModelLimit(Rule):
    """## What it does
    Flags a `max_model_len` (vLLM `--max-model-len`, SGLang `--context-length`) above the
    model's own maximum sequence length, derived from `config.json` the way that engine and
    version derive it: the smallest of `max_position_embeddings` and its aliases
    (`n_positions`, `max_seq_len`, `seq_length`, `model_max_length`...), times the RoPE
    scaling factor the engine applies (vLLM ≥ 0.30 leaves YaRN, Llama 3 and LongRoPE
    lengths unscaled; older versions scale YaRN's `original_max_position_embeddings`; SGLang
    takes the first key present). Unless the manifest sets the engine's override
    (`VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`, `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1` in
    the container's environment), the engine refuses to start.

    `kvlint check --max-model-len` reads the override from kvlint's own environment, as
    the engine would (`VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 kvlint check ...`). TGI (which caps
    only its default `--max-total-tokens`) and llama.cpp (which warns) start anyway and are
    not flagged; TensorRT-LLM, LMDeploy and MLC-LLM are not checked (not verified). The
    engine facts and their sources are in `kvlint/engines/engines.toml` (`context_limit`).

    ## Why is this bad?
    vLLM raises `ValueError: User-specified max_model_len (...) is greater than the derived
    max_model_len (...)` while building its config, and SGLang the same for
    `--context-length`: the pod crash-loops. With the override the server starts, but
    positions past the trained length give garbage (RoPE) or out-of-bounds errors
    (absolute positions), so the override should be deliberate.

    ## Example
    ```yaml
    args: ["--model", "microsoft/Phi-3-medium-4k-instruct", "--max-model-len", "8192"]
    ```

    ## Use instead
    A `--max-model-len` at or below the limit the message gives, a long-context variant of
    the model, or a RoPE scaling (`--hf-overrides`) together with the override variable.
    """

    code = "KV703"
    name = "max-model-len-exceeds-model-limit"
    severity = Severity.ERROR

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        limit, policy = ctx.context_limit, ctx.limit_policy
        length = ctx.plan.max_model_len
        if limit is None or policy is None or length is None or not policy.refuses:
            return
        if length <= limit.admitted:
            return
        env = dict(ctx.plan.env)
        override = policy.override_env
        if override is not None and override in env and (
                env[override] is None or policy.overridden(env[override])):
            return  # allowed, or set to a value the manifest does not hold: not guessed
        how = (f"; set {override}=1 in the server's environment to allow it"
               if override else "")
        yield self.finding(
            f"max_model_len {_length(length)} is above the model's own limit of "
            f"{fmt_int(int(limit.admitted))} tokens ({limit.describe()}, as "
            f"{policy.engine} derives it): the server refuses to start{how}, or lower "
            "max_model_len.",
            suggestion=Suggestion(f"use max_model_len={int(limit.admitted)}",
                                  {"max_model_len": int(limit.admitted)}),
            max_model_len=length,
            model_limit=int(limit.admitted),
            limit_key=limit.key,
            limit_base=limit.base,
            rope_type=limit.rope_type,
            rope_factor=limit.factor,
            override_env=override,
            source=policy.source,
        )


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [MaxModelLenExceedsModelLimit]
