"""kvlint's plugin hooks. Built-ins implement them exactly as third-party plugins do.

A plugin is a module or object registered under the ``kvlint`` entry-point group. pluggy
calls hooks with keyword arguments, and an implementation may accept fewer arguments than
its spec, so new arguments can be added without breaking plugins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from kvlint.manifests.base import DocumentContext, ManifestParser
    from kvlint.reporters.base import Reporter
    from kvlint.rules.base import Rule

PROJECT = "kvlint"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def kvlint_rules() -> Sequence[type[Rule]]:
    """Offer rule classes.

    :return: :class:`kvlint.rules.base.Rule` subclasses, each with a unique ``code``
        (``[A-Z]+[0-9]{3}``) and kebab-case ``name``. Every implementation is called; the
        results are merged and validated by :mod:`kvlint.registry`.
    """
    raise NotImplementedError


@hookspec
def kvlint_reporters() -> Sequence[type[Reporter]]:
    """Offer output formats.

    :return: :class:`kvlint.reporters.base.Reporter` subclasses, each with a unique
        ``name`` (the value of ``--format``).
    """
    raise NotImplementedError


@hookspec
def kvlint_manifest_parsers() -> Sequence[type[ManifestParser]]:
    """Offer manifest formats.

    :return: :class:`kvlint.manifests.base.ManifestParser` subclasses, each with a
        unique ``name``.
    """
    raise NotImplementedError


@hookspec(firstresult=True)
def kvlint_manifest_format(
    document: object, ctx: DocumentContext, parsers: Sequence[ManifestParser]
) -> str | None:
    """Name the format of one YAML/JSON document, or return ``None`` to let other plugins
    decide. Stops at the first non-None result.

    :param document: the document, as line-aware containers (``yaml_marks``).
    :param ctx: the file and its other documents.
    :param parsers: every registered parser, in registration order.
    """
    raise NotImplementedError
