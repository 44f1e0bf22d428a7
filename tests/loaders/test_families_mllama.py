"""Llama-3.2-Vision (``mllama``) as vLLM 0.33.0 serves it: through the Transformers backend.

``MllamaForConditionalGeneration`` is in ``_PREVIOUSLY_SUPPORTED_MODELS`` ("0.10.2",
``model_executor/models/registry.py`` ~857), but ``inspect_model_cls`` (~1367-1418) tries the
Transformers backend before ``_raise_for_unsupported``: transformers'
``MllamaForConditionalGeneration`` is backend-compatible, so the model resolves to
``TransformersMultiModalForCausalLM``. Its ``_create_attention_instances``
(``model_executor/models/transformers/base.py`` ~609-705) gives *every* decoder layer,
the ``cross_attention_layers`` included, a decoder ``Attention`` with the text config's KV
heads and head size, and ``get_kv_cache_spec`` returns one ``FullAttentionSpec`` per layer
(measured with vLLM 0.33.0: 100 specs of 8 KV heads x 128 for the 90B config).
Llama-3.2-90B-Vision: 100 layers (20 of them cross-attention), 64 query heads, 8 KV heads
(``MllamaTextConfig`` default), head_dim 8192 / 64 = 128: 100 * 2 * 8 * 128 * 2 = 409,600
bytes per token at tp 1.
"""

from __future__ import annotations

import pytest

from kvlint.model import kv
from tests.helpers import geometry


@pytest.mark.parametrize(("tp", "want"), [(1, 409_600), (2, 204_800), (4, 102_400),
                                          (8, 51_200), (16, 51_200)])
def test_every_layer_including_cross_attention_holds_kv(tp: int, want: int) -> None:
    g = geometry("gghfez--Llama-3.3-90B-Vision-merged")
    assert (g.num_kv_layers, g.num_kv_heads, g.head_dim) == (100, 8, 128)
    fp = kv.footprint(g, kv.resolve_kv_dtype("auto", g), kv.ParallelLayout(tp=tp))
    assert fp.heads_ok and fp.kv_ok
    assert fp.bytes_per_token_per_gpu == want


@pytest.mark.parametrize(("tp", "want"), [(1, 163_840), (2, 81_920), (4, 40_960),
                                          (8, 20_480), (16, 20_480)])
def test_llama_3_2_11b_vision(tp: int, want: int) -> None:
    """40 layers (8 cross-attention), 8 KV heads x 128: 40 * 2 * 8 * 128 * 2 = 163,840 at
    tp 1 (vLLM 0.33.0: 40 FullAttentionSpecs)."""
    g = geometry("meta-llama--Llama-3.2-11B-Vision")
    fp = kv.footprint(g, kv.resolve_kv_dtype("auto", g), kv.ParallelLayout(tp=tp))
    assert fp.bytes_per_token_per_gpu == want
