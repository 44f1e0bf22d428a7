"""Exact weight bytes of a checkpoint, when one can be read without loading any tensor.

* A local model directory: ``model.safetensors.index.json``'s ``metadata.total_size``; else
  the sum of the tensor sizes declared in the headers of the directory's ``*.safetensors``
  files. Only the 8-byte little-endian header length and the JSON header are read; tensor
  data is never read, and nothing is imported or executed from the directory.
* A Hub model: ``model.safetensors.index.json`` fetched through
  :func:`kvlint.loaders.hub.download_config` (cache first, ``--offline`` honoured). A repo
  without that file (a single ``model.safetensors``, or no safetensors at all) gives
  ``None``; every other Hub failure raises its :class:`~kvlint.errors.HubError`.

These are the bytes *stored*, which is what the engine loads with three caveats callers
should know: a float32 checkpoint is served in 16-bit (half these bytes); multi-token-
prediction layers stored in the checkpoint (DeepSeek-V3's layer 61) are included although
engines skip them unless speculating; tied embeddings stored twice are counted twice.
"""

from __future__ import annotations

import json
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kvlint.errors import HubError, InputError
from kvlint.loaders import hub, hub_cache, local

__all__ = [
    "INDEX_NAME",
    "CheckpointSize",
    "checkpoint_size",
    "hub_checkpoint_size",
    "local_checkpoint_size",
    "read_safetensors_header",
]

INDEX_NAME: Final = "model.safetensors.index.json"
MAX_HEADER_BYTES: Final = 100_000_000
"""safetensors refuses headers above 100 MB; so does kvlint."""
SAFETENSORS_DTYPE_BYTES: Final = {
    "F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2,
    "I16": 2, "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1,
    "BOOL": 1,
}


@dataclass(frozen=True)
class CheckpointSize:
    """The bytes a checkpoint's weights take, and where the number comes from."""

    total_bytes: int
    source: str
    """``path/model.safetensors.index.json``, ``N safetensors headers in DIR``, or
    ``org/name@rev/model.safetensors.index.json``."""
    num_tensors: int | None = None
    """When read from headers: how many tensors."""
    dtype_bytes: dict[str, int] = field(default_factory=dict, compare=False)
    """When read from headers: bytes per safetensors dtype (``BF16``, ``F32``...)."""


# ----------------------------------------------------------------------------------- local
def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a ``.safetensors`` file (tensor data is not read)."""
    try:
        with path.open("rb") as file:
            prefix = file.read(8)
            if len(prefix) != 8:
                raise InputError(f"{path}: not a safetensors file (shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", prefix)
            if length > MAX_HEADER_BYTES:
                raise InputError(
                    f"{path}: not a safetensors file (header length {length} exceeds "
                    f"{MAX_HEADER_BYTES} bytes)"
                )
            raw = file.read(length)
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(raw) != length:
        raise InputError(f"{path}: truncated safetensors header ({len(raw)} of {length} bytes)")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(f"{path}: safetensors header is not valid JSON ({err})") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: safetensors header is not a JSON object")
    return header


def _tensor_bytes(path: Path, name: str, info: Any) -> tuple[str, int]:
    """(dtype, bytes) of one header entry, from its ``data_offsets``."""
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise InputError(f"{path}: tensor {name!r} has no valid 'data_offsets'")
    dtype = info.get("dtype")
    return (dtype if isinstance(dtype, str) else "?"), offsets[1] - offsets[0]


def _weight_files(directory: Path) -> list[Path]:
    """The safetensors files holding the model: ``model*.safetensors`` (HF layout), else
    ``consolidated*.safetensors`` (Mistral layout); never both, never adapters."""
    for pattern in ("model*.safetensors", "consolidated*.safetensors"):
        files = sorted(p for p in directory.glob(pattern) if p.is_file())
        if files:
            return files
    return []


def _index_total(data: Any, where: str) -> int | None:
    """``metadata.total_size`` of an index JSON (None when it has none)."""
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(data).__name__}")
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if total is None:
        return None
    if isinstance(total, str) and total.isdigit():
        total = int(total)
    if isinstance(total, float) and total.is_integer():
        total = int(total)
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise InputError(f"{where}: metadata.total_size must be a non-negative integer, "
                         f"got {total!r}")
    return total


def local_checkpoint_size(path: Path) -> CheckpointSize | None:
    """Weight bytes of a local model directory (or the directory of a ``config.json``)."""
    directory = path if path.is_dir() else path.parent
    index = directory / INDEX_NAME
    if index.is_file():
        total = _index_total(local.read_json(index), str(index))
        if total is not None:
            return CheckpointSize(total, str(index))
    files = _weight_files(directory)
    if not files:
        return None
    total = 0
    count = 0
    by_dtype: dict[str, int] = {}
    for file in files:
        for name, info in read_safetensors_header(file).items():
            if name == "__metadata__":
                continue
            dtype, size = _tensor_bytes(file, name, info)
            total += size
            count += 1
            by_dtype[dtype] = by_dtype.get(dtype, 0) + size
    noun = "header" if len(files) == 1 else "headers"
    return CheckpointSize(total, f"{len(files)} safetensors {noun} in {directory}", count,
                          by_dtype)


# ------------------------------------------------------------------------------------- Hub
def _missing_entry(err: HubError) -> bool:
    """Whether ``err`` says the Hub has no such file (the repo and revision exist)."""
    if "huggingface_hub.errors" not in sys.modules:
        return False  # none of its errors can be in the chain (an offline miss by path)
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    cause: BaseException | None = err.__cause__
    seen: list[BaseException] = []
    while cause is not None and all(cause is not s for s in seen):
        if isinstance(cause, EntryNotFoundError) and not isinstance(
            cause, LocalEntryNotFoundError
        ):
            return True
        seen.append(cause)
        cause = cause.__cause__ or cause.__context__
    return False


def _cached_absent(repo_id: str, revision: str | None) -> bool:
    """Whether the Hugging Face cache records that the repo has no index at ``revision`` (the
    ``.no_exist`` marker an earlier 404 left): offline, that is the Hub's answer too."""
    return hub_cache.cached_absent(repo_id, INDEX_NAME, revision)


