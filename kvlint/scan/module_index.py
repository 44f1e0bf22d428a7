"""The functions and methods of one module, and what each module-local helper does to its
first argument (:class:`HelperSummary`, computed once per helper by walking it with
:class:`~kvlint.scan.data_flow.FunctionAnalyzer`)."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass

from kvlint.scan.data_flow import FunctionAnalyzer
from kvlint.scan.syntax import FunctionNode
from kvlint.scan.taint import Taint


@dataclass
class HelperSummary:
    expands: bool = False
    upproj: bool = False
    passes: bool = True


class ModuleIndex:
    def __init__(self, tree: ast.Module) -> None:
        self.functions: dict[str, FunctionNode] = {}
        self.methods: dict[str, dict[str, FunctionNode]] = {}
        self.all: list[tuple[str, str | None, FunctionNode]] = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
        self._collect(tree.body, "", None)
        self._summaries: dict[tuple[str | None, str], HelperSummary] = {}

    def _collect(self, body: Sequence[ast.stmt], prefix: str, cls: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                self.methods[node.name] = {
                    n.name: n
                    for n in node.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                }
                self._collect(node.body, f"{prefix}{node.name}.", node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.all.append((f"{prefix}{node.name}", cls, node))
                self._collect(node.body, f"{prefix}{node.name}.", None)

    def resolve(self, call: ast.Call, cls: str | None) -> tuple[str, FunctionNode, bool] | None:
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.functions:
            return func.id, self.functions[func.id], False
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
            and cls is not None
            and func.attr in self.methods.get(cls, {})
        ):
            return func.attr, self.methods[cls][func.attr], True
        return None

    def summary(self, key: tuple[str | None, str], fn: FunctionNode,
                is_method: bool) -> HelperSummary:
        if key in self._summaries:
            return self._summaries[key]
        self._summaries[key] = HelperSummary()  # recursion guard
        an = FunctionAnalyzer(self, fn, fn.name, key[0], report=False)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if is_method and params:
            params = params[1:]
        if params:
            an.env[params[0]] = Taint(kv=True)
        an.run()
        result = HelperSummary(
            expands=any(t.expanded is not None for t in an.returns),
            upproj=any(t.upproj is not None or t.rebuilt is not None for t in an.returns),
            passes=any(t.kv for t in an.returns),
        )
        self._summaries[key] = result
        return result
