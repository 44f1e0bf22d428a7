"""The engines x features table of the README, rendered from ``engines.toml``."""

from __future__ import annotations

from collections.abc import Sequence

from kvlint.engines import Engine, Fact, load_engines

SHARDING_TEXT = {
    "replicate": "replicated when tp > KV heads (tp must divide or be divided by them)",
    "ceil": "ceil(KV heads / tp) per GPU",
    "refuse": "refused unless KV heads % tp == 0 and tp <= KV heads",
    "refuse-except-mqa": "refused unless KV heads % tp == 0 (MQA replicated)",
    "layers": "not sharded: GPUs split layers",
}


def _mark(fact: Fact) -> str:
    return "" if fact.verified else " (unverified)"


def _versions(fact: Fact) -> str:
    return str(fact.versions) or "all versions"


def _mla(engine: Engine) -> str:
    parts = []
    for fact in engine.mla:
        names = ", ".join(t or "(no model_type)" for t in fact.model_types)
        types = "" if "*" in fact.model_types else f" for {names}"
        parts.append(f"{fact.values['cache']}{types}: {_versions(fact)}{_mark(fact)}")
    return "; ".join(parts) or "-"


def _versioned(facts: Sequence[Fact], key: str) -> str:
    parts = [f"{'yes' if f.values.get(key) else 'no'}: {_versions(f)}{_mark(f)}" for f in facts]
    return "; ".join(parts) or "unknown"


def _sharding(engine: Engine) -> str:
    versioned = [f for f in engine.kv_sharding if str(f.versions)]
    facts = versioned or engine.kv_sharding  # the catch-all is shown only when alone
    return "; ".join(
        f"{SHARDING_TEXT[str(f.values['kv_sharding'])]}"
        f"{'' if not str(f.versions) else f' ({f.versions})'}{_mark(f)}"
        for f in facts)


def _architectures(engine: str) -> str:
    """Architectures served per version read (``kvlint/engines/architectures.json``)."""
    from kvlint.engines.architectures import load

    entry = load()["engines"].get(engine)
    if entry is None:
        return "-"
    parts = []
    for version, data in entry["versions"].items():
        served = data.get("served", data.get("model_types", ()))
        extra = []
        if data.get("transformers_backend"):
            extra.append(f"+{len(data['transformers_backend'])} via Transformers")
        if data.get("tensorrt_backend"):
            extra.append(f"+{len(data['tensorrt_backend'])} TensorRT backend only")
        if data.get("removed"):
            extra.append(f"{len(data['removed'])} removed")
        label = "" if version == "*" else f"{version}: "
        parts.append(f"{label}{len(served)}" + (f" ({', '.join(extra)})" if extra else ""))
    return "; ".join(parts)


def markdown() -> str:
    rows = ["| engine | newest known | KV heads under TP | MLA cache | fp8 KV with MLA | "
            "windowed sliding-window cache | DP attention | architectures served | "
            "checked against |",
            "|---|---|---|---|---|---|---|---|---|"]
    for engine in load_engines().values():
        dp = engine.dp_attention
        dp_text = (str(dp.get("how") or "yes") if dp.get("supported") else "no")
        cells = [f"`{engine.key}` ({engine.display})", str(engine.latest), _sharding(engine),
                 _mla(engine), _versioned(engine.fp8_mla, "supported"),
                 _versioned(engine.sliding_window, "windowed"), dp_text,
                 _architectures(engine.key), engine.checked or "-"]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"
