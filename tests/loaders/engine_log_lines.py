"""Synthetic start-up lines printed from a generated format table's entries (TensorRT-LLM and
LMDeploy), for the read-back and property tests: distinct values per placeholder, rendered as
the engine's format spec would (printf ``%lu``/``%.2f``, fmt ``{:.3f}``, f-string ``{x:.2f}``)."""

from __future__ import annotations

import re

from kvlint.loaders.log_formats import FormatEntry, Placeholder, format_tokens

SPECIAL = {
    "backend_config": "TurbomindEngineConfig(tp=2, cache_block_seq_len=64, "
                      "cache_max_entry_count=0.5)",
    "cache_config": "CacheConfig(max_batches=128, block_size=64, num_gpu_blocks=777, "
                    "cache_max_entry_count=0.5)",
    "tm_config": '{\n  "engine_config": {\n    "cache_block_seq_len": 64,\n    "tp": 2\n  }\n}',
    "backend": "pytorch",
}
_FLOAT = re.compile(r"gib|mib|fraction|ratio|cache_max_entry_count")


def _render(spec: str, name: str, index: int) -> str:
    integer = bool(re.search(r"%[-+ 0#]{0,4}\d{0,3}(?:hh|h|ll|l|z)?[diu]$|\.0f[}]?$", spec)) \
        or (spec in ("{}",) and not _FLOAT.search(name)) \
        or (not _FLOAT.search(name) and not re.search(r"[%:][^}]*f", spec))
    if integer:
        return str(1000 + 37 * index)
    return f"{11 + index}.{21 + index}"


def printed(entry: FormatEntry, prefix: str = "") -> tuple[str, dict[str, str]]:
    """The text ``entry`` prints (one line, or more where its format has newlines) and the
    value of each field read."""
    out: list[str] = [prefix]
    expected: dict[str, str] = {}
    index = 0
    for token in format_tokens(entry.format, entry.style):
        if not isinstance(token, Placeholder):
            out.append(token)
            continue
        meaning = entry.fields[index] if index < len(entry.fields) else "-"
        name = meaning.partition(",")[0]
        if name in SPECIAL:
            value = SPECIAL[name]
        elif name.startswith("-"):
            value = "x" if "dtype" in token.spec or "devices" in token.spec else "3"
        else:
            value = _render(token.spec, name, index)
            expected[name] = value
        out.append(value)
        index += 1
    return "".join(out), expected
