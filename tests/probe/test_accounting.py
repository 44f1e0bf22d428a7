"""KV byte accounting of small hand-built CPU tensor programs, with byte counts worked by hand.

Shapes used throughout (bf16 = 2 B, fp32 = 4 B):

- ``k`` [1, 8, 512, 64] bf16: 262,144 elements, 524,288 B;
- ``k`` repeated to 32 heads [1, 32, 512, 64] bf16: 1,048,576 elements, 2,097,152 B;
- one more token [1, 8, 513, 64] bf16: 262,656 elements, 525,312 B;
- one token of 8 heads [1, 8, 1, 64] bf16: 512 elements, 1,024 B.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from kvlint.probe.accounting import (  # noqa: E402
    MATERIALISATION_THRESHOLD,
    KvAccounting,
    SdpaRecorder,
    unique_bytes,
    unique_elements,
)

BF16 = torch.bfloat16

K_BYTES = 1 * 8 * 512 * 64 * 2  # 524,288
K_REP_BYTES = 1 * 32 * 512 * 64 * 2  # 2,097,152
K_513_BYTES = 1 * 8 * 513 * 64 * 2  # 525,312
TOKEN_BYTES = 1 * 8 * 1 * 64 * 2  # 1,024


def _kv(tokens: int = 512, heads: int = 8, dtype: torch.dtype = BF16) -> torch.Tensor:
    return torch.randn(1, heads, tokens, 64, dtype=dtype)


def repeat_kv(k: torch.Tensor, n_rep: int) -> torch.Tensor:
    """HF ``repeat_kv``: expand the KV heads, then reshape (which copies)."""
    b, h, s, d = k.shape
    return k[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)


def _storage(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


# ------------------------------------------------------------------------------- helpers
def test_hand_computed_constants() -> None:
    assert (K_BYTES, K_REP_BYTES, K_513_BYTES, TOKEN_BYTES) == (524_288, 2_097_152, 525_312,
                                                                1_024)


def test_unique_elements_and_bytes_of_ordinary_tensors() -> None:
    k = _kv()
    assert unique_elements(k) == 262_144
    assert unique_bytes(k) == 524_288
    assert unique_bytes(k.float()) == 1_048_576
    # A transpose or a permutation addresses the same elements.
    assert unique_elements(k.transpose(-1, -2)) == 262_144
    # A slice addresses only its own elements.
    assert unique_elements(k[:, :, :100]) == 8 * 100 * 64
    assert unique_bytes(k[:, :2]) == 2 * 512 * 64 * 2
    # A 0-dim tensor is one element.
    assert unique_elements(torch.tensor(3.0)) == 1
    assert unique_bytes(torch.tensor(3.0)) == 4


def test_unique_elements_and_bytes_count_a_broadcast_dimension_once() -> None:
    k = _kv()
    expanded = k[:, :, None].expand(1, 8, 4, 512, 64)
    assert expanded.numel() == 1_048_576
    assert unique_elements(expanded) == 262_144
    assert unique_bytes(expanded) == K_BYTES
    column = torch.randn(4, 1).expand(4, 5)
    assert unique_elements(column) == 4
    assert unique_bytes(column) == 16
    scalar = torch.tensor(2.0).expand(3, 7)
    assert unique_elements(scalar) == 1
    assert unique_bytes(scalar) == 4


def test_unique_elements_of_an_empty_broadcast_tensor_is_zero() -> None:
    empty = torch.randn(1).expand(0)
    assert empty.stride() == (0,)
    assert unique_elements(empty) == 0


# ------------------------------------------------------------------------------------ views
def test_pure_view_chain_records_nothing() -> None:
    k = _kv()
    acc = KvAccounting([k])
    with acc:
        v = k.view(1, 8, 512, 64).transpose(-1, -2)  # [1, 8, 64, 512]
        v = v.unsqueeze(0).expand(3, 1, 8, 64, 512)
        v = v[:, :, :, :, 1:10]
        v = v.unsqueeze(-1)
    assert acc.is_tainted(v)  # shares k's storage
    assert acc.records == []
    traffic = acc.summarise([k])
    assert traffic.attention_read_bytes == 0
    assert traffic.attention_write_bytes == 0
    assert traffic.cache_read_bytes == 0
    assert traffic.cache_write_bytes == 0
    assert traffic.materialisations == ()


def test_ops_on_untainted_tensors_record_nothing() -> None:
    k = _kv()
    other = _kv()
    acc = KvAccounting([k])
    with acc:
        out = (other * 2).float() @ other.float().transpose(-1, -2)
    assert not acc.is_tainted(out)
    assert acc.records == []


def test_metadata_only_ops_record_no_read() -> None:
    k = _kv()
    acc = KvAccounting([k])
    with acc:
        a = k.new_empty((3, 4))
        b = torch.empty_like(k)
        c = torch.zeros_like(k)
    assert acc.records == []
    assert not acc.is_tainted(a)
    assert not acc.is_tainted(b)
    assert not acc.is_tainted(c)
    assert acc.summarise([k]).attention_read_bytes == 0


# --------------------------------------------------------------------------- materialisations
def test_gqa_repeat_kv_is_one_clone_materialisation_then_bmm_reads_the_copy() -> None:
    k = _kv()
    q = torch.randn(1, 32, 1, 64, dtype=BF16)
    acc = KvAccounting([k])
    with acc:
        k_rep = k[:, :, None].expand(1, 8, 4, 512, 64).reshape(1, 32, 512, 64)
        assert len(acc.records) == 1
        scores = q @ k_rep.transpose(-1, -2)
    assert acc.is_tainted(k_rep)
    assert not acc.is_tainted(scores)  # [1, 32, 1, 512]: a consumer ends the trail

    clone, bmm = acc.records
    assert clone.op == "aten.clone"
    assert clone.read_bytes == 524_288  # the stride-0 head copies read once
    assert clone.write_bytes == 2_097_152
    assert clone.unique_in_elements == 262_144
    assert clone.out_elements == 1_048_576
    assert clone.amplification == 4.0
    assert bmm.op == "aten.bmm"
    assert bmm.read_bytes == 2_097_152
    assert bmm.write_bytes == 0
    assert bmm.out_elements == 0

    traffic = acc.summarise([k])
    assert traffic.attention_read_bytes == 2_621_440
    assert traffic.attention_write_bytes == 2_097_152
    assert traffic.cache_read_bytes == 0
    assert traffic.cache_write_bytes == 0
    (mat,) = traffic.materialisations
    assert mat.op == "aten.clone"
    assert mat.amplification == 4.0
    assert mat.bytes == 2_097_152
    assert mat.calls == 1
    assert mat.module is None
    assert mat.where is not None
    assert mat.where.startswith("test_gqa_repeat_kv_is_one_clone_materialisation")


def test_materialisation_names_the_python_caller_and_the_module() -> None:
    k = _kv()
    acc = KvAccounting([k])
    acc.module_stack.append("model.layers.0.self_attn")
    with acc:
        repeat_kv(k, 4)
        repeat_kv(k, 4)
    (mat,) = acc.summarise([k]).materialisations
    assert mat.where is not None
    assert mat.where.startswith("repeat_kv (")
    assert "test_accounting.py:" in mat.where
    assert mat.module == "model.layers.0.self_attn"
    assert mat.calls == 2
    assert mat.bytes == 2 * 2_097_152


def test_repeat_interleave_is_flagged_with_amplification_4() -> None:
    k = _kv()
    acc = KvAccounting([k])
    with acc:
        k_rep = torch.repeat_interleave(k, 4, dim=1)
    assert k_rep.shape == (1, 32, 512, 64)
    assert acc.is_tainted(k_rep)
    mats = acc.summarise([k]).materialisations
    assert mats  # whatever ATen ops it decomposes into
    assert all(m.amplification == 4.0 for m in mats)
    assert sum(m.bytes for m in mats) == 2_097_152


def test_mla_latent_up_projection_is_a_materialisation_and_a_consumer_ends_the_taint() -> None:
    latent = torch.randn(1, 513, 512, dtype=BF16)  # 262,656 elements, 525,312 B
    w = torch.randn(512, 4096, dtype=BF16)  # untainted weights
    q = torch.randn(1, 1, 4096, dtype=BF16)
    acc = KvAccounting([latent])
    with acc:
        per_head = latent @ w  # [1, 513, 4096]: 2,101,248 elements, 4,202,496 B
        scores = q @ per_head.transpose(-1, -2)  # [1, 1, 513]
    assert acc.is_tainted(per_head)
    assert not acc.is_tainted(scores)

    up, consumer = acc.records
    assert up.read_bytes == 525_312  # W is not KV
    assert up.write_bytes == 4_202_496
    assert up.amplification == 8.0
    assert consumer.read_bytes == 4_202_496
    assert consumer.write_bytes == 0

    traffic = acc.summarise([latent])
    assert traffic.attention_read_bytes == 525_312 + 4_202_496
    assert traffic.attention_write_bytes == 4_202_496
    (mat,) = traffic.materialisations
    assert mat.op == up.op
    assert mat.amplification == 8.0
    assert mat.bytes == 4_202_496


def test_dtype_cast_reads_bf16_writes_fp32_and_is_not_a_materialisation() -> None:
    k = _kv()
    acc = KvAccounting([k])
    with acc:
        k32 = k.float()
    assert acc.is_tainted(k32)
    (cast,) = acc.records
    assert cast.read_bytes == 524_288
    assert cast.write_bytes == 1_048_576
    assert cast.amplification == 1.0
    assert cast.amplification < MATERIALISATION_THRESHOLD
    traffic = acc.summarise([k])
    assert traffic.materialisations == ()
    assert traffic.attention_read_bytes == 524_288
    assert traffic.attention_write_bytes == 1_048_576


def test_same_tensor_passed_twice_is_read_once() -> None:
    k = _kv()
    acc = KvAccounting([k])
    with acc:
        doubled = torch.add(k, k)
    assert acc.is_tainted(doubled)  # elementwise: as large as what it read
    (add,) = acc.records
    assert add.read_bytes == 524_288
    assert add.write_bytes == 524_288
    assert add.unique_in_elements == 262_144
    assert add.amplification == 1.0


def test_k_and_v_are_read_separately() -> None:
    k, v = _kv(), _kv()
    acc = KvAccounting([k, v])
    with acc:
        kv = torch.stack([k, v])
    assert acc.is_tainted(kv)
    (stack,) = acc.records
    assert stack.read_bytes == 2 * 524_288
    assert stack.write_bytes == 2 * 524_288
    assert stack.amplification == 1.0


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def test_rope_on_cached_keys_stays_tainted_and_its_consumer_is_counted() -> None:
    k = _kv()
    cos = torch.randn(1, 1, 512, 64, dtype=BF16)
    sin = torch.randn(1, 1, 512, 64, dtype=BF16)
    q = torch.randn(1, 8, 1, 64, dtype=BF16)
    acc = KvAccounting([k])
    with acc:
        rotated = k * cos + _rotate_half(k) * sin
        q @ rotated.transpose(-1, -2)
    assert acc.is_tainted(rotated)
    assert acc.records[-1].op == "aten.bmm"
    assert acc.records[-1].read_bytes == 524_288


# ---------------------------------------------------------------------------- cache updates
def test_dynamic_cache_cat_is_cache_management_when_its_output_is_the_cache() -> None:
    cache_k = _kv()
    new_k = _kv(tokens=1)  # the new token: not yet KV
    acc = KvAccounting([cache_k])
    with acc:
        cache_k = torch.cat([cache_k, new_k], dim=-2)
    assert acc.is_tainted(cache_k)
    (cat,) = acc.records
    assert cat.op == "aten.cat"
    assert cat.read_bytes == 524_288  # only the old cache is KV
    assert cat.write_bytes == 525_312
    assert cat.amplification == 513 / 512  # below the materialisation threshold

    traffic = acc.summarise([cache_k])
    assert traffic.cache_read_bytes == 524_288
    assert traffic.cache_write_bytes == 525_312
    assert traffic.attention_read_bytes == 0
    assert traffic.attention_write_bytes == 0
    assert traffic.cache_bytes == 525_312
    assert traffic.materialisations == ()


def test_the_same_cat_not_given_as_cache_counts_as_attention() -> None:
    cache_k = _kv()
    new_k = _kv(tokens=1)
    acc = KvAccounting([cache_k])
    with acc:
        torch.cat([cache_k, new_k], dim=-2)
    traffic = acc.summarise([cache_k])  # the old cache: not what cat wrote
    assert traffic.attention_read_bytes == 524_288
    assert traffic.attention_write_bytes == 525_312
    assert traffic.cache_read_bytes == 0
    assert traffic.cache_write_bytes == 0
    assert traffic.cache_bytes == 524_288


def test_static_cache_index_copy_writes_one_token_and_reads_no_cache() -> None:
    cache = torch.zeros(1, 8, 16, 64, dtype=BF16)  # 16,384 B
    new = _kv(tokens=1)  # 1,024 B, untainted
    acc = KvAccounting([cache])
    with acc:
        cache.index_copy_(2, torch.tensor([5]), new)
    (write,) = acc.records
    assert write.op == "aten.index_copy_"
    assert write.read_bytes == 0
    assert write.write_bytes == 1_024
    assert write.mutated == (_storage(cache),)
    assert write.out_storages == ()

    traffic = acc.summarise([cache])
    assert traffic.cache_read_bytes == 0
    assert traffic.cache_write_bytes == 1_024
    assert traffic.attention_read_bytes == 0
    assert traffic.attention_write_bytes == 0
    assert traffic.cache_bytes == 16_384
    assert traffic.materialisations == ()


def test_static_cache_slice_copy_writes_one_token_and_reads_no_cache() -> None:
    cache = torch.zeros(1, 8, 16, 64, dtype=BF16)
    new = _kv(tokens=1)
    acc = KvAccounting([cache])
    with acc:
        cache[:, :, 5:6].copy_(new)
    traffic = acc.summarise([cache])
    assert traffic.cache_read_bytes == 0
    assert traffic.cache_write_bytes == 1_024
    assert traffic.attention_read_bytes == 0


def test_cat_with_out_writes_the_whole_result() -> None:
    cache_k = _kv()
    new_k = _kv(tokens=1)
    buf = torch.empty(1, 8, 513, 64, dtype=BF16)
    acc = KvAccounting([cache_k])
    with acc:
        torch.cat([cache_k, new_k], dim=-2, out=buf)
    traffic = acc.summarise([buf])
    assert traffic.cache_read_bytes == 524_288
    assert traffic.cache_write_bytes == 525_312


def test_in_place_elementwise_op_on_kv_reads_it() -> None:
    k = _kv()
    acc = KvAccounting([k])
    with acc:
        k.mul_(2)
    (mul,) = acc.records
    assert mul.read_bytes == 524_288
    assert mul.write_bytes == 524_288


def test_cache_bytes_is_the_storage_of_the_given_cache_tensors() -> None:
    k, v = _kv(), _kv()
    acc = KvAccounting([k, v])
    assert acc.summarise([k, v]).cache_bytes == 2 * 524_288
    # A view of a storage already given is not counted again.
    assert acc.summarise([k, v, k[:, :, :10], v.transpose(-1, -2)]).cache_bytes == 2 * 524_288
    # A static cache's slice holds its whole preallocated storage.
    static = torch.zeros(1, 8, 1024, 64, dtype=BF16)
    assert acc.summarise([static[:, :, :512]]).cache_bytes == 1_048_576
    assert acc.summarise([]).cache_bytes == 0


# ------------------------------------------------------------------------------------- SDPA
def _sdpa_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    q = torch.randn(1, 32, 1, 64, dtype=BF16)
    return q, _kv(tokens=513), _kv(tokens=513)


def test_sdpa_under_the_recorder_is_one_fused_consumer_of_k_and_v() -> None:
    q, k, v = _sdpa_inputs()
    acc = KvAccounting([k, v])
    recorder = SdpaRecorder(acc)
    with recorder, acc:
        out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    assert out.shape == (1, 32, 1, 64)
    assert not acc.is_tainted(out)

    (record,) = acc.records  # none of the CPU kernel's internal ops
    assert record.op == "scaled_dot_product_attention"
    assert record.read_bytes == 2 * 525_312
    assert record.write_bytes == 0
    assert record.out_elements == 0

    traffic = acc.summarise([k, v])
    assert traffic.attention_read_bytes == 1_050_624
    assert traffic.attention_write_bytes == 0
    assert traffic.cache_read_bytes == 0
    assert traffic.cache_write_bytes == 0
    assert traffic.materialisations == ()

    (call,) = recorder.calls
    assert call.enable_gqa is True
    assert call.has_mask is False
    assert call.is_causal is False
    assert call.query_shape == (1, 32, 1, 64)
    assert call.key_shape == (1, 8, 513, 64)
    assert call.value_shape == (1, 8, 513, 64)
    assert call.dtype == "bfloat16"


def test_sdpa_recorder_reads_positional_mask_and_causal_flag() -> None:
    q, k, v = _sdpa_inputs()
    mask = torch.ones(1, 1, 1, 513, dtype=torch.bool)
    acc = KvAccounting([k, v])
    recorder = SdpaRecorder(acc)
    with recorder, acc:
        F.scaled_dot_product_attention(q, k, v, mask, 0.0, False, enable_gqa=True)
    (call,) = recorder.calls
    assert call.has_mask is True
    assert call.is_causal is False
    assert call.enable_gqa is True
    assert acc.summarise([k, v]).attention_read_bytes == 1_050_624  # the mask is not KV


def test_sdpa_with_the_same_tensor_as_k_and_v_reads_it_once() -> None:
    kv = _kv(tokens=10, dtype=torch.float32)  # 5,120 elements, 20,480 B
    acc = KvAccounting([kv])
    recorder = SdpaRecorder(acc)
    with recorder, acc:
        F.scaled_dot_product_attention(torch.randn(1, 8, 1, 64), kv, kv)
    (record,) = acc.records
    assert record.read_bytes == 20_480
    (call,) = recorder.calls
    assert call.dtype == "float32"
    assert call.enable_gqa is False


def test_sdpa_recorder_without_accounting_only_records() -> None:
    q, k, v = _sdpa_inputs()
    recorder = SdpaRecorder()
    with recorder:
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True, is_causal=False)
    (call,) = recorder.calls
    assert call.enable_gqa is True
    assert call.key_shape == (1, 8, 513, 64)


def test_sdpa_without_the_recorder_counts_the_cpu_kernel_internals() -> None:
    """Documents what happens without :class:`SdpaRecorder`: the accounting sees the CPU
    kernel's ATen ops, not one fused consumer.

    On torch 2.13 CPU the default path is a single ``_scaled_dot_product_flash_attention_for_cpu``
    call that reads K and V once (the same 1,050,624 B); forcing the math backend shows what the
    recorder hides: K and V upcast and copied to the 32 query heads (a 4x materialisation) and
    read again by two ``bmm``.
    """
    q, k, v = _sdpa_inputs()
    acc = KvAccounting([k, v])
    with acc:
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    default = acc.summarise([k, v])
    assert all(r.op != "scaled_dot_product_attention" for r in acc.records)
    assert default.attention_read_bytes >= 1_050_624

    acc = KvAccounting([k, v])
    with sdpa_kernel(SDPBackend.MATH), acc:
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    math = acc.summarise([k, v])
    assert math.attention_read_bytes > 1_050_624
    assert any(m.amplification == 4.0 for m in math.materialisations)

    acc = KvAccounting([k, v])
    with sdpa_kernel(SDPBackend.MATH), SdpaRecorder(acc), acc:
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    fused = acc.summarise([k, v])
    assert fused.attention_read_bytes == 1_050_624
    assert fused.materialisations == ()
