"""The engine names ``--engine`` accepts, apart from :mod:`kvlint.engines` so that building
the command line (``kvlint --help``) does not import the engine table's module."""

from __future__ import annotations

ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm", "tgi", "lmdeploy", "llamacpp",
                            "mlc-llm", "transformers")
"""The values ``--engine`` accepts."""
