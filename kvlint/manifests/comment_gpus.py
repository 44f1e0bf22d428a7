"""The GPU a manifest's comments name, for a deployment that names none anywhere else.

Authors often write the hardware only in a comment (``# Tested on RTX PRO 6000 Blackwell``,
``# vLLM on ThunderCompute A100 80GB``): no key or flag says it, yet it is what the file was
written for. kvlint reads it only when nothing else names a GPU (a node selector, a label, an
instance type, ``--gpu`` on the command line all win) and only when the comments name **one**
GPU model: a file whose comments compare an A100 with an H100 names none. The value's source
says it came from a comment and on which line, so every finding that uses it says so too.

Recognised: the names and aliases of kvlint's GPU table (``gpus.toml``; such a GPU is then
sized), and the model numbers of other accelerators people deploy on (``RTX 5070 Ti``, ``GB10``,
``Quadro RTX 5000``, ``V100 16GB``, ``MI250``, ``Arc Pro B60``, ``Gaudi 2``...), which are
reported but not sized (the table does not know their memory). Comments are ``#`` at the start
of a line or after a blank (YAML, shell, Python, Dockerfiles, Makefiles; not ``#!``, ``#SBATCH``
or ``#PBS``), ``REM``/``::`` lines of batch files, and a systemd unit's ``Description=``.
"""

from __future__ import annotations

import functools
import re

from kvlint.manifests.base import COMMENT_SOURCE, Located

__all__ = ["comment_gpu", "comment_lines", "gpu_in_name", "gpus_by_line"]

_COMMENT = re.compile(r"(?:^|\s)#(?![!#])(?!SBATCH|PBS|\$)(.*)$|^\s*(?:@?rem\s|::)(.*)$"
                      r"|^\s*Description=(.*)$", re.IGNORECASE)
_SEP = r"[\s_-]{0,3}"
_MEMORY = rf"(?:{_SEP}(?:SXM\d?|PCIe|NVL|HBM\d?e?))*(?:{_SEP}\d{{2,3}}{_SEP}G(?:i?B)?)?"
_MODELS = (
    r"RTX" + _SEP + r"PRO" + _SEP + r"\d{4}(?:" + _SEP + r"(?:Blackwell|Ada))?",
    r"(?:Quadro" + _SEP + r")?RTX" + _SEP + r"A?\d{4}(?:" + _SEP + r"(?:Ti|Ada|Super))?",
    r"(?:GeForce" + _SEP + r")?(?:GTX|RTX)" + _SEP + r"\d{4}(?:" + _SEP + r"(?:Ti|Super))?",
    r"(?:A10G?|A16|A30|A40|A100|A800|H20|H100|H200|H800|B100|B200|B300|GB10|GB200|GB300|"
    r"L4|L20|L40S?|T4|V100|P100|P40|K80|M60)",
    r"MI\d{3}[XA]?",
    r"Arc" + _SEP + r"(?:Pro" + _SEP + r")?[AB]\d{2,3}",
    r"Gaudi(?:" + _SEP + r"[123])?",
    r"DGX" + _SEP + r"Spark",
)
_PRODUCTS = {"dgxspark": "GB10"}
"""Systems named for the one GPU they hold: NVIDIA's DGX Spark is a GB10 Grace Blackwell
superchip (nvidia.com/en-us/products/workstations/dgx-spark)."""
_GPU = re.compile(r"(?<![\w.])(?:\d{1,3}\s?[x\u00d7]\s?)?(?:(?:NVIDIA|AMD|Intel|Tesla|Instinct)"
                  + _SEP + r")?(" + "|".join(f"(?:{m})" for m in _MODELS) + r")" + _MEMORY +
                  r"(?P<plural>'?s)?(?![\w])", re.IGNORECASE)
"""A GPU model, after a count (``8xH100s``, ``4 x A100``), in the plural or possessive."""
_FAMILY = re.compile(r"[\s_-]+")


@functools.cache
def _table_name(text: str) -> str | None:
    """The GPU table's name for ``text`` (``None``: not in the table)."""
    from kvlint.model.hardware import find_gpu

    try:
        return find_gpu(text).name
    except (KeyError, ValueError):
        return None


