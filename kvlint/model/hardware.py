"""The GPU table: memory capacity and bandwidth per GPU, and lookup by name.

Pure data, no I/O beyond reading ``gpus.toml``, which ships inside this package (see the header of
that file for units and conventions). ``find_gpu`` resolves a user-written name such as ``"h100"``,
``"H100_80GB"`` or ``"NVIDIA H100 80GB HBM3"`` (what ``nvidia-smi`` and torch print) to one entry.
"""

from __future__ import annotations

import difflib
import functools
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads the table with the tomli backport
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "Gpu",
    "GpuTableError",
    "MemoryBasis",
    "UnknownGpu",
    "find_gpu",
    "gpu_family",
    "gpu_names",
    "load_gpus",
    "mig_device",
    "normalize_gpu_name",
    "parse_gpus",
]

_DATA_PACKAGE = "kvlint.model"
_DATA_FILE = "gpus.toml"

VENDORS = frozenset({"nvidia", "amd"})
"""Vendors the table knows."""

_SEPARATORS = re.compile(r"[\s_\-]+")
_VENDOR_WORDS = frozenset({"nvidia", "amd", "instinct", "tesla", "geforce"})


class MemoryBasis(str, Enum):
    """Where ``Gpu.memory_bytes`` comes from."""

    NVIDIA_SMI = "nvidia-smi"
    """The total ``nvidia-smi`` reports (MiB x 2**20), seen in public logs."""
    ROCM_SMI = "rocm-smi"
    """The total ``rocm-smi`` reports in bytes, seen in public logs."""
    MARKETED = "marketed"
    """The spec-sheet figure in the vendor's unit, GB = 10**9 bytes (no driver figure found)."""


@dataclass(frozen=True)
class Gpu:
    """One GPU model: what the KV-cache arithmetic needs to know about it."""

    name: str
    """Canonical name, e.g. ``"H100-80GB"``."""
    vendor: str
    """``"nvidia"`` or ``"amd"``."""
    memory_bytes: int
    """Total device memory in bytes; see ``memory_basis`` for what the number is."""
    bandwidth_bytes_per_s: int
    """Peak DRAM bandwidth from the spec sheet, bytes per second."""
    aliases: tuple[str, ...] = ()
    """Other accepted spellings (lookups also ignore case, separators and vendor words)."""
    source: str = ""
    """Spec-sheet URL for the marketed memory and the bandwidth."""
    memory_type: str = ""
    """``"HBM3"``, ``"GDDR6"``, ..."""
    marketed_memory_gb: float = 0.0
    """The capacity printed on the spec sheet, in the vendor's GB."""
    memory_basis: MemoryBasis = MemoryBasis.MARKETED
    cuda_memory_bytes: int | None = None
    """Total the CUDA/HIP runtime reports (torch ``total_memory``), where public logs show it."""
    memory_note: str = ""
    memory_evidence: str = ""
    """Where the driver-reported number was seen."""
    verified: bool = False
    """Driver-reported memory and vendor spec-sheet bandwidth; ``note`` says why when false."""
    note: str = ""
    interconnect: str | None = None
    """``nvlink``, ``pcie`` or ``xgmi`` (:data:`INTERCONNECTS`), from the spec sheet; ``None``:
    not recorded."""

    @property
    def runtime_memory_bytes(self) -> int:
        """Best estimate of the total the serving engine sees: the CUDA/HIP runtime's figure when
        known, else ``memory_bytes``."""
        return self.cuda_memory_bytes if self.cuda_memory_bytes is not None else self.memory_bytes

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30

    @property
    def marketed_memory_bytes(self) -> int:
        """The spec-sheet capacity read as decimal GB."""
        return round(self.marketed_memory_gb * 10**9)

    @property
    def lookup_keys(self) -> tuple[str, ...]:
        """Normalised name and aliases, as ``find_gpu`` matches them."""
        return tuple(normalize_gpu_name(n) for n in (self.name, *self.aliases))

    def matches(self, name: str) -> bool:
        return normalize_gpu_name(name) in self.lookup_keys


class GpuTableError(ValueError):
    """The GPU table (``gpus.toml``) is malformed."""


