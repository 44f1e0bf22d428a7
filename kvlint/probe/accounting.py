"""Logical KV byte accounting of real CPU tensor programs (needs torch).

:class:`KvAccounting` is a ``TorchDispatchMode`` that follows KV data from the cache
storages it is given ("tainted") through every ATen op:

- views (``view``, ``expand``, ``transpose``, ``slice``...) cost nothing: their output shares a
  tainted storage and stays tainted;
- any other op with a tainted input reads the *unique* bytes of those inputs (a stride-0
  dimension, as made by ``expand``, is read once);
- its output carries KV data, and is tainted, when the op moves data (copies, ``cat``,
  gathers, casts, pads) or when it is at least as large as the unique KV it read (an
  up-projection of an MLA latent, an elementwise op); attention consumers (``bmm``, SDPA,
  ``softmax`` of scores) produce far fewer elements than they read and end the trail;
- an output with more elements than the unique KV read is a *materialisation*, with
  amplification ``out / unique in`` (``repeat_kv``, ``repeat_interleave``, per-head K/V built
  from a latent).

After the step, :meth:`KvAccounting.summarise` splits the traffic: ops that wrote the cache's
final storages are cache management (``torch.cat`` in ``DynamicCache.update``, a static cache's
``index_copy_``), everything else is attention. :class:`SdpaRecorder` (a
``TorchFunctionMode``) records each ``scaled_dot_product_attention`` call.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from kvlint.probe.result import RecordedSdpa

MATERIALISATION_THRESHOLD = 1.5
"""An op whose output has at least this many times the unique KV elements it read is
reported as a materialisation (``cat`` appending one token stays below it)."""

_DATA_MOVEMENT = frozenset({
    "clone", "copy", "copy_", "_to_copy", "cat", "stack", "index", "index_select", "gather",
    "index_copy", "index_copy_", "index_put", "index_put_", "repeat", "repeat_interleave",
    "constant_pad_nd", "_unsafe_view", "contiguous", "expand_copy", "slice_scatter",
    "select_scatter", "where", "masked_fill", "flip", "roll", "narrow_copy", "view_copy",
    "_reshape_copy", "reshape", "unsqueeze_copy", "transpose_copy", "permute_copy",
})
"""ATen ops (overload packets) that carry their input's data to their output."""

_METADATA_ONLY = frozenset({
    "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "empty_like",
    "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "is_same_size", "_local_scalar_dense",
})
"""Ops that use only a tensor's shape and dtype, never its data."""


def unique_elements(t: torch.Tensor) -> int:
    """Elements a tensor addresses, counting a stride-0 (broadcast) dimension once."""
    if t.numel() == 0:
        return 0
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0:
            n *= size
    return n


def unique_bytes(t: torch.Tensor) -> int:
    return unique_elements(t) * t.element_size()


