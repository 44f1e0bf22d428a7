"""The command line the PyPI-table generators share (:mod:`.release_dates`,
:mod:`.requires_python`): saved pages of the registry given as ``ENGINE=FILE``, the table to
write, and the day the pages were fetched."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any


def read_pages(prog: str, packages: Mapping[str, str], output: Path, what: str,
               argv: list[str] | None) -> tuple[argparse.Namespace, dict[str, Any]]:
    """``(arguments, {engine: the saved page as JSON})`` of a generator's command line
    (``ENGINE=FILE...``, ``-o FILE``, ``--fetched DAY``); an engine not in ``packages`` is a
    usage error."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("sources", nargs="+", metavar="ENGINE=FILE")
    parser.add_argument("-o", "--output", type=Path, default=output)
    parser.add_argument("--fetched", default=date.today().isoformat(),
                        help=f"the day the {what} were fetched (recorded in the table)")
    args = parser.parse_args(argv)
    pages: dict[str, Any] = {}
    for source in args.sources:
        key, _, file = source.partition("=")
        if key not in packages or not file:
            parser.error(f"{source}: expected ENGINE=FILE with ENGINE one of "
                         f"{', '.join(packages)}")
        try:
            pages[key] = json.loads(Path(file).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            parser.error(f"{file}: not a saved JSON page ({err})")
    return args, pages
