"""The program ``kvlint.probe.ncu_run`` profiles under Nsight Compute: decode steps of an
N-layer random-weight model on CUDA, the attention modules' forwards in NVTX ranges.

    python -m kvlint.probe.gpu_bench --config config.json --impl sdpa \\
        --contexts 8192,16384,32768 --batch 1 --layers 1 --dtype bfloat16 --steps 3

The model is built once. For each context a :class:`~kvlint.probe.build.DecodeHarness` is
made and 2 warm-up steps run with no NVTX range (cache resets are never in one); then every
attention module (the outermost modules whose name ends in ``attn`` or ``attention``) gets
forward hooks that push the NVTX range ``kvlint_attn:{context}`` and pop it, and ``--steps``
steps run, each after ``reset()``. The hooks are removed before the next context. The
program prints nothing but, at the end, ``{"contexts": [...], "steps": S}``; on failure
(no CUDA, a bad config, out of memory) one line on stderr and exit status 2.

torch is imported only in :func:`main`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from kvlint.errors import KvlintError
from kvlint.probe.ncu_run import range_name

PROG = "kvlint.probe.gpu_bench"
WARMUP_STEPS = 2
ATTENTION_SUFFIXES = ("attn", "attention")


def _contexts(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"contexts must be positive integers: {text!r}")
    return values


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m {PROG}",
                                description="Decode steps with the attention in NVTX ranges "
                                            "kvlint_attn:{context}, for ncu.")
    p.add_argument("--config", required=True, help="a config.json")
    p.add_argument("--impl", required=True, help="transformers attention implementation")
    p.add_argument("--contexts", required=True, type=_contexts, help="e.g. 8192,16384")
    p.add_argument("--batch", type=_positive, default=1)
    p.add_argument("--layers", type=_positive, default=1)
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--cache", choices=("dynamic", "static", "inplace"), default="inplace")
    p.add_argument("--max-cache-len", type=_positive, default=None)
    p.add_argument("--steps", type=_positive, default=3)
    return p


def attention_module_names(names: Iterable[str]) -> list[str]:
    """The outermost of ``names`` (``model.layers.0.self_attn``) whose last component ends
    in ``attn`` or ``attention``: a hooked module's submodules are not hooked again, so
    ranges never nest."""
    chosen: list[str] = []
    for name in names:
        if not name or not name.rsplit(".", 1)[-1].endswith(ATTENTION_SUFFIXES):
            continue
        if any(name.startswith(outer + ".") for outer in chosen):
            continue
        chosen = [c for c in chosen if not c.startswith(name + ".")]
        chosen.append(name)
    return chosen


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return 2


def _load(path: str) -> dict[str, Any]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise KvlintError(f"cannot read {path}: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise KvlintError(f"{path} is not JSON: {err}") from None
    if not isinstance(raw, dict):
        raise KvlintError(f"{path} holds no JSON object")
    return raw


def _nvtx_hooks(modules: Sequence[Any], name: str) -> list[Any]:
    """Hooks that run each module's forward inside the NVTX push/pop range ``name``."""
    import torch

    def push(_module: Any, _args: Any) -> None:
        torch.cuda.nvtx.range_push(name)  # type: ignore[no-untyped-call]
        # returns None (range_push's depth is dropped): a value would replace the input

    def pop(_module: Any, _args: Any, _output: Any) -> None:
        torch.cuda.nvtx.range_pop()  # type: ignore[no-untyped-call]
        # returns None, or the hook would replace the output

    handles = []
    for module in modules:
        handles.append(module.register_forward_pre_hook(push))
        handles.append(module.register_forward_hook(pop))
    return handles


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from kvlint.probe.gpu import cuda_unavailable_reason

    reason = cuda_unavailable_reason()
    if reason is not None:
        return _fail(f"needs CUDA: {reason}")
    contexts: tuple[int, ...] = args.contexts
    steps: int = args.steps
    if args.cache != "static" and args.max_cache_len is not None:
        return _fail("--max-cache-len applies to --cache static")
    try:
        raw = _load(args.config)
    except KvlintError as err:
        return _fail(str(err))

    import torch

    from kvlint.probe.build import CacheSpec, DecodeHarness, build

    spec = (CacheSpec(args.cache) if args.cache != "static"
            else CacheSpec("static", args.max_cache_len or 2 * (max(contexts) + 1)))
    context = contexts[0]
    try:
        built = build(raw, impl=args.impl, layers=args.layers, dtype=args.dtype,
                      device="cuda")
        named = dict(built.model.named_modules())
        modules = [named[n] for n in attention_module_names(named)]
        if not modules:
            return _fail(f"no attention module (a name ending in attn or attention) in "
                         f"{type(built.model).__name__}")
        for context in contexts:
            harness = DecodeHarness(built, context, args.batch, spec)
            for _ in range(WARMUP_STEPS):
                harness.reset()
                harness.step()
            torch.cuda.synchronize()
            handles = _nvtx_hooks(modules, range_name(context))
            try:
                for _ in range(steps):
                    harness.reset()
                    harness.step()
                torch.cuda.synchronize()
            finally:
                for handle in handles:
                    handle.remove()
            del harness
            torch.cuda.empty_cache()
    except KvlintError as err:
        return _fail(str(err))
    except torch.cuda.OutOfMemoryError:
        return _fail(f"out of GPU memory at context {context} (batch {args.batch}): lower "
                     f"the batch or the contexts")
    print(json.dumps({"contexts": list(contexts), "steps": steps}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
