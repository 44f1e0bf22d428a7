"""Small readers of ``ast`` nodes shared by the source analyzer: the last or base name of an
expression, its source text (paid only when needed), integer constants and keyword values."""

from __future__ import annotations

import ast


def last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return last_name(node.func)
    if isinstance(node, ast.Subscript):
        return last_name(node.value)
    return ""


def base_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def source_text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse is total on parsed trees
        return "<expr>"


Described = str | ast.AST
"""What a message names (a consumer, a cache write): text, or the node whose source text it is
(``ast.unparse`` is paid only when a finding is reported)."""


def described(value: Described) -> str:
    return value if isinstance(value, str) else source_text(value)


def factor_text(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Attribute):
        return node.attr
    return source_text(node)


def const_int(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int)
    ):
        return -int(node.operand.value)
    return None


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def has_none_index(node: ast.Subscript) -> bool:
    sl = node.slice
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    return any(isinstance(e, ast.Constant) and e.value is None for e in elts)


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