def hub_checkpoint_size(
    repo_id: str, *, revision: str | None = None, offline: bool = False
) -> CheckpointSize | None:
    """Weight bytes of a Hub model from its ``model.safetensors.index.json`` (None: none)."""
    if offline and _cached_absent(repo_id, revision):
        return None  # the cache's own answer, read by path (no huggingface_hub import)
    try:
        fetched = hub.download_config(
            repo_id, revision=revision, offline=offline, filename=INDEX_NAME
        )
    except HubError as err:
        if _missing_entry(err) or _cached_absent(repo_id, revision):
            return None
        raise
    shown = revision or fetched.commit or "main"
    source = f"{repo_id}@{shown}/{INDEX_NAME}"
    total = _index_total(local.read_json(fetched.path), source)
    return None if total is None else CheckpointSize(total, source)


def checkpoint_size(
    ref: str, *, revision: str | None = None, offline: bool = False
) -> CheckpointSize | None:
    """Weight bytes of ``ref``: an existing local path wins, else a Hub id (``@rev``)."""
    path = Path(ref)
    if path.exists():
        return local_checkpoint_size(path)
    if not hub.looks_like_hub_id(ref):
        raise InputError(f"{ref}: no such file or directory, and not a Hugging Face repo id")
    repo_id, at_revision = hub.split_hub_ref(ref)
    return hub_checkpoint_size(repo_id, revision=at_revision or revision, offline=offline)


# ----------------------------------------------------------------- a format's own files
def format_files_present(ref: str, names: tuple[str, ...], *, path: str | None = None,
                         revision: str | None = None, offline: bool = False) -> bool | None:
    """Whether any of ``names`` (a pre-quantized format's settings files, which vLLM's
    ``get_quant_config`` looks for beside config.json) is in the checkpoint: ``True``,
    ``False`` (looked for and not there), or ``None`` when kvlint cannot tell (offline and
    not cached, the Hub unreachable, a bare config.json with no weights beside it).

    ``path`` is a local config's path: its directory answers when it holds weights (a bare
    copy of config.json says nothing of the files its checkpoint has). A Hub id is asked
    file by file through :func:`kvlint.loaders.hub.download_config` (cache first; the
    ``.no_exist`` marker of an earlier 404 answers offline)."""
    if path is not None:
        directory = Path(path).parent
        if any((directory / name).is_file() for name in names):
            return True
        weights = _weight_files(directory) or any(directory.glob("*.bin"))
        return False if weights else None
    if not hub.looks_like_hub_id(ref):
        return None
    repo_id, at_revision = hub.split_hub_ref(ref)
    revision = at_revision or revision
    for name in names:
        if hub_cache.cached_absent(repo_id, name, revision):
            continue
        try:
            hub.download_config(repo_id, revision=revision, offline=offline, filename=name)
        except HubError as err:
            if _missing_entry(err) or hub_cache.cached_absent(repo_id, name, revision):
                continue
            return None
        return True
    return False
