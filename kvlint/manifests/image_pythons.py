"""The Python a Dockerfile's ``pip install`` runs on, and the engine releases pip can install
there (KV709).

pip installs a release only when the interpreter satisfies the ``Requires-Python`` of its
files; for an exact pin with none that does, it stops the build ("Could not find a version
that satisfies the requirement vllm==0.9.2"; it lists the releases it ignored for "a different
python version"). The specifiers below are those PyPI's simple index serves pip for every file
of each release (PEP 691 JSON, ``requires-python``; https://pypi.org/simple/vllm/ and
https://pypi.org/simple/sglang/, read 2026-12-08), as ranges of releases that share one.

The interpreter is known only where the Dockerfile says it: a ``python:3.X`` base image, or a
distribution's ``python3`` package installed with ``apt-get`` on an Ubuntu or Debian base (the
release's own python3: packages.ubuntu.com and packages.debian.org). A stage that installs any
other Python (a versioned ``python3.X`` package, the deadsnakes PPA, conda or mamba, pyenv,
``uv python``/``uv venv --python``) is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

__all__ = ["REQUIRES_PYTHON", "newest_for_python", "python_refuses", "requires_python",
           "stage_python"]

_PYPI = "PyPI simple index (PEP 691 requires-python), {} files, read 2026-12-08"
REQUIRES_PYTHON: dict[str, tuple[tuple[str, str], ...]] = {
    "vllm": (("0.0.1", ">=3.8"), ("0.6.4", ">=3.9"), ("0.8.4", ">=3.9,<3.13"),
             ("0.10.2", ">=3.9,<3.14"), ("0.11.1", ">=3.10,<3.14"),
             ("0.20.0", ">=3.10,<3.15"), ("0.32.0", ">=3.11,<3.15")),
    "sglang": (("0.1.3", ">=3.8"), ("0.5.0rc0", ">=3.9"), ("0.5.0rc1", ">=3.10"),
               ("0.5.22", ">=3.11")),
}
"""Engine -> ``(first release, Requires-Python)`` from that release to the next entry's."""

DISTRO_PYTHON = {
    ("ubuntu", "18.04"): "3.6", ("ubuntu", "20.04"): "3.8", ("ubuntu", "22.04"): "3.10",
    ("ubuntu", "24.04"): "3.12",
    ("debian", "buster"): "3.7", ("debian", "bullseye"): "3.9", ("debian", "bookworm"): "3.11",
    ("debian", "trixie"): "3.13",
}
"""The ``python3`` package of each release (Ubuntu bionic 3.6.7, focal 3.8.2, jammy 3.10.6,
noble 3.12.3; Debian buster 3.7.3, bullseye 3.9.2, bookworm 3.11.2, trixie 3.13.5)."""
_DEBIAN_NUMBERS = {"10": "buster", "11": "bullseye", "12": "bookworm", "13": "trixie"}

_OFFICIAL = re.compile(r"(?:docker\.io/)?(?:library/)?python:(3\.\d{1,2})(?:[.-][\w.-]*)?")
_UBUNTU = re.compile(r"(?:^|[/:-])ubuntu[:-]?(\d{2}\.04)(?:$|[^\d])")
_DEBIAN = re.compile(r"(?:^|/)debian:(buster|bullseye|bookworm|trixie|1[0-3])(?:$|[.-])")
_APT_PYTHON = re.compile(r"\bapt(?:-get)?\b[^\n]*\binstall\b[^\n]*\bpython3(?:-pip|-dev|-venv"
                         r"|-full)?(?![\w.])")
_OTHER_PYTHON = re.compile(r"\bpython3\.\d{1,2}\b|deadsnakes|\bconda\b|\bmamba\b|micromamba|"
                           r"\bpyenv\b|\buv\s+(?:python|venv\b[^\n]*--python)|miniforge|"
                           r"\bget-pip\.py|--python[= ]", re.IGNORECASE)


def stage_python(base: str, runs: Sequence[tuple[str, int]]) -> tuple[str, str] | None:
    """``(X.Y, why)``: the Python the stage's ``pip`` runs on, where the Dockerfile says it
    (the module's doc); ``None`` otherwise."""
    text = "\n".join(run for run, _ in runs)[:200_000]
    if _OTHER_PYTHON.search(text):
        return None
    name = base.strip().lower()
    official = _OFFICIAL.fullmatch(name)
    if official is not None:
        return official.group(1), f"FROM {base}"
    ubuntu, debian = _UBUNTU.search(name), _DEBIAN.search(name)
    distro = ("ubuntu", ubuntu.group(1)) if ubuntu else \
        ("debian", _DEBIAN_NUMBERS.get(debian.group(1), debian.group(1))) if debian else None
    if distro is None or distro not in DISTRO_PYTHON or not _APT_PYTHON.search(text):
        return None
    return DISTRO_PYTHON[distro], f"the python3 that apt installs on {base} ({distro[0]} " \
        f"{distro[1]})"


def requires_python(engine: str, version: str) -> str | None:
    """The ``Requires-Python`` of ``engine``'s release ``version`` (``None``: unknown)."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None
    found = None
    for first, spec in REQUIRES_PYTHON.get(engine, ()):
        if wanted >= Version(first):
            found = spec
    return found


def newest_for_python(engine: str, specifier: str, python: str) -> str | None:
    """The release pip installs for an unpinned (or ranged) requirement on ``python``: the
    newest final release the specifier allows whose Requires-Python ``python`` meets
    (``None``: none in kvlint's release table)."""
    from kvlint.engines.release_dates import releases

    try:
        allowed = SpecifierSet(specifier)
    except InvalidSpecifier:
        return None
    for release in reversed(releases(engine)):
        try:
            if Version(release) in allowed and python_refuses(engine, release, python) is None \
                    and requires_python(engine, release) is not None:
                return release
        except InvalidVersion:
            continue
    return None


def python_refuses(engine: str, version: str, python: str) -> str | None:
    """The release's ``Requires-Python`` when ``python`` (``X.Y``) does not satisfy it."""
    spec = requires_python(engine, version)
    if spec is None:
        return None
    try:
        return None if Version(f"{python}.0") in SpecifierSet(spec) else spec
    except (InvalidSpecifier, InvalidVersion):
        return None
