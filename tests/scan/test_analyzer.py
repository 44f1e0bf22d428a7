"""Tests of the ast-only source analyzer (KV401-KV404).

Fixtures under fixtures/sources/ were written for these tests; the transformers checks read the
installed package's files as text (never importing them).
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from kvlint.scan.analyzer import SourceFinding, scan_source

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "fixtures" / "sources"


def _scan(name: str) -> list[SourceFinding]:
    path = SOURCES / name
    return scan_source(path.read_text(encoding="utf-8"), str(path))


def _positions(findings: list[SourceFinding]) -> list[tuple[str, int, int, str, str]]:
    return [(f.code, f.line, f.column, f.function, f.variable) for f in findings]


def _transformers_root() -> Path:
    spec = importlib.util.find_spec("transformers")  # locates the package; imports nothing
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("transformers is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _scan_tf(rel: str) -> list[SourceFinding]:
    path = _transformers_root() / rel
    if not path.is_file():
        pytest.skip(f"{rel} not in the installed transformers")
    return scan_source(path.read_text(encoding="utf-8"), str(path))


# ------------------------------------------------------------------ fixtures: positives


def test_kv401_repeat_kv_helper() -> None:
    findings = _scan("gqa_repeat_kv.py")
    assert _positions(findings) == [
        ("KV401", 18, 18, "eager_attention", "key_states"),
        ("KV401", 19, 20, "eager_attention", "value_states"),
    ]
    first = findings[0]
    assert first.data["helper"] == "repeat_kv"
    assert first.data["factor"] == "num_key_value_groups"
    assert first.data["consumer_line"] == 20
    assert first.message.startswith(
        "key_states is expanded by repeat_kv (line 18) in eager_attention and read by "
        "torch.matmul (line 20): the KV heads are copied num_key_value_groups times per "
        "decode step; pass the KV heads to an attention kernel that maps query heads to KV "
        "heads (SDPA enable_gqa=True, FlashAttention, an index mapping) instead of copying."
    )
    assert findings[1].data["consumer_line"] == 22


def test_kv401_inline_expansions() -> None:
    findings = _scan("gqa_inline.py")
    assert _positions(findings) == [
        ("KV401", 15, 13, "Attention.forward", "k"),
        ("KV401", 16, 13, "Attention.forward", "v"),
        ("KV401", 24, 16, "RepeatAttention.forward", "keys"),
        ("KV401", 32, 18, "expand_attention", "key_states"),
        ("KV401", 37, 9, "einops_attention", "k"),
    ]
    helpers = [f.data["helper"] for f in findings]
    assert helpers == [
        "repeat_interleave",
        "repeat_interleave",
        ".repeat",
        "expand+reshape",
        "einops.repeat",
    ]
    assert all(f.data["factor"] == "n_rep" for f in findings)
    assert findings[2].data["consumer"] == "the @ operator"


def test_kv401_conditional_fallback_path() -> None:
    findings = _scan("sdpa_fallback.py")
    assert _positions(findings) == [
        ("KV401", 21, 15, "sdpa_attention_forward", "key"),
        ("KV401", 22, 17, "sdpa_attention_forward", "value"),
    ]
    for f in findings:
        assert f.data["fallback"] is True
        assert "on the path where enable_gqa is not used" in f.message
        assert f.data["consumer_line"] == 23


def test_kv402_expanded_kv_is_cached() -> None:
    findings = _scan("gqa_cache.py")
    assert _positions(findings) == [
        ("KV402", 17, 22, "CachedAttention.forward", "key_states"),
        ("KV402", 25, 17, "StaticCacheAttention.forward", "k_rep"),
    ]
    assert findings[0].data["cache_line"] == 19
    assert findings[1].data["cache_line"] == 26
    assert "written to the KV cache" in findings[0].message


def test_kv403_full_kv_mla_cache() -> None:
    findings = _scan("mla_full_cache.py")
    assert _positions(findings) == [
        ("KV403", 18, 13, "DeepseekV2Attention.forward", "kv"),
        ("KV403", 35, 14, "MLA.forward", "kv"),
    ]
    assert findings[0].data == {
        "cache_line": 27,
        "cache_write": "past_key_value.update",
        "helper": "kv_b_proj",
    }
    assert findings[1].data["helper"] == "wkv_b"
    assert findings[1].data["cache_line"] == 39


def test_kv404_latent_cached_but_not_absorbed() -> None:
    findings = _scan("mla_not_absorbed.py")
    assert _positions(findings) == [
        ("KV404", 26, 36, "LatentAttention.forward", "key_states"),
        ("KV404", 35, 14, "LatentBuffer.forward", "kv"),
    ]
    assert findings[0].data["helper"] == "expand_kv"
    assert findings[0].data["cache_line"] == 25
    assert findings[0].data["consumer"] == "attention_interface"
    assert findings[1].data["consumer"] == "torch.einsum"
    assert "no matrix absorption" in findings[0].message


# ------------------------------------------------------------------ fixtures: safe shapes


def test_safe_shapes_produce_nothing() -> None:
    assert _scan("safe_shapes.py") == []


@pytest.mark.parametrize(
    "source",
    [
        # SDPA with enable_gqa=True on the un-repeated heads
        "import torch.nn.functional as F\n"
        "def attn(q, key, value):\n"
        "    return F.scaled_dot_product_attention(q, key, value, enable_gqa=True)\n",
        # index tensor mapping query heads to KV heads
        "import torch\n"
        "def attn(q, k, v, n, g):\n"
        "    kv_head_mapping = torch.arange(0, n).repeat_interleave(g, dim=1)\n"
        "    return paged_attention(q, k, v, kv_head_mapping)\n",
        # weight duplication at load time
        "def load_weights(self, key):\n"
        "    key = key.repeat_interleave(4, dim=1)\n"
        "    return self.attention(key)\n",
        # repeat on the sequence dim is not a head copy
        "import torch\n"
        "def attn(q, key):\n"
        "    key = key.repeat_interleave(2, dim=2)\n"
        "    return torch.matmul(q, key)\n",
        # expanded but never read by attention
        "def f(key):\n    key = key.repeat_interleave(2, dim=1)\n    return key.sum()\n",
    ],
)
def test_safe_snippets(source: str) -> None:
    assert scan_source(source, "snippet.py") == []


def test_invalid_python_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"^broken\.py:2: invalid Python: "):
        scan_source("x = 1\ndef f(:\n    pass\n", "broken.py")


def test_expansion_inline_in_consumer_is_reported() -> None:
    src = (
        "import torch\ndef attn(q, k):\n    return torch.matmul(q, k.repeat_interleave(4, dim=1))\n"
    )
    findings = scan_source(src, "x.py")
    assert _positions(findings) == [("KV401", 3, 28, "attn", "<expr>")]


# ------------------------------------------------------------------ real code (transformers)


def test_transformers_llama_eager_repeat_kv() -> None:
    findings = _scan_tf("models/llama/modeling_llama.py")
    kv401 = [f for f in findings if f.code == "KV401"]
    assert {f.function for f in kv401} == {"eager_attention_forward"}
    assert {f.variable for f in kv401} == {"key_states", "value_states"}
    assert all(f.data["helper"] == "repeat_kv" for f in kv401)
    assert all(f.data["factor"] == "num_key_value_groups" for f in kv401)
    assert not [f for f in findings if f.code in ("KV402", "KV403", "KV404")]


def test_transformers_sdpa_fallback() -> None:
    findings = _scan_tf("integrations/sdpa_attention.py")
    assert [f.code for f in findings] == ["KV401", "KV401"]
    assert {f.variable for f in findings} == {"key", "value"}
    for f in findings:
        assert f.function == "sdpa_attention_forward"
        assert f.data["fallback"] is True
        assert "on the path where enable_gqa is not used" in f.message
        assert "scaled_dot_product_attention" in str(f.data["consumer"])


@pytest.mark.parametrize(
    ("rel", "cls"),
    [
        ("models/deepseek_v3/modeling_deepseek_v3.py", "DeepseekV3Attention"),
        ("models/deepseek_v2/modeling_deepseek_v2.py", "DeepseekV2Attention"),
    ],
)
def test_transformers_deepseek_latent_not_absorbed(rel: str, cls: str) -> None:
    # transformers 5.24 caches the latent (cache.update(kv_nope, k_rot, ...)) and rebuilds
    # per-head K/V with self.expand_kv (kv_b_proj) every step: KV404, not KV403.
    findings = _scan_tf(rel)
    mla = [f for f in findings if f.code in ("KV403", "KV404")]
    assert [(f.code, f.function, f.data["helper"]) for f in mla] == [
        ("KV404", f"{cls}.forward", "expand_kv")
    ]
    assert mla[0].data["consumer"] == "attention_interface"


def test_transformers_whole_package_is_fast_and_never_crashes() -> None:
    root = _transformers_root()
    files = sorted(root.rglob("*.py"))
    start = time.perf_counter()
    codes: dict[str, int] = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for f in scan_source(text, str(path)):
            codes[f.code] = codes.get(f.code, 0) + 1
    elapsed = time.perf_counter() - start
    assert len(files) > 500
    assert codes.get("KV401", 0) > 100
    assert codes.get("KV403", 0) == 0
    assert elapsed < 120, f"{len(files)} files took {elapsed:.1f}s"
