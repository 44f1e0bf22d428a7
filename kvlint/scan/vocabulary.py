"""The names the source analyzer recognises: K/V-like variables, K/V and latent projections,
cache attributes and writes, attention consumers, head-dim expansions, and the fix texts of
its messages. Pure data and string tests; nothing here looks at a syntax tree."""

from __future__ import annotations

import re

KV_NAME = re.compile(
    r"^(?:k|v|xk|xv|kv|key|value|keys|values)$"
    r"|^(?:k|v|xk|xv|key|value|keys|values)_\w+$"
    r"|^\w+_(?:k|v|key|value|keys|values)$"
)
NOT_KV = re.compile(
    r"weight|bias|mask|len|size|dim|shape|num|idx|index|mapping|pos|scale|proj|norm|head|ids"
    r"|top_|max_|min_|rank|type|name|dtype|device|fn|func|id$|offset|stride|count|list|dict"
)
CACHE_ATTR = re.compile(
    r"(?:k|v|key|value)s?_cache|cache_(?:k|v|key|value)|past_key|^kv_buffer|^k_buffer|^v_buffer"
)
CACHE_RECV = re.compile(r"cache|past|kv_pool|pool", re.IGNORECASE)
KV_PROJ = frozenset(
    {
        "k_proj",
        "v_proj",
        "wk",
        "wv",
        "key",
        "value",
        "to_k",
        "to_v",
        "key_proj",
        "value_proj",
        "k_lin",
        "v_lin",
        "linear_k",
        "linear_v",
        "k_linear",
        "v_linear",
    }
)
UPPROJ = frozenset({"kv_b_proj", "wkv_b", "kv_up_proj", "kv_b", "w_kv_b", "kv_b_linear"})
MATMUL = frozenset({"matmul", "bmm", "baddbmm", "einsum", "mm"})
SDPA = frozenset({"scaled_dot_product_attention", "sdpa"})
ATTN_CALLEE = re.compile(r"attn|attention", re.IGNORECASE)
NOT_ATTN_CALLEE = re.compile(
    r"dropout|mask|norm|get_interface|proj|layer|_init|bias|weight|config|output", re.IGNORECASE
)
CACHE_WRITE = frozenset(
    {
        "store",
        "set_kv_buffer",
        "reshape_and_cache",
        "reshape_and_cache_flash",
        "write_to_cache",
        "write_kv",
        "append_kv",
        "set_kv",
        "save_kv",
        "store_kv",
        "update_kv_cache",
        "concat_and_cache_mla",
    }
)
NO_PROPAGATE = frozenset(
    {
        "len",
        "size",
        "dim",
        "numel",
        "item",
        "tolist",
        "isinstance",
        "hasattr",
        "getattr",
        "int",
        "float",
        "bool",
        "str",
        "type",
        "print",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "zeros",
        "ones",
        "empty",
        "full",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "randn",
        "rand",
        "tensor",
        "arange",
        "stride",
        "data_ptr",
        "get_seq_length",
        "softmax",
        "log_softmax",
        "get_interface",
    }
)
RESHAPE = frozenset({"reshape", "view", "flatten", "contiguous", "clone"})
LOAD_TIME_FN = re.compile(
    r"^__init__$|load|weight|convert|checkpoint|state_dict|^_?init_|quantiz|^from_", re.IGNORECASE
)
LIBRARIES = frozenset({"torch", "F", "functional", "nn", "einops", "np", "jnp", "mx"})
GQA_TEST = re.compile(r"gqa", re.IGNORECASE)

FIX_GQA = (
    "pass the KV heads to an attention kernel that maps query heads to KV heads "
    "(SDPA enable_gqa=True, FlashAttention, an index mapping) instead of copying."
)
FIX_MLA = (
    "cache only the compressed latent and the rope key (kv_lora_rank + qk_rope_head_dim per "
    "token) and use a latent MLA kernel or fold the up-projection into the query/output side "
    "(matrix absorption)."
)



def is_kv_name(name: str) -> bool:
    return bool(KV_NAME.match(name)) and not NOT_KV.search(name)


def einops_head_repeat(pattern: str) -> bool:
    """``'b h s d -> b (h r) s d'``: an input axis grouped with a new axis on the output side."""
    if "->" not in pattern:
        return False
    lhs, rhs = pattern.split("->", 1)
    lhs_axes = set(re.findall(r"\w+", lhs))
    for group in re.findall(r"\(([^)]*)\)", rhs):
        axes = re.findall(r"\w+", group)
        if any(a in lhs_axes for a in axes) and any(a not in lhs_axes for a in axes):
            return True
    return False


ORIGIN_NAMES = ("repeat", "expand", "broadcast_to", *sorted(UPPROJ))
"""Every finding names an origin, and every origin starts at a call whose callee (the last
name of the called expression) is one of these or contains one (``repeat_interleave``):
``repeat_interleave``, ``.repeat`` and ``einops.repeat`` expand the KV heads, ``expand`` /
``broadcast_to`` start the ``expand`` + ``reshape`` form, the :data:`UPPROJ` names are the MLA
up-projection. A module-local helper only carries an origin that one of these calls made in
the same module. Keep this list in step with the calls in :mod:`kvlint.scan.data_flow`."""

_ORIGIN_LETTERS = frozenset("".join(ORIGIN_NAMES))
_UNSAFE_CHARS: dict[str, bool] = {}


def may_have_findings(text: str) -> bool:
    """``False`` when ``text`` cannot contain a call the analyzer reports, so its functions
    need not be walked: none of :data:`ORIGIN_NAMES` occurs in it, and no identifier can
    become one by Python's NFKC normalisation of names. That needs a non-ASCII character
    whose compatibility decomposition has one of those names' letters (fullwidth r, U+FF52;
    an accented e), since composition never produces an ASCII letter; a file with such a
    character is walked."""
    if any(name in text for name in ORIGIN_NAMES):
        return True
    if text.isascii():
        return False
    import unicodedata

    for char in set(text):
        if char < "\x80":
            continue
        unsafe = _UNSAFE_CHARS.get(char)
        if unsafe is None:
            unsafe = not _ORIGIN_LETTERS.isdisjoint(unicodedata.normalize("NFKD", char))
            _UNSAFE_CHARS[char] = unsafe
        if unsafe:
            return True
    return False
