"""The modules a quantized checkpoint keeps unquantized, read from its ``quantization_config``.

Quantizers write the modules they leave in 16-bit under one of five keys: ``exclude_modules``
(NVIDIA ModelOpt), ``ignore`` (compressed-tensors, llm-compressor), ``modules_to_not_convert``
(AutoAWQ, transformers' FP8 and MXFP4 configs), ``ignored_layers`` (vLLM's own FP8 config) and
``llm_int8_skip_modules`` (bitsandbytes). Each entry is a module name, a glob (``*``) or a
regular expression (``re:`` prefix). kvlint maps each to the :class:`~kvlint.model.weights.Part`
it names by the module names transformers' model classes use (``self_attn``/``q_proj``...:
attention; ``shared_experts``; ``experts``; ``mlp.gate_proj``/``up_proj``/``down_proj``: a dense
MLP; ``mlp.gate``/``router``: the router; ``lm_head``; ``embed``; vision towers and projectors;
``linear_attn``/``mamba``/``mixer``). An entry that names every layer (a wildcard or a
pattern without a layer number) keeps the whole part; entries that name single layers
(``model.layers.7.self_attn``) keep the share of the layers they name. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kvlint.model.weights import Part

__all__ = ["EXCLUSION_KEYS", "kept_fractions"]

EXCLUSION_KEYS = ("exclude_modules", "ignore", "modules_to_not_convert", "ignored_layers",
                  "llm_int8_skip_modules")
MAX_PATTERNS = 20_000
"""Entries read per key (a hostile config can list millions)."""

_LAYER = re.compile(r"(?:layers|layer|blocks|h)[.\\/_]+(\d{1,5})(?![\d*+?\]])")
_KINDS: tuple[tuple[Part | None, re.Pattern[str]], ...] = (
    (Part.SHARED_EXPERTS, re.compile(r"shared_expert")),
    (Part.EXPERTS, re.compile(r"experts")),
    (Part.ENCODER, re.compile(r"vision|visual|mm_projector|multi_modal|audio|patch_merge")),
    (Part.MIXER, re.compile(r"linear_attn|mamba|mixer|ssm")),
    (Part.ATTENTION, re.compile(r"self_attn|attention|\battn|[._](?:q|k|v|o|qkv|q_a|q_b|kv_a|"
                                r"kv_b|g)_proj|\bw(?:q|kv|o)\b|indexer")),
    (None, re.compile(r"(?:mlp|moe)[.\\]+gate(?:$|[^_])|router|e_score_correction|"
                      r"block_sparse_moe\.gate(?:$|[^_])|(?:^|\.)gate$")),
    (Part.DENSE_MLP, re.compile(r"mlp|(?:gate|up|down|gate_up)_proj|feed_forward|ffn")),
    (Part.LM_HEAD, re.compile(r"lm_head|output_layer")),
    (Part.EMBEDDINGS, re.compile(r"embed|wte\b")),
)
"""Module-name keywords -> the part they name, the most specific first (``None``: a router,
norm or bias, which no method quantizes anyway)."""


_NOT_WEIGHTS = re.compile(r"norm|bias|scale|rotary|correction")
"""Norms, biases and scales: never quantized, whatever part's name they carry
(``post_attention_layernorm``)."""


def _entries(config: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in EXCLUSION_KEYS:
        value = config.get(key)
        if isinstance(value, list):
            out.extend(str(v) for v in value[:MAX_PATTERNS] if isinstance(v, str))
    return out


def kept_fractions(config: Mapping[str, Any] | None, num_layers: int | None
                   ) -> tuple[dict[Part, float], tuple[str, ...]]:
    """The share (0-1] of each part a quantized checkpoint keeps in 16-bit, and notes on the
    entries kvlint could not place. ``num_layers``: the model's decoder layers (entries
    naming single layers count against it; ``None``: such entries are not counted)."""
    if not config:
        return {}, ()
    whole: set[Part] = set()
    layers: dict[Part, set[int]] = {}
    unplaced: list[str] = []
    for entry in _entries(config):
        text = entry[3:] if entry.startswith("re:") else entry
        name = text.lower()[:500]
        if _NOT_WEIGHTS.search(name):
            continue
        part = next(((p,) for p, pattern in _KINDS if pattern.search(name)), None)
        if part is None:
            unplaced.append(entry)
            continue
        (kind,) = part
        if kind is None:
            continue
        index = _LAYER.search(name)
        if index is None:
            whole.add(kind)
        else:
            layers.setdefault(kind, set()).add(int(index.group(1)))
    kept = {p: 1.0 for p in whole}
    for p, indices in layers.items():
        if p not in kept and num_layers:
            kept[p] = min(1.0, len(indices) / num_layers)
    notes = (f"{len(unplaced)} module(s) the quantization config keeps unquantized name no "
             f"part kvlint counts (first: {unplaced[0]!r}): not counted",) if unplaced else ()
    return kept, notes
