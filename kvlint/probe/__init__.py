"""``kvlint probe``: measure the KV bytes a decode step reads and the cache holds, against
theory (docs/design.md §7, the ``probe`` block).

Pure parts (``result``, ``theory``, ``slope``, ``sdpa_oracle``) import nothing heavy. The CPU
path (``cpu``, ``accounting``, ``build``) needs torch and transformers, the GPU path (``gpu``)
needs CUDA, the staging path (``staging``) only HTTP: each imports what it needs lazily, so
``import kvlint.cli`` stays free of torch.
"""
