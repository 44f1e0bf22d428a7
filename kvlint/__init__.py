"""kvlint: lint LLM serving configurations for KV-cache waste and engine incompatibilities."""

__version__ = "0.1.0"

__all__ = ["__version__"]
