"""The GPU table (kvlint/model/gpus.toml) and its lookup (kvlint.model.hardware)."""

from __future__ import annotations

import dataclasses
import importlib.resources
from urllib.parse import urlparse

import pytest

from kvlint.model import hardware
from kvlint.model.hardware import (
    Gpu,
    GpuTableError,
    MemoryBasis,
    UnknownGpu,
    find_gpu,
    gpu_names,
    load_gpus,
    normalize_gpu_name,
    parse_gpus,
)

MiB = 2**20
GPUS = load_gpus()
REQUIRED = ("A10G", "L4", "L40S", "A100-40GB", "A100-80GB", "H100-80GB", "H100-PCIe", "H100-NVL",
            "H200", "H20", "B200", "GB200", "MI300X", "MI325X")


# --------------------------------------------------------------------------- the data file
def test_table_ships_as_package_data() -> None:
    assert importlib.resources.files("kvlint.model").joinpath("gpus.toml").is_file()


def test_load_is_cached() -> None:
    assert load_gpus() is load_gpus()


def test_required_gpus_present() -> None:
    assert set(REQUIRED) <= set(gpu_names())
    assert gpu_names() == tuple(g.name for g in GPUS)


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.name)
def test_every_entry_is_well_formed(gpu: Gpu) -> None:
    assert gpu.vendor in hardware.VENDORS
    assert gpu.memory_type
    assert urlparse(gpu.source).scheme == "https"
    # Bandwidth in bytes/s: between 100 GB/s and 20 TB/s, a whole number of 0.1 GB/s (the RTX
    # 4080's 22.4 Gbps x 256 bits is 716.8 GB/s).
    assert 100 * 10**9 <= gpu.bandwidth_bytes_per_s <= 20 * 10**12
    assert gpu.bandwidth_bytes_per_s % 10**8 == 0
    # A driver-reported total lies within 10% of the marketed GB figure: catches MiB/GiB slips.
    assert 0.9 < gpu.memory_bytes / gpu.marketed_memory_bytes < 1.1
    if gpu.memory_basis is MemoryBasis.NVIDIA_SMI:
        assert gpu.memory_bytes % MiB == 0
    if gpu.memory_basis is MemoryBasis.MARKETED:
        assert gpu.memory_bytes == gpu.marketed_memory_bytes
        assert not gpu.verified
    if gpu.cuda_memory_bytes is not None:
        # The runtime never sees more than the driver total, and not much less.
        assert 0.97 * gpu.memory_bytes < gpu.cuda_memory_bytes <= gpu.memory_bytes
    assert gpu.runtime_memory_bytes <= gpu.memory_bytes
    if not gpu.verified:
        assert gpu.note


def test_names_and_aliases_unique_after_normalisation() -> None:
    keys = [key for gpu in GPUS for key in gpu.lookup_keys]
    assert len(keys) == len(set(keys))
    assert all(keys)


def test_gpu_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPUS[0].memory_bytes = 1  # type: ignore[misc]


# --------------------------------------------------------------------------- exact numbers
@pytest.mark.parametrize(
    ("name", "mib", "bandwidth"),
    [
        ("H100-80GB", 81_559, 3_350 * 10**9),
        ("H100-PCIe", 81_559, 2_000 * 10**9),
        ("H100-NVL", 95_830, 3_900 * 10**9),
        ("H200", 143_771, 4_800 * 10**9),
        ("H20", 97_871, 4_000 * 10**9),
        ("A100-40GB", 40_960, 1_555 * 10**9),
        ("A100-80GB", 81_920, 2_039 * 10**9),
        ("A100-PCIe-80GB", 81_920, 1_935 * 10**9),
        ("A10G", 23_028, 600 * 10**9),
        ("L4", 23_034, 300 * 10**9),
        ("L40S", 46_068, 864 * 10**9),
        ("B200", 183_359, 8_000 * 10**9),
        ("GB200", 189_471, 8_000 * 10**9),
        ("MI300X", 196_592, 5_300 * 10**9),
    ],
)
def test_exact_memory_and_bandwidth(name: str, mib: int, bandwidth: int) -> None:
    gpu = find_gpu(name)
    assert gpu.memory_bytes == mib * MiB
    assert gpu.bandwidth_bytes_per_s == bandwidth


