"""What the generators that read engines' wheels share: literal values from ``ast`` nodes
and the command line that writes a table (a maintenance tool; never run when kvlint lints)."""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["literal", "table_main"]


def literal(node: ast.AST | None) -> Any:
    """The Python literal ``node`` is, or ``None`` (not a literal, or not readable)."""
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def table_main(prog: str, build: Callable[[list[Path]], dict[str, Any]], output: Path,
               summary: Callable[[dict[str, Any]], str], argv: list[str] | None) -> int:
    """``prog WHEEL... [-o FILE]``: ``build`` the table from the wheels, write it as JSON,
    and say what it holds on stderr."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("wheels", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, default=output)
    args = parser.parse_args(argv)
    table = build(args.wheels)
    args.output.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"{args.output}: {summary(table)}", file=sys.stderr)
    return 0
