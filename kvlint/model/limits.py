"""Upper bounds on what a config, a settings file or the command line may claim.

A config is input from a pull request or a Hub repo: ``num_hidden_layers: 1e9`` must end in
a one-line error, not in a billion-entry layer list. Each bound sits far above the largest
value among the real configs of ``fixtures/configs`` (given with each) and below sizes
whose arithmetic would stop being exact or finite (a float overflows near 1e308; a product
of a handful of these bounds stays below 2**200). ``tests/test_hostile_config.py`` checks the
margins against the fixtures.
"""

from __future__ import annotations

from typing import Final

MAX_LAYERS: Final = 10_000
"""Decoder layers (and entries of a layer schedule). Largest real: 126 (Llama 3.1 405B)."""

MAX_HEADS: Final = 65_536
"""Attention heads, KV heads, experts and other per-layer counts. Largest real: 512 experts
(Qwen3-Next), 128 attention heads (DeepSeek-V3, Llama 3.1 405B)."""

MAX_HEAD_DIM: Final = 65_536
"""Elements of one head, latent or rope part. Largest real: 512 (DeepSeek-V3's
kv_lora_rank), 256 (Gemma head_dim)."""

MAX_SIZE: Final = 2**32
"""Any other integer of a config (widths, vocabulary, windows, context lengths) and token
counts of the command line. Largest real: 10,485,760 (Llama 4 Scout's
max_position_embeddings)."""

MAX_PARALLEL: Final = MAX_LAYERS
"""tp, pp and dp degrees: pipeline stages cannot outnumber the layers, and no head count
reaches tp beyond this either."""

MAX_GIB: Final = 1 << 20
"""GiB of memory in a setting (``overhead``): a mebi-GiB is far beyond any GPU (the largest
in ``gpus.toml`` has under 300 GiB)."""
