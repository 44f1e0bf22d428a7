"""Coverage: which of vLLM 0.33's text-generating architectures kvlint resolves.

For each architecture of ``bench/data/vllm-0.33.0-text-archs.tsv``:

1. every real config in ``fixtures/configs`` whose ``architectures[0]`` names it is resolved
   (``real``: it resolves; ``real-unresolved``: it does not);
2. otherwise, when transformers has a class of that name (or a model type named like the
   architecture's stem), the default configuration of that model type is resolved
   (``defaults``), labelled as transformers' defaults, not a real model;
3. otherwise the architecture has no public config found and no transformers class
   (``none``: vLLM-only or remote-code-only models).

    python bench/coverage.py [--list]

Needs transformers for step 2 (``pip install -e '.[transformers]'``); no network.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvlint.errors import ConfigError  # noqa: E402
from kvlint.loaders.config_defaults import TableDefaults  # noqa: E402
from kvlint.loaders.hf_config import resolve_geometry  # noqa: E402

ARCHS = ROOT / "bench" / "data" / "vllm-0.33.0-text-archs.tsv"
CONFIGS = ROOT / "fixtures" / "configs"


def _archs() -> list[tuple[str, str]]:
    rows = []
    for line in ARCHS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            arch, category, *_ = line.split("\t")
            rows.append((arch, category))
    return rows


def _fixtures() -> dict[str, list[Path]]:
    by_arch: dict[str, list[Path]] = {}
    for path in sorted(CONFIGS.glob("*.json")):
        if path.name == "expected.json":
            continue
        config = json.loads(path.read_text(encoding="utf-8"))
        names = config.get("architectures") if isinstance(config, dict) else None
        if isinstance(names, list) and names and isinstance(names[0], str):
            by_arch.setdefault(names[0], []).append(path)
    return by_arch


def _model_types() -> dict[str, str]:
    """transformers class name -> model type, over every auto-model mapping."""
    from transformers.models.auto import modeling_auto

    out: dict[str, str] = {}
    for name in dir(modeling_auto):
        if name.endswith("_MAPPING_NAMES"):
            for model_type, cls in getattr(modeling_auto, name).items():
                for c in (cls if isinstance(cls, tuple) else (cls,)):
                    out.setdefault(c, model_type)
    return out


SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "LMHeadModel", "Model")


def _by_stem(arch: str, config_mapping: Any) -> str | None:
    """A model type whose name matches the architecture's stem (``Exaone4ForCausalLM`` ->
    ``exaone4``), for vLLM names transformers' auto mappings do not list."""
    stem = arch
    for suffix in SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    key = "".join(c for c in stem.lower() if c.isalnum())
    matches = [t for t in config_mapping if "".join(c for c in t if c.isalnum()) == key]
    return matches[0] if len(matches) == 1 else None


def _resolves(config: Any, defaults: TableDefaults) -> str | None:
    try:
        resolve_geometry(config, defaults=defaults)
    except (ConfigError, ValueError) as err:
        return str(err)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print every architecture")
    args = parser.parse_args()
    defaults = TableDefaults(fallback=True)
    fixtures = _fixtures()
    try:
        from transformers import CONFIG_MAPPING
        types = _model_types()
    except ImportError:
        CONFIG_MAPPING, types = None, {}
    verdicts: dict[str, str] = {}
    for arch, _category in _archs():
        if arch in fixtures:
            errors = [e for p in fixtures[arch]
                      if (e := _resolves(json.loads(p.read_text(encoding="utf-8")), defaults))]
            verdicts[arch] = "real-unresolved" if errors else "real"
            if errors:
                print(f"{arch}: {errors[0]}", file=sys.stderr)
            continue
        model_type = types.get(arch) or (
            _by_stem(arch, CONFIG_MAPPING) if CONFIG_MAPPING is not None else None)
        if CONFIG_MAPPING is None or model_type is None or model_type not in CONFIG_MAPPING:
            verdicts[arch] = "none"
            continue
        config = {**CONFIG_MAPPING[model_type]().to_dict(), "architectures": [arch]}
        error = _resolves(config, defaults)
        verdicts[arch] = "defaults-unresolved" if error else "defaults"
        if error:
            print(f"{arch} (transformers defaults of {model_type}): {error}", file=sys.stderr)
    counts = Counter(verdicts.values())
    total = len(verdicts)
    if args.list:
        for arch, verdict in verdicts.items():
            print(f"{verdict:20} {arch}")
    print(f"vLLM 0.33.0 text-generating architectures: {total}")
    for key in ("real", "real-unresolved", "defaults", "defaults-unresolved", "none"):
        print(f"  {key:20} {counts.get(key, 0)}")
    resolved = counts.get("real", 0) + counts.get("defaults", 0)
    print(f"resolved by kvlint: {resolved}/{total} ({counts.get('real', 0)} from real configs, "
          f"{counts.get('defaults', 0)} from transformers' defaults); "
          f"{counts.get('none', 0)} have neither a public config here nor a transformers class")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