def test_h100_figures() -> None:
    h100 = find_gpu("H100")
    assert h100.memory_bytes == 85_520_809_984
    assert round(h100.memory_gib, 2) == 79.65
    assert h100.marketed_memory_gb == 80
    assert h100.memory_basis is MemoryBasis.NVIDIA_SMI
    assert h100.cuda_memory_bytes == 81_082 * MiB
    assert h100.runtime_memory_bytes == 81_082 * MiB
    assert h100.verified


def test_mi300x_reported_in_bytes_by_rocm_smi() -> None:
    mi300x = find_gpu("MI300X")
    assert mi300x.memory_basis is MemoryBasis.ROCM_SMI
    assert mi300x.memory_bytes == 206_141_652_992
    assert mi300x.vendor == "amd"


def test_marketed_entries_are_flagged() -> None:
    mi325x = find_gpu("MI325X")
    assert mi325x.memory_basis is MemoryBasis.MARKETED
    assert mi325x.memory_bytes == 256 * 10**9
    assert mi325x.bandwidth_bytes_per_s == 6 * 10**12
    assert not mi325x.verified


def test_blackwell_per_gpu_capacity() -> None:
    # HGX/DGX B200 ship 180 GB per GPU; GB200 NVL72 186 GB per GPU.
    assert find_gpu("B200").marketed_memory_gb == 180
    assert find_gpu("GB200").marketed_memory_gb == 186
    assert find_gpu("B200").memory_bytes == 183_359 * MiB  # nvidia-smi
    assert find_gpu("B200").runtime_memory_bytes == 182_631 * MiB  # torch total_memory


# --------------------------------------------------------------------------- lookup
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("H100-80GB", "H100-80GB"),
        ("h100", "H100-80GB"),
        ("H100_80GB", "H100-80GB"),
        ("h100-sxm", "H100-80GB"),
        ("H100 SXM5", "H100-80GB"),
        ("  h100  ", "H100-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-80GB"),  # nvidia-smi / torch device name
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("NVIDIA H100 NVL", "H100-NVL"),
        ("nvidia_h200", "H200"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-PCIe-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
        ("Tesla V100-SXM2-32GB", "V100-32GB"),
        ("Tesla T4", "T4"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("rtx4090", "RTX-4090"),
        ("a10g", "A10G"),
        ("NVIDIA L40S", "L40S"),
        ("AMD Instinct MI300X", "MI300X"),
        ("mi325x", "MI325X"),
        ("GB200-NVL72", "GB200"),
        ("hgx_b200", "B200"),
    ],
)
def test_find_gpu(query: str, expected: str) -> None:
    assert find_gpu(query).name == expected


@pytest.mark.parametrize("gpu", GPUS, ids=lambda g: g.name)
def test_every_name_and_alias_finds_its_gpu(gpu: Gpu) -> None:
    for spelling in (gpu.name, *gpu.aliases, gpu.name.lower(), gpu.name.replace("-", "_")):
        assert find_gpu(spelling) is gpu
        assert gpu.matches(spelling)


def test_normalisation() -> None:
    assert normalize_gpu_name("NVIDIA H100 80GB HBM3") == "h10080gbhbm3"
    assert normalize_gpu_name("H100_80GB") == normalize_gpu_name("h100-80gb") == "h10080gb"
    # A vendor word alone is kept, so it cannot match everything.
    assert normalize_gpu_name("NVIDIA") == "nvidia"


# --------------------------------------------------------------------------- unknown names
def test_unknown_gpu_is_a_key_error_and_a_value_error() -> None:
    with pytest.raises(UnknownGpu) as info:
        find_gpu("H10")
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, ValueError)
    assert info.value.name == "H10"
    assert "H100-80GB" in info.value.suggestions
    message = str(info.value)
    assert message.startswith("unknown GPU 'H10'. Did you mean ")
    assert "Known GPUs: " in message
    assert all(name in message for name in gpu_names())


def test_ambiguous_name_lists_the_variants() -> None:
    # Bare "A100" is deliberately not an alias: 40 GB and 80 GB variants differ.
    with pytest.raises(UnknownGpu) as info:
        find_gpu("A100")
    assert {"A100-40GB", "A100-80GB", "A100-PCIe-40GB", "A100-PCIe-80GB"} <= set(
        info.value.suggestions
    )


