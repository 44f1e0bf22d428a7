"""Find materialised GQA and naive MLA in Python model/engine code with ``ast`` only.

The scanned code is parsed, never imported or executed.  Each function is walked once, in
statement order, with a small taint state per local name:

* ``kv``: the value is K/V-like (a k/v projection, a cache read, or a K/V-like name);
* ``expanded``: the KV heads were copied along the head dim (``repeat_kv``,
  ``repeat_interleave(dim=1)``, ``[:, :, None].expand(...).reshape(...)``, ``einops.repeat``);
* ``upproj``: the value is (derived from) the MLA latent up-projection (``kv_b_proj``);
* ``cache_read``: the value came out of a KV cache;
* ``rebuilt``: the up-projection was applied to what the cache returned (no absorption).

Module-local helpers (``repeat_kv``, ``expand_heads``, ``self.expand_kv``) are summarised once:
does the helper return its first argument expanded along the head dim, and does it apply the
up-projection to its arguments?


The parts: :mod:`kvlint.scan.vocabulary` (the names recognised), :mod:`kvlint.scan.syntax`
(node readers), :mod:`kvlint.scan.taint` (the per-name state), :mod:`kvlint.scan.data_flow`
(the function walk), :mod:`kvlint.scan.module_index` (functions and helper summaries) and
:mod:`kvlint.scan.findings` (codes and messages).

Codes: KV401 gqa-materialized, KV402 gqa-materialized-cache, KV403 mla-full-kv-cache,
KV404 mla-not-absorbed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from kvlint.scan.data_flow import FunctionAnalyzer
from kvlint.scan.findings import CODES, SourceFinding
from kvlint.scan.module_index import ModuleIndex
from kvlint.scan.vocabulary import may_have_findings

__all__ = ["CODES", "SourceFinding", "scan_source"]


def _iter_findings(tree: ast.Module) -> Iterator[SourceFinding]:
    module = ModuleIndex(tree)
    for qualname, cls, fn in module.all:
        an = FunctionAnalyzer(module, fn, qualname, cls, report=True)
        an.run()
        yield from an.log.findings


def scan_source(text: str, path: str) -> list[SourceFinding]:
    """Scan Python source text; ``ValueError`` (``path:line: invalid Python: msg``) if it
    does not parse.  The text is parsed with :mod:`ast` only, never imported or executed.
    A file that parses but has none of the calls a finding starts at
    (:func:`~kvlint.scan.vocabulary.may_have_findings`) is not walked: it has no findings,
    and is then not reported as too deeply nested to analyse either."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise ValueError(f"{path}:{exc.lineno or 0}: invalid Python: {exc.msg}") from None
    except ValueError as exc:  # e.g. source with NUL bytes
        raise ValueError(f"{path}:0: invalid Python: {exc}") from None
    if not may_have_findings(text):
        return []  # no call that starts a finding: nothing to walk
    try:
        findings = list(_iter_findings(tree))
    except RecursionError:
        raise ValueError(f"{path}:0: invalid Python: nesting too deep to analyse") from None
    return sorted(findings, key=lambda f: (f.line, f.column, f.code))
