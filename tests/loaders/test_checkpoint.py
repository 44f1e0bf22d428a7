"""kvlint.loaders.checkpoint: exact weight bytes from safetensors headers and index files,
locally and from a loopback Hub (tests/hub_server.py); safetensors files are written by hand."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from kvlint.errors import HubError, InputError
from kvlint.loaders.checkpoint import (
    INDEX_NAME,
    CheckpointSize,
    checkpoint_size,
    hub_checkpoint_size,
    local_checkpoint_size,
    read_safetensors_header,
)
from tests.hub_server import FakeHub

DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "I8": 1}
CONFIG = json.dumps({"model_type": "llama"}).encode()


def write_safetensors(
    path: Path,
    tensors: dict[str, tuple[str, list[int]]],
    *,
    metadata: dict[str, str] | None = None,
    data: bool = True,
) -> int:
    """Write a real safetensors file (header JSON padded to 8 bytes, then zeros); return the
    bytes of tensor data. ``data=False`` leaves the data out (a header-only file)."""
    header: dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + (b"\0" * offset if data else b""))
    return offset


def write_index(directory: Path, total: object, weight_map: dict[str, str]) -> None:
    body = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (directory / INDEX_NAME).write_text(json.dumps(body), encoding="utf-8")


# ----------------------------------------------------------------------------------- local
def test_single_file_header(tmp_path: Path) -> None:
    expected = write_safetensors(
        tmp_path / "model.safetensors",
        {"embed.weight": ("BF16", [10, 8]), "norm.weight": ("F32", [8]),
         "proj.weight": ("F8_E4M3", [8, 8])},
        metadata={"format": "pt"},
    )
    header = read_safetensors_header(tmp_path / "model.safetensors")
    assert header["__metadata__"] == {"format": "pt"}
    got = local_checkpoint_size(tmp_path)
    assert got is not None
    assert got.total_bytes == expected == 10 * 8 * 2 + 8 * 4 + 64
    assert got.num_tensors == 3
    assert got.dtype_bytes == {"BF16": 160, "F32": 32, "F8_E4M3": 64}
    assert "1 safetensors header" in got.source and str(tmp_path) in got.source


def test_sharded_headers_are_summed(tmp_path: Path) -> None:
    a = write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"a": ("BF16", [4, 4])})
    b = write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"b": ("BF16", [2, 3])})
    got = local_checkpoint_size(tmp_path)
    assert got is not None and got.total_bytes == a + b and got.num_tensors == 2
    assert got.source.startswith("2 safetensors headers")


def test_index_total_size_wins(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "model-00001-of-00001.safetensors", {"a": ("BF16", [4, 4])})
    write_index(tmp_path, 16_060_522_496, {"a": "model-00001-of-00001.safetensors"})
    got = local_checkpoint_size(tmp_path)
    assert got == CheckpointSize(16_060_522_496, str(tmp_path / INDEX_NAME))


def test_index_without_total_size_falls_back_to_headers(tmp_path: Path) -> None:
    size = write_safetensors(tmp_path / "model.safetensors", {"a": ("F16", [4])})
    (tmp_path / INDEX_NAME).write_text(json.dumps({"weight_map": {}}), encoding="utf-8")
    got = local_checkpoint_size(tmp_path)
    assert got is not None and got.total_bytes == size


def test_float_total_size_accepted(tmp_path: Path) -> None:
    write_index(tmp_path, 1234.0, {})
    got = local_checkpoint_size(tmp_path)
    assert got is not None and got.total_bytes == 1234


def test_bad_total_size(tmp_path: Path) -> None:
    write_index(tmp_path, "lots", {})
    with pytest.raises(InputError, match="total_size"):
        local_checkpoint_size(tmp_path)


def test_config_path_means_its_directory(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(CONFIG)
    size = write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [3])})
    got = local_checkpoint_size(tmp_path / "config.json")
    assert got is not None and got.total_bytes == size
    via_ref = checkpoint_size(str(tmp_path / "config.json"))
    assert via_ref is not None and via_ref.total_bytes == size


def test_tensor_data_is_never_read(tmp_path: Path) -> None:
    """The header claims 2 GiB the file does not hold: only the header is read."""
    write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [1024, 1024, 1024])},
                      data=False)
    got = local_checkpoint_size(tmp_path)
    assert got is not None and got.total_bytes == 2 * 1024**3


def test_only_model_files_count(tmp_path: Path) -> None:
    """Mistral repos ship consolidated.safetensors beside the HF shards; adapters are not
    model weights."""
    size = write_safetensors(tmp_path / "model.safetensors", {"w": ("BF16", [8])})
    write_safetensors(tmp_path / "consolidated.safetensors", {"w": ("BF16", [8])})
    write_safetensors(tmp_path / "adapter_model.safetensors", {"lora": ("BF16", [2])})
    got = local_checkpoint_size(tmp_path)
    assert got is not None and got.total_bytes == size
    (tmp_path / "model.safetensors").unlink()
    got = local_checkpoint_size(tmp_path)
    assert got is not None and got.total_bytes == size and "1 safetensors" in got.source


def test_no_weights_is_none(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(CONFIG)
    (tmp_path / "pytorch_model.bin").write_bytes(b"not inspected")
    assert local_checkpoint_size(tmp_path) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x01\x02", "shorter than 8 bytes"),
        (struct.pack("<Q", 10**12), "header length"),
        (struct.pack("<Q", 100) + b"{}", "truncated"),
        (struct.pack("<Q", 4) + b"nope", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (struct.pack("<Q", 20) + b'{"w":{"dtype":"F16"}}'[:20], "not valid JSON"),
    ],
)
def test_malformed_files(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "model.safetensors").write_bytes(content)
    with pytest.raises(InputError, match=message):
        local_checkpoint_size(tmp_path)


def test_bad_offsets(tmp_path: Path) -> None:
    raw = json.dumps({"w": {"dtype": "F16", "shape": [2], "data_offsets": [4, 0]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    with pytest.raises(InputError, match="data_offsets"):
        local_checkpoint_size(tmp_path)


def test_not_a_path_nor_a_repo_id(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        checkpoint_size(str(tmp_path / "missing" / "config.json"))


# ------------------------------------------------------------------------------------- Hub
def index_bytes(total: int) -> bytes:
    body = {"metadata": {"total_size": total},
            "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}}
    return json.dumps(body).encode()


def test_hub_index(fake_hub: FakeHub) -> None:
    commit = fake_hub.add_repo("org/model", {"config.json": CONFIG,
                                             INDEX_NAME: index_bytes(16_060_522_496)})
    got = hub_checkpoint_size("org/model")
    assert got == CheckpointSize(16_060_522_496, f"org/model@{commit}/{INDEX_NAME}")
    assert any(INDEX_NAME in path for _, path in fake_hub.requests)
    via_ref = checkpoint_size("org/model@main")
    assert via_ref == CheckpointSize(16_060_522_496, f"org/model@main/{INDEX_NAME}")


def test_hub_revision(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {INDEX_NAME: index_bytes(100)})
    fake_hub.add_repo("org/model", {INDEX_NAME: index_bytes(200)}, branch="v2")
    assert hub_checkpoint_size("org/model").total_bytes == 100  # type: ignore[union-attr]
    got = hub_checkpoint_size("org/model", revision="v2")
    assert got == CheckpointSize(200, f"org/model@v2/{INDEX_NAME}")


def test_hub_repo_without_index_is_none(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/small", {"config.json": CONFIG, "model.safetensors": b"\0" * 16})
    assert hub_checkpoint_size("org/small") is None
    assert checkpoint_size("org/small") is None


def test_hub_other_errors_propagate(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {INDEX_NAME: index_bytes(100)})
    with pytest.raises(HubError, match="not found"):
        hub_checkpoint_size("org/missing")
    with pytest.raises(HubError, match="Revision 'nope' not found"):
        hub_checkpoint_size("org/model", revision="nope")


def test_hub_offline_uses_the_cache(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {INDEX_NAME: index_bytes(100)})
    fake_hub.add_repo("org/other", {INDEX_NAME: index_bytes(5)})
    assert hub_checkpoint_size("org/model") is not None
    fake_hub.clear_requests()
    got = hub_checkpoint_size("org/model", offline=True)
    assert got is not None and got.total_bytes == 100
    assert fake_hub.requests == []
    with pytest.raises(HubError, match="not in the local Hugging Face cache"):
        hub_checkpoint_size("org/other", offline=True)


def test_hub_bad_index(fake_hub: FakeHub) -> None:
    fake_hub.add_repo("org/model", {INDEX_NAME: b"{not json"})
    with pytest.raises(InputError, match="invalid JSON"):
        hub_checkpoint_size("org/model")