@pytest.mark.parametrize("query", ["", "   ", "NVIDIA", "quantum-accelerator-9000"])
def test_hopeless_names_still_list_known_gpus(query: str) -> None:
    with pytest.raises(KeyError) as info:
        find_gpu(query)
    assert "Known GPUs: " in str(info.value)


def test_unknown_gpu_caught_as_value_error() -> None:
    with pytest.raises(ValueError, match=r"unknown GPU 'B300'\. Did you mean B200"):
        find_gpu("B300")


# --------------------------------------------------------------------------- validation
_ENTRY = """
[[gpu]]
name = "X1"
vendor = "nvidia"
memory_type = "HBM3"
marketed_memory_gb = 80
memory_bytes = 85_520_809_984
memory_basis = "nvidia-smi"
memory_evidence = "a log"
bandwidth_bytes_per_s = 3_350_000_000_000
source = "https://example.com/x1"
verified = true
"""


def test_parse_minimal_entry() -> None:
    (gpu,) = parse_gpus(_ENTRY)
    assert gpu.name == "X1"
    assert gpu.aliases == ()
    assert gpu.cuda_memory_bytes is None
    assert gpu.runtime_memory_bytes == gpu.memory_bytes


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("vendor = \"nvidia\"", "vendor = \"intel\""), "vendor must be one of"),
        (("memory_basis = \"nvidia-smi\"", "memory_basis = \"guess\""), "memory_basis"),
        (("memory_bytes = 85_520_809_984", "memory_bytes = 85_520_809_985"), "whole number of MiB"),
        (("memory_bytes = 85_520_809_984", "memory_bytes = 0"), "positive integer"),
        (("memory_bytes = 85_520_809_984", "memory_bytes = \"80GB\""), "positive integer"),
        (("verified = true", "verified = false"), "needs a note"),
        (("verified = true", "verfied = true"), "missing verified"),
        (("source = \"https://example.com/x1\"", "source = \"spec sheet\""), "must be a URL"),
        (("memory_evidence = \"a log\"", "memory_evidence = \"\""), "needs memory_evidence"),
        (("memory_basis = \"nvidia-smi\"", "memory_basis = \"marketed\""), "x 10**9"),
        (("name = \"X1\"", "name = \"X1\"\nalias = [\"Y\"]"), "unknown key(s) alias"),
    ],
)
def test_parse_rejects_bad_entries(edit: tuple[str, str], message: str) -> None:
    old, new = edit
    with pytest.raises(GpuTableError) as info:
        parse_gpus(_ENTRY.replace(old, new))
    assert str(info.value).startswith("gpus.toml: gpu #1")
    assert message in str(info.value)


def test_parse_rejects_alias_clash() -> None:
    second = _ENTRY.replace('name = "X1"', 'name = "X2"\naliases = ["x_1"]')
    with pytest.raises(GpuTableError, match="'x_1' clashes with X1"):
        parse_gpus(_ENTRY + second)


def test_parse_rejects_redundant_alias() -> None:
    text = _ENTRY.replace('name = "X1"', 'name = "X1"\naliases = ["NVIDIA x1"]')
    with pytest.raises(GpuTableError, match="repeats"):
        parse_gpus(text)


@pytest.mark.parametrize("text", ["", "gpu = 1", "[[gpu]]\nname = 'x'\n[other]\n", "not toml ["])
def test_parse_rejects_bad_files(text: str) -> None:
    with pytest.raises(GpuTableError):
        parse_gpus(text)


def test_gpu_family_names_a_card_or_its_variants_never_a_guess() -> None:
    from kvlint.model.hardware import gpu_family

    assert gpu_family("rtx3090") == ("RTX-3090",)
    assert gpu_family("nvidia-tesla-t4") == ("T4",)
    assert set(gpu_family("rtx-3080")) == {"RTX-3080-10GB", "RTX-3080-12GB", "RTX-3080-Ti"}
    assert "A100-80GB" in gpu_family("a100")
    for word in ("true", "gpu-llm", "large-models", "8", "", "h1OO"):
        assert gpu_family(word) == ()
