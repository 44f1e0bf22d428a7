"""Project settings: ``[tool.kvlint]`` in ``pyproject.toml``, or ``.kvlint.toml`` /
``kvlint.toml`` (top-level keys), the nearest to the linted files, then the working
directory (docs/design.md §7). Validated by pydantic: an unknown or mistyped key stops the run (exit
2) naming the key and the file. Command-line options override the file."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kvlint.errors import InputError
from kvlint.loaders.files import MAX_SETTINGS_BYTES, UnreadableFile, read_text
from kvlint.loaders.paths import is_dir, is_file
from kvlint.model.gpu_memory import gpu_memory_error
from kvlint.model.limits import MAX_GIB, MAX_PARALLEL, MAX_SIZE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_FILES = (".kvlint.toml", "kvlint.toml", "pyproject.toml")
"""Looked for in this order in each directory, from the linted files upwards."""

Level = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Settings:
    """Every key of ``[tool.kvlint]`` (kebab-case in TOML). A stdlib dataclass, so a run
    without a settings file never imports pydantic; files are validated by pydantic
    (``parse``) against these annotations."""

    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    """Glob (relative to the settings file's directory) -> codes, prefixes or names."""
    fail_on: Literal["error", "warning", "info", "never"] | None = None
    severity: dict[str, Level] = field(default_factory=dict)
    """Code or name -> severity, replacing the rule's default."""
    offline: bool | None = None
    locked: bool | None = None
    """Read Hub models from ``kvlint.lock`` only; one it lacks is an error."""
    engine: str | None = None
    engine_version: str | None = None
    gpu: str | None = None
    gpu_memory: float | None = None
    """GiB per GPU, as the driver reports it (kvlint.model.gpu_memory)."""
    gpu_memory_utilization: float | None = None
    overhead: float | None = None
    """GiB per GPU."""
    kv_cache_dtype: str | None = None
    context: int | None = None
    batch: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    models: dict[str, str] = field(default_factory=dict)
    """Names or paths seen in manifests -> a Hub id or a local config."""
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-rule options (``[tool.kvlint.rule-options.KV201]``) for rules that take them."""
    cache: bool | None = None
    """``false``: ``kvlint lint`` and ``kvlint scan`` neither read nor write their result
    caches (as ``--no-cache``)."""


POSITIVE = {"context": MAX_SIZE, "batch": MAX_SIZE, "tp": MAX_PARALLEL, "pp": MAX_PARALLEL,
            "dp": MAX_PARALLEL, "max_model_len": MAX_SIZE, "max_num_seqs": MAX_SIZE}
"""Integer keys and their largest accepted value (kvlint.model.limits)."""


@dataclass(frozen=True)
class LoadedSettings:
    """Settings and the file they came from (``None``: defaults)."""

    settings: Settings = field(default_factory=Settings)
    path: Path | None = None

    @property
    def where(self) -> str:
        """How messages name the settings (``pyproject.toml [tool.kvlint]``)."""
        return _where(self.path) if self.path else "the settings"

    @property
    def root(self) -> Path:
        """The directory globs and model paths in the file are relative to."""
        return self.path.parent if self.path else Path.cwd()


def _table(path: Path) -> dict[str, Any] | None:
    """The kvlint table of ``path`` (``None`` for a pyproject.toml without one)."""
    try:
        data = tomllib.loads(read_text(path, MAX_SETTINGS_BYTES))
    except UnreadableFile as err:
        raise InputError(f"{path}: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"{path}: invalid TOML: {err}") from None
    except RecursionError:
        raise InputError(f"{path}: invalid TOML: nested too deeply") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        table: Any = tool.get("kvlint") if isinstance(tool, dict) else None
        return dict(table) if isinstance(table, dict) else None
    return dict(data)


def _where(path: Path) -> str:
    return f"{path} [tool.kvlint]" if path.name == "pyproject.toml" else str(path)


def parse(path: Path, table: dict[str, Any]) -> Settings:
    """Validate a kvlint table (pydantic, strict about unknown keys and types)."""
    from pydantic import ConfigDict, TypeAdapter, ValidationError

    class _Strict(Settings):
        __pydantic_config__ = ConfigDict(
            extra="forbid",
            alias_generator=lambda name: name.replace("_", "-"))

    try:
        checked = TypeAdapter(_Strict).validate_python(table)
    except RecursionError:
        raise InputError(f"{_where(path)}: nested too deeply") from None
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(table)"
        if first["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            raise InputError(f"{_where(path)}: unknown key '{key}'") from None
        raise InputError(f"{_where(path)}: '{key}': {first['msg']} (got "
                         f"{first.get('input')!r})") from None
    values = {f: getattr(checked, f) for f in Settings.__dataclass_fields__}
    for name, value in table.items():  # TOML has numbers: "2" or true is a mistake, not a 2
        key = name.replace("-", "_")
        if isinstance(value, str) and isinstance(values.get(key), bool):
            raise InputError(f"{_where(path)}: '{name}': expected true or false, got {value!r}")
        if isinstance(value, (str, bool)) and not isinstance(values.get(key), bool) and \
                isinstance(values.get(key), (int, float)):
            shown = str(value).lower() if isinstance(value, bool) else repr(value)
            raise InputError(f"{_where(path)}: '{name}': expected a number, got {shown}")
        if key in POSITIVE and isinstance(value, float):
            raise InputError(f"{_where(path)}: '{name}': expected an integer, got {value!r}")
    for name, limit in POSITIVE.items():
        value = values[name]
        if value is not None and value < 1:
            raise InputError(f"{_where(path)}: '{name.replace('_', '-')}' must be at least 1, "
                             f"got {value}")
        if value is not None and value > limit:
            got = value if value < 10**30 else "a larger number"
            raise InputError(f"{_where(path)}: '{name.replace('_', '-')}' must be at most "
                             f"{limit:,}, got {got}")
    overhead = values["overhead"]
    if overhead is not None and not 0 <= overhead <= MAX_GIB:  # also refuses nan
        raise InputError(f"{_where(path)}: 'overhead' must be a number of GiB in "
                         f"0..{MAX_GIB:,}, got {overhead}")
    memory = values["gpu_memory"]
    problem = None if memory is None else gpu_memory_error(memory)
    if problem is not None:
        raise InputError(f"{_where(path)}: 'gpu-memory': {problem}")
    util = values["gpu_memory_utilization"]
    if util is not None and not 0 < util <= 1:
        raise InputError(f"{_where(path)}: 'gpu-memory-utilization' must be in (0, 1], "
                         f"got {util}")
    return Settings(**values)


def find(starts: Iterable[Path]) -> Path | None:
    """The settings file nearest to ``starts`` (files or directories), then the cwd."""
    seen: set[Path] = set()
    candidates = [*(p if is_dir(p) else p.parent for p in starts), Path.cwd()]
    for start in candidates:
        for directory in (start.resolve(), *start.resolve().parents):
            if directory in seen:
                break
            seen.add(directory)
            for name in CONFIG_FILES:
                file = directory / name
                if is_file(file) and _table(file) is not None:
                    return file
    return None


def load(starts: Iterable[Path] = (), *, config: str | None = None,
         isolated: bool = False) -> LoadedSettings:
    """The settings for a run: ``--config FILE``, else the nearest file, else defaults
    (``--isolated``: defaults, no file read)."""
    if isolated:
        return LoadedSettings()
    if config is not None:
        path = Path(config)
        if not is_file(path):
            raise InputError(f"{config}: no such settings file")
        table = _table(path)
        if table is None:
            raise InputError(f"{config}: has no [tool.kvlint] table")
        return LoadedSettings(settings=parse(path, table), path=path)
    found = find(starts)
    if found is None:
        return LoadedSettings()
    return LoadedSettings(settings=parse(found, _table(found) or {}), path=found)
