"""What the start-up log table generators share (:mod:`.vllm_log_table`,
:mod:`.sglang_log_table`): one format string as it is collected across releases, and the
command line that rebuilds a table from wheels or unpacked sources."""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

__all__ = ["Entry", "run"]


@dataclass
class Entry:
    """One format string while the releases are read: the first and last release that print
    it, where it was first seen and what each placeholder means."""

    format: str
    style: str
    anchor: str
    first: Version
    last: Version
    source: str
    fields: list[str] = field(default_factory=list)


def run(prog: str, doc: str | None, build: Callable[[list[str]], dict[str, object]],
        default_output: Path, argv: list[str] | None = None) -> int:
    """``prog SOURCE... [-o FILE]``: the table built from each SOURCE (a wheel, or
    ``VERSION=DIR``) written as JSON; exit 2 with one line when a source cannot be read."""
    engine = prog.rsplit(".", 1)[-1].split("_", 1)[0]
    parser = argparse.ArgumentParser(prog=f"python -m {prog}",
                                     description=doc.split("\n\n")[0] if doc else None)
    parser.add_argument("sources", nargs="+", help=f"{engine}-X-*.whl or X=DIR")
    parser.add_argument("-o", "--output", default=str(default_output))
    args = parser.parse_args(argv)
    try:
        table = build(args.sources)
    except (OSError, InvalidVersion, IndexError, zipfile.BadZipFile) as err:
        print(f"{prog.rsplit('.', 1)[-1]}: {err}", file=sys.stderr)
        return 2
    Path(args.output).write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n",
                                 encoding="utf-8")
    formats = table["formats"]
    print(f"{len(formats) if isinstance(formats, list) else 0} formats from "
          f"{len(args.sources)} versions -> {args.output}")
    return 0