def comment_lines(text: str) -> list[tuple[int, str]]:
    """``(1-based line, comment text)`` of each comment of ``text`` (the first 20,000 lines,
    2,000 characters of each)."""
    out: list[tuple[int, str]] = []
    for number, row in enumerate(text.splitlines()[:20_000], start=1):
        if "#" not in row and "::" not in row and "rem" not in row[:8].lower() and \
                not row.lstrip().startswith("Description="):
            continue
        found = _COMMENT.search(row[:2_000])
        if found is not None:
            out.append((number, next((g for g in found.groups() if g is not None), "")))
    return out


def _end(mention: re.Match[str]) -> int:
    """Where a mention's name ends: before a plural or possessive ``s``."""
    return mention.start("plural") if mention.group("plural") else mention.end()


def comment_gpu(text: str) -> Located[str] | None:
    """The one GPU model the comments of ``text`` name (the table's name when it has one),
    with the line of its first mention; ``None`` when they name none or several."""
    families: dict[str, list[tuple[int, str, str]]] = {}
    for number, comment in comment_lines(text):
        for mention in _GPU.finditer(comment):
            family = _FAMILY.sub("", mention.group(1)).lower()
            families.setdefault(family, []).append(
                (number, " ".join(comment[mention.start(1):_end(mention)].split()),
                 " ".join(mention.group(1).split())))
            if len(families) > 1:
                return None
    if len(families) != 1:
        return None
    (mentions,) = families.values()
    named = {name for _, said, _ in mentions if (name := _table_name(said)) is not None}
    if len(named) > 1:  # A100-40GB and A100-80GB: the model, not a GPU kvlint can size
        line, _, model = mentions[0]
        return Located(model, line, None, COMMENT_SOURCE)
    if named:
        (name,) = named
        line = next(n for n, said, _ in mentions if _table_name(said) == name)
        return Located(name, line, None, COMMENT_SOURCE)
    line, said, model = max(mentions, key=lambda m: len(m[1]))
    product = _PRODUCTS.get(_FAMILY.sub("", model).lower())
    return Located(product or said, line, None, COMMENT_SOURCE)


_NAME_PARTS = re.compile(r"[\s_.,:+-]+|(?<=\d)x(?=\d)")
"""Where a resource name splits: separators, and ``x`` between digits (``a100x4``)."""


def gpu_in_name(name: str) -> str | None:
    """The one GPU model a resource's name is named for (a Slurm partition ``h200_short``,
    ``rtx4060``, ``gpu-a100``): one of its ``_``/``-``/``.``-separated parts is a GPU model
    (the table's name when it has one); ``None`` when no part is, or parts name two."""
    found: set[str] = set()
    parts = [part for part in _NAME_PARTS.split(name[:200]) if part]
    for part in parts:
        if _GPU.fullmatch(part):
            found.add(_table_name(part) or part.upper())
    if not found and any(part.lower() == "gpu" for part in parts):
        # GPU-4090: a GeForce RTX number beside the word GPU (never a number alone)
        found = {_table_name(f"RTX {part}") or f"RTX-{part.upper()}" for part in parts
                 if _GEFORCE.fullmatch(part)}
    return found.pop() if len(found) == 1 else None


_GEFORCE = re.compile(r"[2-5]0[5-9]0(?:ti)?", re.IGNORECASE)
"""A GeForce RTX model number (2060 to 5090, ``Ti``): a GPU only beside the word GPU."""


def gpus_by_line(text: str) -> dict[int, Located[str]]:
    """The GPU model each comment names, by line, where a comment names exactly one
    (``device_ids: ['0']  # RTX 4090``): what a count written on that line is of."""
    out: dict[int, Located[str]] = {}
    for number, comment in comment_lines(text):
        found = {" ".join(m.group(1).split()) for m in _GPU.finditer(comment)}
        if len(found) == 1:
            (said,) = found
            out[number] = Located(_table_name(said) or said, number, None,
                                  COMMENT_SOURCE)
    return out