def _key(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


def _region(t: torch.Tensor) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    return (_key(t), int(t.storage_offset()), tuple(t.shape), tuple(t.stride()))


def _tensors(tree: Any) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(tree)
    return [x for x in leaves if isinstance(x, torch.Tensor)]


@dataclass
class OpRecord:
    """One ATen call that touched KV data."""

    op: str
    module: str | None
    read_bytes: int
    write_bytes: int
    unique_in_elements: int
    out_elements: int
    out_storages: tuple[int, ...]
    mutated: tuple[int, ...]
    """Tainted storages the op wrote in place."""
    where: str | None = None
    """The Python function that called it, for materialisations."""

    @property
    def amplification(self) -> float:
        return self.out_elements / self.unique_in_elements if self.unique_in_elements else 0.0


@dataclass(frozen=True)
class MaterialisationSummary:
    op: str
    amplification: float
    bytes: int
    calls: int
    module: str | None
    where: str | None


@dataclass(frozen=True)
class Traffic:
    """KV traffic of one measured region, split into attention and cache management."""

    attention_read_bytes: int
    attention_write_bytes: int
    cache_read_bytes: int
    cache_write_bytes: int
    cache_bytes: int
    """Bytes the cache holds after the region (unique storage of its tensors)."""
    materialisations: tuple[MaterialisationSummary, ...]
    ops: tuple[OpRecord, ...] = field(repr=False)


def _caller() -> str | None:
    """The innermost Python function outside torch and kvlint (``repeat_kv``)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename.replace("\\", "/")
        if "/torch/" not in path and "/kvlint/probe/" not in path:
            short = "/".join(path.rsplit("/", 3)[-3:])
            return f"{frame.f_code.co_name} ({short}:{frame.f_lineno})"
        frame = frame.f_back  # type: ignore[assignment]
    return None


_OVERWRITES = frozenset({"copy_", "index_copy_", "index_put_", "scatter_", "fill_", "zero_",
                         "masked_fill_", "masked_scatter_", "index_fill_", "set_", "resize_",
                         "_index_put_impl_"})
"""In-place ops that write their destination without reading it."""
_SCATTERS = frozenset({"index_copy_", "index_put_", "scatter_", "masked_scatter_",
                       "_index_put_impl_"})
"""In-place ops that write only as many elements as their source holds."""


def _written(func: Any, args: Sequence[Any], kwargs: dict[str, Any]
             ) -> list[tuple[torch.Tensor, bool]]:
    """The tensors an op writes: ``(tensor, is_out)`` for ``out=`` and in-place ``self``."""
    found: list[tuple[torch.Tensor, bool]] = []
    for i, argument in enumerate(func._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[i] if i < len(args) and not argument.kwarg_only else \
            kwargs.get(argument.name)
        found.extend((t, argument.kwarg_only) for t in _tensors(value))
    return found


def _is_data(t: torch.Tensor) -> bool:
    """Not an index or a mask."""
    return t.is_floating_point() or t.is_complex()


class KvAccounting(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Count the KV bytes every op reads and writes, from ``sources`` (the cache's tensors).

    ``module_stack`` may be pushed/popped by forward hooks to attribute ops to modules.
    """

    supports_higher_order_operators = True

    def __init__(self, sources: Iterable[torch.Tensor]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._fused: str | None = None
        self._tainted: dict[int, torch.UntypedStorage] = {}
        self.records: list[OpRecord] = []
        self.module_stack: list[str] = []
        for t in sources:
            self.taint(t)

    def taint(self, t: torch.Tensor) -> None:
        storage = t.untyped_storage()
        self._tainted[int(storage.data_ptr())] = storage  # kept alive: no address reuse

    def is_tainted(self, t: torch.Tensor) -> bool:
        return t.numel() > 0 and _key(t) in self._tainted

    def __torch_dispatch__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if self._fused is not None:
            return func(*args, **kwargs)  # inside a fused kernel: counted as one consumer
        schema = getattr(func, "_schema", None)
        if schema is None:  # a higher-order op (flex_attention): one fused consumer
            with self.fused(getattr(func, "__name__", str(func)), (args, kwargs)):
                return func(*args, **kwargs)
        if func._overloadpacket.__name__ in _METADATA_ONLY:
            return func(*args, **kwargs)
        inputs = _tensors((args, kwargs))
        name = func._overloadpacket.__name__
        targets = _written(func, args, kwargs)
        written = [t for t, _ in targets]
        unread = {_key(t) for t, is_out in targets if is_out or name in _OVERWRITES}
        reads = [t for t in inputs if self.is_tainted(t) and _key(t) not in unread]
        into_kv = any(self.is_tainted(t) for t in written)
        in_keys = {_key(t) for t in inputs}
        out = func(*args, **kwargs)
        if not reads and not into_kv:
            return out
        fresh = [o for o in _tensors(out) if _key(o) not in in_keys]
        if not fresh and not written:
            return out  # a view: shares a tainted storage, costs nothing
        seen: set[tuple[int, int, tuple[int, ...], tuple[int, ...]]] = set()
        unique_in = read = largest_in = 0
        for t in reads:
            region = _region(t)
            if region not in seen:
                seen.add(region)
                unique_in += unique_elements(t)
                largest_in = max(largest_in, unique_elements(t))
                read += unique_bytes(t)
        if written:  # in place or out=
            written_keys = {_key(t) for t in written}
            sources = [t for t in inputs if _key(t) not in written_keys and _is_data(t)]
            source_bytes = sum(t.numel() * t.element_size() for t in sources)
            written_bytes = sum(min(unique_bytes(w), source_bytes) if name in _SCATTERS
                                else unique_bytes(w) for w in written)
            out_elements = written_bytes // max(written[0].element_size(), 1)
            carries = True
            if reads:
                for w in written:
                    self.taint(w)
        else:
            out_elements = sum(o.numel() for o in fresh)
            # Data moves, or the output is as large as one KV input (an elementwise op, an
            # up-projection); attention consumers (QK^T, PV) produce far fewer elements.
            carries = name in _DATA_MOVEMENT or out_elements >= largest_in
            written_bytes = sum(o.numel() * o.element_size() for o in fresh) if carries else 0
            if carries:
                for o in fresh:
                    self.taint(o)
        record = OpRecord(
            op=f"aten.{name}", module=self.module_stack[-1] if self.module_stack else None,
            read_bytes=read, write_bytes=written_bytes, unique_in_elements=unique_in,
            out_elements=out_elements if carries else 0,
            out_storages=tuple(_key(o) for o in fresh) if carries else (),
            mutated=tuple(sorted({_key(t) for t in written})))
        if carries and reads and record.amplification >= MATERIALISATION_THRESHOLD:
            record.where = _caller()
        self.records.append(record)
        return out

    @contextmanager
    def fused(self, name: str, operands: Any) -> Iterator[None]:
        """Count a fused kernel (SDPA, flex attention) as one consumer: it reads the unique
        bytes of its tainted operands once; the ops it runs inside (the CPU's math kernel
        upcasts and copies) are not what a GPU kernel does and are not counted."""
        if self._fused is not None:
            yield
            return
        tainted = [t for t in _tensors(operands) if self.is_tainted(t)]
        self._fused = name
        try:
            yield
        finally:
            self._fused = None
        if tainted:
            regions = {_region(t): t for t in tainted}
            self.records.append(OpRecord(
                op=name, module=self.module_stack[-1] if self.module_stack else None,
                read_bytes=sum(unique_bytes(t) for t in regions.values()), write_bytes=0,
                unique_in_elements=sum(unique_elements(t) for t in regions.values()),
                out_elements=0, out_storages=(), mutated=()))

    def summarise(self, cache_tensors: Sequence[torch.Tensor]) -> Traffic:
        """Split the recorded traffic, given the cache's tensors after the region."""
        cache_storages = {_key(t) for t in cache_tensors}
        attention_read = attention_write = cache_read = cache_write = 0
        for r in self.records:
            if cache_storages.intersection(r.out_storages) or \
                    cache_storages.intersection(r.mutated):
                cache_read += r.read_bytes
                cache_write += r.write_bytes
            else:
                attention_read += r.read_bytes
                attention_write += r.write_bytes
        held: dict[int, int] = {}
        for t in cache_tensors:
            held[_key(t)] = t.untyped_storage().nbytes()
        return Traffic(attention_read, attention_write, cache_read, cache_write,
                       sum(held.values()), tuple(self._materialisations()),
                       tuple(self.records))

    def _materialisations(self) -> Iterator[MaterialisationSummary]:
        groups: dict[tuple[str, float, str | None, str | None], list[OpRecord]] = {}
        for r in self.records:
            if r.out_elements and r.amplification >= MATERIALISATION_THRESHOLD:
                amp = round(r.amplification, 3)
                groups.setdefault((r.op, amp, r.where, r.module), []).append(r)
        for (op, amp, where, module), rs in groups.items():
            yield MaterialisationSummary(op, amp, sum(r.write_bytes for r in rs), len(rs),
                                         module, where)


class SdpaRecorder(TorchFunctionMode):
    """Records every ``torch.nn.functional.scaled_dot_product_attention`` call."""

    def __init__(self, accounting: KvAccounting | None = None) -> None:
        super().__init__()
        self.calls: list[RecordedSdpa] = []
        self._accounting = accounting

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
            bound = dict(zip(names, args, strict=False)) | kwargs
            q, k, v = bound["query"], bound["key"], bound["value"]
            self.calls.append(RecordedSdpa(
                tuple(q.shape), tuple(k.shape), tuple(v.shape), str(q.dtype).split(".")[-1],
                bool(bound.get("enable_gqa", False)), bound.get("attn_mask") is not None,
                bool(bound.get("is_causal", False))))
            if self._accounting is not None:
                with self._accounting.fused("scaled_dot_product_attention", (q, k, v)):
                    return func(*args, **kwargs)
        return func(*args, **kwargs)