class UnknownGpu(KeyError, ValueError):
    """``find_gpu`` was given a name that is neither a GPU name nor an alias.

    A ``KeyError`` (it is a failed lookup) and a ``ValueError`` (it is a bad user value).
    """

    def __init__(self, name: str, suggestions: tuple[str, ...], known: tuple[str, ...]) -> None:
        self.name = name
        self.suggestions = suggestions
        self.known = known
        hint = f" Did you mean {_or_list(suggestions)}?" if suggestions else ""
        self.message = f"unknown GPU {name!r}.{hint} Known GPUs: {', '.join(known)}."
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


def _or_list(names: tuple[str, ...]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def normalize_gpu_name(name: str) -> str:
    """Lookup key: case-folded, spaces/underscores/dashes removed, leading vendor words dropped.

    ``"NVIDIA H100 80GB HBM3"`` -> ``"h10080gbhbm3"``; ``"H100_80GB"`` -> ``"h10080gb"``.
    """
    tokens = [t for t in _SEPARATORS.split(name.strip().casefold()) if t]
    while len(tokens) > 1 and tokens[0] in _VENDOR_WORDS:
        tokens.pop(0)
    return "".join(tokens)


# --- parsing -------------------------------------------------------------------------------

_REQUIRED = frozenset(
    {
        "name",
        "vendor",
        "memory_type",
        "marketed_memory_gb",
        "memory_bytes",
        "memory_basis",
        "bandwidth_bytes_per_s",
        "source",
        "verified",
    }
)
_OPTIONAL = frozenset({"aliases", "cuda_memory_bytes", "memory_note", "memory_evidence", "note",
                       "interconnect"})
INTERCONNECTS = frozenset({"nvlink", "pcie", "xgmi"})
"""How the GPUs of one server are linked in the form the entry names: ``nvlink`` (SXM/HGX
modules on NVLink/NVSwitch), ``pcie`` (PCIe cards, an optional NVLink bridge aside), ``xgmi``
(AMD Infinity Fabric)."""


def _where(origin: str, index: int, name: object) -> str:
    label = f" ({name})" if isinstance(name, str) and name else ""
    return f"{origin}: gpu #{index + 1}{label}"


def _str(entry: Mapping[str, Any], key: str, where: str, *, empty: bool = False) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise GpuTableError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def _positive_int(entry: Mapping[str, Any], key: str, where: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise GpuTableError(f"{where}: {key} must be a positive integer, got {value!r}")
    return value


def _parse_entry(entry: object, index: int, origin: str) -> Gpu:
    if not isinstance(entry, dict):
        raise GpuTableError(f"{origin}: gpu #{index + 1} must be a table, got {entry!r}")
    where = _where(origin, index, entry.get("name"))
    missing = sorted(_REQUIRED - entry.keys())
    if missing:
        raise GpuTableError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(entry.keys() - _REQUIRED - _OPTIONAL)
    if unknown:
        raise GpuTableError(f"{where}: unknown key(s) {', '.join(unknown)}")

    vendor = _str(entry, "vendor", where)
    if vendor not in VENDORS:
        raise GpuTableError(f"{where}: vendor must be one of {sorted(VENDORS)}, got {vendor!r}")
    basis_text = _str(entry, "memory_basis", where)
    try:
        basis = MemoryBasis(basis_text)
    except ValueError:
        choices = [b.value for b in MemoryBasis]
        raise GpuTableError(
            f"{where}: memory_basis must be one of {choices}, got {basis_text!r}"
        ) from None
    marketed = entry["marketed_memory_gb"]
    if isinstance(marketed, bool) or not isinstance(marketed, (int, float)) or marketed <= 0:
        raise GpuTableError(f"{where}: marketed_memory_gb must be a positive number")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise GpuTableError(f"{where}: aliases must be a list of non-empty strings")
    verified = entry["verified"]
    if not isinstance(verified, bool):
        raise GpuTableError(f"{where}: verified must be true or false")
    cuda = None
    if "cuda_memory_bytes" in entry:
        cuda = _positive_int(entry, "cuda_memory_bytes", where)
    interconnect = entry.get("interconnect")
    if interconnect is not None and interconnect not in INTERCONNECTS:
        raise GpuTableError(f"{where}: interconnect must be one of {sorted(INTERCONNECTS)}, "
                            f"got {interconnect!r}")
    source = _str(entry, "source", where)
    if not source.startswith(("https://", "http://")):
        raise GpuTableError(f"{where}: source must be a URL, got {source!r}")

    gpu = Gpu(
        name=_str(entry, "name", where),
        vendor=vendor,
        memory_bytes=_positive_int(entry, "memory_bytes", where),
        bandwidth_bytes_per_s=_positive_int(entry, "bandwidth_bytes_per_s", where),
        aliases=tuple(aliases),
        source=source,
        memory_type=_str(entry, "memory_type", where),
        marketed_memory_gb=float(marketed),
        memory_basis=basis,
        cuda_memory_bytes=cuda,
        memory_note=_str(entry, "memory_note", where, empty=True),
        memory_evidence=_str(entry, "memory_evidence", where, empty=True),
        verified=verified,
        note=_str(entry, "note", where, empty=True),
        interconnect=interconnect,
    )
    if basis is MemoryBasis.NVIDIA_SMI and gpu.memory_bytes % 2**20:
        raise GpuTableError(f"{where}: an nvidia-smi total is a whole number of MiB")
    if basis is MemoryBasis.MARKETED and gpu.memory_bytes != gpu.marketed_memory_bytes:
        raise GpuTableError(f"{where}: a marketed memory_bytes must be marketed_memory_gb x 10**9")
    if basis is not MemoryBasis.MARKETED and not gpu.memory_evidence.strip():
        raise GpuTableError(f"{where}: a driver-reported memory_bytes needs memory_evidence")
    if not gpu.verified and not gpu.note.strip():
        raise GpuTableError(f"{where}: an unverified entry needs a note saying what is uncertain")
    return gpu


def parse_gpus(text: str, *, origin: str = _DATA_FILE) -> tuple[Gpu, ...]:
    """Parse and validate a GPU table in the ``gpus.toml`` format."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuTableError(f"{origin}: not valid TOML: {exc}") from exc
    extra = sorted(data.keys() - {"gpu"})
    if extra:
        raise GpuTableError(f"{origin}: unknown top-level key(s) {', '.join(extra)}")
    entries = data.get("gpu")
    if not isinstance(entries, list) or not entries:
        raise GpuTableError(f"{origin}: expected one or more [[gpu]] tables")
    gpus = tuple(_parse_entry(entry, i, origin) for i, entry in enumerate(entries))

    owner: dict[str, str] = {}
    for gpu in gpus:
        for spelling, key in zip((gpu.name, *gpu.aliases), gpu.lookup_keys, strict=True):
            if not key:
                raise GpuTableError(f"{origin}: {gpu.name}: {spelling!r} normalises to nothing")
            if key in owner:
                other = owner[key]
                what = "repeats" if other == gpu.name else f"clashes with {other}"
                raise GpuTableError(
                    f"{origin}: {gpu.name}: {spelling!r} {what} (both normalise to {key!r})"
                )
            owner[key] = gpu.name
    return gpus


# --- the shipped table ---------------------------------------------------------------------


@functools.cache
def load_gpus() -> tuple[Gpu, ...]:
    """The GPU table shipped with kvlint, in file order (parsed once)."""
    text = resources.files(_DATA_PACKAGE).joinpath(_DATA_FILE).read_text(encoding="utf-8")
    return parse_gpus(text, origin=f"{_DATA_PACKAGE}/{_DATA_FILE}")


@functools.cache
def _index() -> dict[str, Gpu]:
    return {key: gpu for gpu in load_gpus() for key in gpu.lookup_keys}


def gpu_names() -> tuple[str, ...]:
    """Canonical names, in table order."""
    return tuple(gpu.name for gpu in load_gpus())


def find_gpu(name: str) -> Gpu:
    """The GPU called ``name`` (canonical name or alias; case, spaces, underscores, dashes and a
    leading vendor word do not matter).

    Raises ``UnknownGpu`` (a ``KeyError`` and a ``ValueError``) listing close matches and every
    known name.
    """
    key = normalize_gpu_name(name)
    gpu = _index().get(key) if key else None
    if gpu is not None:
        return gpu
    mig = mig_device(name)
    if mig is not None:
        return mig
    raise UnknownGpu(name, _suggestions(key), gpu_names())


_MIG = re.compile(r"(?:^|[\s_\-])(?:mig[\s_\-]*)?((?:\d{1,2}c\.)?(\d{1,2})g\.(\d{1,4})gb)"
                  r"(?:\+\w+)*$", re.IGNORECASE)
"""A MIG device's name: ``[<parent> ][MIG ][<c>c.]<g>g.<mem>gb[+me]`` (NVIDIA MIG User
Guide, "MIG Device Names": GPU-instance compute slices, then the instance's memory in GB);
GPU Feature Discovery's single-strategy product label ``A100-SXM4-80GB-MIG-3g.40gb`` and
the device plugin's mixed-strategy resource ``nvidia.com/mig-3g.40gb`` end the same way."""


def mig_device(name: str) -> Gpu | None:
    """The MIG device ``name`` names (``MIG 3g.40gb``, ``A100-SXM4-80GB-MIG-1g.10gb``,
    ``mig-2g.20gb``), as a GPU of its own; ``None`` for any other name.

    Its memory is the one its name states, nominal: a share of the parent's table memory
    (``mem`` of the parent's marketed GB) when the name's start is a GPU of the table, else
    (no parent, or one the table lacks) ``mem`` GiB (a vendor "80GB" HBM part is 80 GiB
    to the driver, within a few percent). The driver reserves a little of each instance,
    so the real figure is somewhat lower; give ``--gpu-memory`` for the exact one. The
    bandwidth is the parent's same share (memory slices bring their memory controllers),
    unknown (0) without a parent."""
    found = _MIG.search(name.strip())
    if found is None:
        return None
    profile, memory_gb = found.group(1).lower(), int(found.group(3))
    if memory_gb <= 0 or int(found.group(2)) <= 0:
        return None
    head = name.strip()[:found.start()].strip(" _-")
    parent = _index().get(normalize_gpu_name(head)) if head else None
    if parent is not None and parent.vendor == "nvidia" and \
            0 < memory_gb <= parent.marketed_memory_gb:
        share = memory_gb / parent.marketed_memory_gb
        return Gpu(name=f"{parent.name} MIG {profile}", vendor="nvidia",
                   memory_bytes=int(parent.memory_bytes * share),
                   bandwidth_bytes_per_s=int(parent.bandwidth_bytes_per_s * share),
                   source=parent.source, memory_type=parent.memory_type,
                   marketed_memory_gb=float(memory_gb),
                   note=f"a MIG instance of {parent.name}: {memory_gb} of its "
                        f"{parent.marketed_memory_gb:g} GB, nominal")
    # no parent, or one kvlint does not know: the name's memory alone
    return Gpu(name=f"MIG {profile}", vendor="nvidia", memory_bytes=memory_gb * 2**30,
               bandwidth_bytes_per_s=0, marketed_memory_gb=float(memory_gb),
               note=f"a MIG instance of {memory_gb} GB (parent GPU not named), nominal")


def gpu_family(name: str) -> tuple[str, ...]:
    """The GPUs ``name`` names: the one it is (canonical name or alias), or every variant of
    a family it is the start of (``rtx-3080`` -> the 10 GB, 12 GB and Ti cards; ``a100`` ->
    every A100); ``()`` for anything else (``true``, ``large-models``, a name without a
    model number). No spelling guesses."""
    key = normalize_gpu_name(name)
    index = _index()
    if not key:
        return ()
    if key in index:
        return (index[key].name,)
    if len(key) < 2 or not any(c.isdigit() for c in key):
        return ()
    names: list[str] = []
    for k, gpu in index.items():
        if k.startswith(key) and gpu.name not in names:
            names.append(gpu.name)
    return tuple(names)


def _suggestions(key: str, limit: int = 5) -> tuple[str, ...]:
    """Canonical names close to ``key``: those it is a prefix of ("a100" -> every A100 variant),
    then difflib's closest spellings."""
    if not key:
        return ()
    index = _index()
    prefixed = [k for k in index if len(key) >= 2 and k.startswith(key)]
    close = difflib.get_close_matches(key, list(index), n=limit * 2, cutoff=0.6)
    names: list[str] = []
    for k in (*prefixed, *close):
        if index[k].name not in names:
            names.append(index[k].name)
    return tuple(names[:limit])
