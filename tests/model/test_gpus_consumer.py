"""The consumer and workstation GPUs people run engines on (kvlint/model/gpus.toml): exact
driver-reported memory, spec-sheet bandwidth, and every spelling a user or nvidia-smi writes."""

from __future__ import annotations

import pytest

from kvlint.model.hardware import MemoryBasis, UnknownGpu, find_gpu, load_gpus

MiB = 2**20


@pytest.mark.parametrize(
    ("name", "mib", "gb_per_s", "spellings"),
    [
        ("RTX-3090", 24_576, 936, ["3090", "RTX 3090", "NVIDIA GeForce RTX 3090",
                                   "rtx_3090_24gb"]),
        ("RTX-3090-Ti", 24_564, 1_008, ["3090 Ti", "3090Ti", "NVIDIA GeForce RTX 3090 Ti",
                                        "RTX-3090-Ti-24GB"]),
        ("RTX-4090", 24_564, 1_008, ["4090", "NVIDIA GeForce RTX 4090", "RTX-4090-24GB"]),
        ("RTX-4080", 16_376, 716.8, ["4080", "NVIDIA GeForce RTX 4080", "RTX 4080 16GB"]),
        ("RTX-5090", 32_607, 1_792, ["5090", "NVIDIA GeForce RTX 5090", "RTX-5090-32GB"]),
        ("RTX-A6000", 49_140, 768, ["A6000", "NVIDIA RTX A6000", "NVIDIA-RTX-A6000"]),
        ("RTX-6000-Ada", 49_140, 960, ["NVIDIA RTX 6000 Ada Generation", "6000 Ada",
                                       "RTX 6000 Ada 48GB"]),
        ("RTX-PRO-6000", 97_887, 1_792, ["NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                                         "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                                         "RTX PRO 6000 Blackwell", "rtx-pro-6000-96gb"]),
        ("A40", 46_068, 696, ["NVIDIA A40", "a40-48gb"]),
        ("L40", 46_068, 864, ["NVIDIA L40", "NVIDIA-L40", "L40 48GB"]),
    ],
)
def test_gpu_exact_and_resolvable(name: str, mib: int, gb_per_s: float,
                                  spellings: list[str]) -> None:
    gpu = find_gpu(name)
    assert gpu.name == name
    assert gpu.vendor == "nvidia"
    assert gpu.memory_basis is MemoryBasis.NVIDIA_SMI
    assert gpu.memory_bytes == mib * MiB
    assert gpu.bandwidth_bytes_per_s == round(gb_per_s * 10**9)
    assert gpu.source.startswith("https://www.nvidia.com/")
    assert gpu.memory_evidence
    for spelling in spellings:
        assert find_gpu(spelling) is gpu, spelling


def test_rtx_4080_bandwidth_is_the_memory_clock_times_the_bus() -> None:
    assert find_gpu("RTX-4080").bandwidth_bytes_per_s == 22.4e9 * 256 // 8


@pytest.mark.parametrize("ambiguous", ["RTX 6000", "Quadro RTX 6000", "6000", "RTX PRO 6000D"])
def test_ambiguous_names_fail_with_suggestions(ambiguous: str) -> None:
    with pytest.raises(UnknownGpu):
        find_gpu(ambiguous)


def test_ecc_modes_are_stated() -> None:
    for name in ("RTX-A6000", "RTX-6000-Ada", "RTX-PRO-6000"):
        assert "ECC off" in find_gpu(name).memory_note
    for name in ("A40", "L40"):
        assert "ECC on" in find_gpu(name).memory_note


def test_amd_entries_have_sources() -> None:
    mi300x, mi325x = find_gpu("MI300X"), find_gpu("MI325X")
    assert mi300x.memory_basis is MemoryBasis.ROCM_SMI and mi300x.verified
    assert mi300x.source.startswith("https://www.amd.com/") and mi300x.memory_evidence
    assert mi325x.memory_basis is MemoryBasis.MARKETED and not mi325x.verified
    assert mi325x.source.startswith("https://www.amd.com/") and mi325x.note


def test_unverified_new_entry_says_why() -> None:
    pro = find_gpu("RTX-PRO-6000")
    assert not pro.verified and "edition" in pro.note
    assert len(load_gpus()) == len({g.name for g in load_gpus()})
