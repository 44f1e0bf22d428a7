"""GGUF files (llama.cpp's format, which vLLM loads too): the bits per weight of a file type.

A GGUF checkpoint names its type in its file name (``Llama-3.2-3B-Instruct-Q8_0.gguf``,
``-hf bartowski/X-GGUF:Q5_K_M``). The bytes are llama.cpp's own figures: its quantize tool's
table of types (``QUANT_OPTIONS`` in tools/quantize/quantize.cpp, ggml-org/llama.cpp master
as stored in the code index, 2026), which gives a whole file's size for Llama-3-8B (in GiB:
Q8_0's 7.96G is 8.5 bits x 8.03e9 parameters) or a type's bits per weight. A K-quant "mix"
(``Q4_K_M``) keeps some tensors at a higher type (the output at Q6_K, half the value and
down projections above the rest); the Llama-3-8B file average counts them, embeddings and
the output included, so applied to another model it is an ESTIMATE within a few percent.
Pure data, no I/O.
"""

from __future__ import annotations

import re

__all__ = ["GGUF_BITS", "LLAMA_3_8B_PARAMETERS", "gguf_bits", "gguf_type"]

LLAMA_3_8B_PARAMETERS = 8_030_261_248
"""Parameters of Meta-Llama-3-8B, the model the quantize tool's file sizes are for."""


def _file_bits(gib: float) -> float:
    """Bits per weight of a Llama-3-8B file of ``gib`` GiB."""
    return gib * 2**30 * 8 / LLAMA_3_8B_PARAMETERS


GGUF_BITS: dict[str, float] = {
    # "N bpw" entries: the type's own bits per weight
    "Q1_0": 1.125, "Q2_0": 2.25, "IQ1_S": 1.56, "IQ1_M": 1.75, "TQ1_0": 1.69, "TQ2_0": 2.06,
    "IQ2_XXS": 2.06, "IQ2_XS": 2.31, "IQ2_S": 2.5, "IQ2_M": 2.7, "IQ3_XXS": 3.06,
    "IQ3_XS": 3.3, "IQ3_S": 3.44, "IQ3_M": 3.66, "IQ4_NL": 4.50, "IQ4_XS": 4.25,
    # "xG @ Llama-3-8B" entries: the file's size over the model's parameters
    "Q4_0": _file_bits(4.34), "Q4_1": _file_bits(4.78), "Q5_0": _file_bits(5.21),
    "Q5_1": _file_bits(5.65), "Q2_K": _file_bits(2.96), "Q2_K_S": _file_bits(2.96),
    "Q3_K_S": _file_bits(3.41), "Q3_K_M": _file_bits(3.74), "Q3_K_L": _file_bits(4.03),
    "Q4_K_S": _file_bits(4.37), "Q4_K_M": _file_bits(4.58), "Q5_K_S": _file_bits(5.21),
    "Q5_K_M": _file_bits(5.33), "Q6_K": _file_bits(6.14), "Q8_0": _file_bits(7.96),
    # 16- and 32-bit files: every weight at the type's width
    "F16": 16.0, "BF16": 16.0, "F32": 32.0,
}
"""Bits per weight of each llama.cpp file type (``QUANT_OPTIONS``; ``MXFP4_MOE`` gives no
figure and is absent). Aliases: ``Q3_K`` = ``Q3_K_M``, ``Q4_K`` = ``Q4_K_M``, ``Q5_K`` =
``Q5_K_M`` (the same table)."""

_ALIASES = {"Q3_K": "Q3_K_M", "Q4_K": "Q4_K_M", "Q5_K": "Q5_K_M"}
_TYPE = re.compile(
    r"(?:^|[-_.:/ ])((?:I?Q\d_(?:K(?:_[SML])?|[01]|XXS|XS|S|M|L|NL)|TQ\d_0|B?F16|F32))"
    r"(?:\.gguf|-\d{5}-of-\d{5}\.gguf)?$", re.IGNORECASE)
"""A file type at a GGUF name's end: ``...-Q4_K_M.gguf``, ``...Q8_0-00001-of-00002.gguf``
(a split file), ``repo:Q5_K_M`` (llama.cpp's ``-hf`` tag)."""


def gguf_type(name: str) -> str | None:
    """The llama.cpp file type a GGUF file or ``-hf`` tag names (``Q4_K_M``), canonical; ``None``
    when ``name`` is no GGUF file, or names no type kvlint has a figure for."""
    text = name.strip()
    low = text.lower()
    if not (low.endswith(".gguf") or ":" in text):
        return None
    found = _TYPE.search(text)
    if found is None:
        return None
    kind = found.group(1).upper()
    kind = _ALIASES.get(kind, kind)
    return kind if kind in GGUF_BITS else None


def gguf_bits(kind: str) -> float | None:
    """Bits per weight of the file type ``kind`` (any case, aliases too); ``None`` if unknown."""
    key = kind.strip().upper()
    return GGUF_BITS.get(_ALIASES.get(key, key))
