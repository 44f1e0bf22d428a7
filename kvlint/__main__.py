"""``python -m kvlint``."""

import os
import sys


def _drop_working_directory() -> None:
    """``python -m`` puts the working directory first on ``sys.path``, so a ``yaml.py`` or a
    ``*.dist-info`` in the repository being linted would be imported as ours: drop it, as
    ``python -P`` does (kvlint itself is imported by now)."""
    if not sys.path or getattr(sys.flags, "safe_path", False):
        return
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        return
    if sys.path[0] == "" or os.path.realpath(sys.path[0]) == cwd:
        del sys.path[0]


if __name__ == "__main__":
    _drop_working_directory()
    from kvlint.cli import main

    main()
