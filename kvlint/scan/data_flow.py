"""The walk of one function: statements in order, a :class:`~kvlint.scan.taint.Taint` per
local name, branches merged, calls classified (attention consumers, cache writes, module-local
helpers, K/V sources, head-dim expansions). Consumers and cache writes of an expanded or
up-projected value are reported through :class:`~kvlint.scan.findings.FindingLog`."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kvlint.scan.findings import FindingLog
from kvlint.scan.syntax import (
    Described,
    FunctionNode,
    base_name,
    const_int,
    factor_text,
    has_none_index,
    keyword_value,
    last_name,
    source_text,
)
from kvlint.scan.taint import EMPTY, Origin, Taint, union
from kvlint.scan.vocabulary import (
    ATTN_CALLEE,
    CACHE_ATTR,
    CACHE_RECV,
    CACHE_WRITE,
    GQA_TEST,
    KV_PROJ,
    LIBRARIES,
    LOAD_TIME_FN,
    MATMUL,
    NO_PROPAGATE,
    NOT_ATTN_CALLEE,
    RESHAPE,
    SDPA,
    UPPROJ,
    einops_head_repeat,
    is_kv_name,
)

if TYPE_CHECKING:
    from kvlint.scan.module_index import ModuleIndex


class FunctionAnalyzer:
    """One walk of ``fn``: ``report=True`` for a function being scanned, ``False`` for a
    helper being summarised (its ``returns`` are what :class:`ModuleIndex` reads)."""

    def __init__(
        self, module: ModuleIndex, fn: FunctionNode, qualname: str, cls: str | None, report: bool
    ) -> None:
        self.module = module
        self.fn = fn
        self.qualname = qualname
        self.cls = cls
        self.report = report and not LOAD_TIME_FN.search(fn.name)
        self.env: dict[str, Taint] = {}
        self.returns: list[Taint] = []
        self.log = FindingLog(qualname)
        self._fallback = 0
        self._is_attention_fn = bool(ATTN_CALLEE.search(fn.name))
        args = fn.args
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if is_kv_name(a.arg):
                self.env[a.arg] = Taint(kv=True)

    # ---------------------------------------------------------------- driver
    def run(self) -> None:
        self._block(self.fn.body)

    def _block(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self._stmt(stmt)

    def _branch(self, bodies: Sequence[tuple[Sequence[ast.stmt], bool]]) -> None:
        before = dict(self.env)
        envs: list[dict[str, Taint]] = []
        for body, fallback in bodies:
            self.env = dict(before)
            self._fallback += fallback
            self._block(body)
            self._fallback -= fallback
            envs.append(self.env)
        merged = dict(before)
        for env in envs:
            for name, taint in env.items():
                merged[name] = merged[name] | taint if name in merged else taint
        self.env = merged

    def _stmt(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # analysed on their own
        if isinstance(stmt, ast.Assign):
            taint = self._ev(stmt.value)
            for target in stmt.targets:
                self._assign(target, stmt.value, taint, stmt)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._assign(stmt.target, stmt.value, self._ev(stmt.value), stmt)
        elif isinstance(stmt, ast.AugAssign):
            taint = self._ev(stmt.value)
            name = base_name(stmt.target)
            if isinstance(stmt.target, ast.Name):
                self.env[stmt.target.id] = self.env.get(stmt.target.id, EMPTY) | taint
            elif name is not None:
                self.env[name] = self.env.get(name, EMPTY) | taint
            self._check_cache_target(stmt.target, taint, stmt)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                taint = self._ev(stmt.value)
                self.returns.append(taint)
                if self._is_attention_fn:
                    self._consume(taint, "return", stmt.lineno, None)
        elif isinstance(stmt, ast.If):
            self._ev(stmt.test)
            gqa = bool(GQA_TEST.search(source_text(stmt.test)))
            self._branch([(stmt.body, False), (stmt.orelse, gqa)])
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            it = self._ev(stmt.iter)
            self._assign(stmt.target, stmt.iter, it, stmt)
            self._branch([(stmt.body, False), ([], False)])
            self._block(stmt.orelse)
        elif isinstance(stmt, ast.While):
            self._ev(stmt.test)
            self._branch([(stmt.body, False), ([], False)])
            self._block(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                t = self._ev(item.context_expr)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, item.context_expr, t, stmt)
            self._block(stmt.body)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            body: list[ast.stmt] = getattr(stmt, "body", [])
            handlers: list[ast.ExceptHandler] = getattr(stmt, "handlers", [])
            orelse: list[ast.stmt] = getattr(stmt, "orelse", [])
            final: list[ast.stmt] = getattr(stmt, "finalbody", [])
            self._branch([(body + orelse, False), *[(h.body, False) for h in handlers]])
            self._block(final)
        elif isinstance(stmt, ast.Match):
            self._ev(stmt.subject)
            self._branch([(case.body, False) for case in stmt.cases])
        elif isinstance(stmt, ast.Expr):
            self._expr_stmt(stmt)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._ev(child)

    def _expr_stmt(self, stmt: ast.Expr) -> None:
        value = stmt.value
        taint = self._ev(value)
        del taint
        # ``dst[...].copy_(src)`` / ``dst.index_copy_(dim, idx, src)``: src flows into dst.
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("copy_", "index_copy_", "scatter_", "index_put_")
            and value.args
        ):
            src = self._ev(value.args[-1])
            dst = value.func.value
            name = base_name(dst)
            if name is not None and name not in ("self", "cls"):
                self.env[name] = self.env.get(name, EMPTY) | src
            self._check_cache_target(dst, src, value)

    # ---------------------------------------------------------------- assignment
    def _assign(self, target: ast.expr, value: ast.expr, taint: Taint, stmt: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts, strict=True):
                    self._assign(t, v, self._ev_quiet(v), stmt)
            else:
                for t in target.elts:
                    self._assign(t, value, taint, stmt)
            return
        if isinstance(target, ast.Starred):
            self._assign(target.value, value, taint, stmt)
            return
        if isinstance(target, ast.Name):
            name = target.id
            if is_kv_name(name) and not taint.index:
                taint = replace(taint, kv=True)
            taint = self._name_origins(taint, name, stmt)
            self.env[name] = taint
            return
        # subscript / attribute targets
        self._check_cache_target(target, taint, stmt)
        base = base_name(target)
        if isinstance(target, ast.Subscript) and base is not None and base not in ("self", "cls"):
            self.env[base] = self.env.get(base, EMPTY) | taint

    def _name_origins(self, taint: Taint, name: str, stmt: ast.AST) -> Taint:
        if taint.expanded is None and taint.upproj is None and taint.rebuilt is None:
            # nothing to name (most assignments); a copy, as before, since a name bound to
            # the shared EMPTY must not be `is EMPTY` (the receiver test in _call)
            return Taint() if taint is EMPTY else taint
        line = getattr(stmt, "lineno", 0)
        end = getattr(stmt, "end_lineno", line) or line

        def named(origin: Origin | None) -> Origin | None:
            if origin is not None and origin.variable is None and line <= origin.line <= end:
                return replace(origin, variable=name)
            return origin

        return replace(
            taint,
            expanded=named(taint.expanded),
            upproj=named(taint.upproj),
            rebuilt=named(taint.rebuilt),
        )

    def _ev_quiet(self, node: ast.expr) -> Taint:
        """Evaluate an already-evaluated sub-expression again without reporting twice."""
        return self._ev(node)

    # ---------------------------------------------------------------- expressions
    def _ev(self, node: ast.expr) -> Taint:
        if isinstance(node, ast.Name):
            return self.env.get(node.id, EMPTY)
        if isinstance(node, ast.Constant):
            return EMPTY  # no sub-expressions (the general case below would find none)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Attribute):
            inner = self._ev(node.value)
            if CACHE_ATTR.search(node.attr):
                return Taint(kv=True, cache_read=node.lineno)
            if node.attr in ("T", "mT", "data"):
                return inner
            return EMPTY
        if isinstance(node, ast.Subscript):
            inner = self._ev(node.value)
            self._ev(node.slice)
            base_text = last_name(node.value)
            if isinstance(node.value, ast.Name) and re.search(r"past|cache", base_text):
                inner = inner | Taint(kv=True, cache_read=node.lineno)
            if inner is EMPTY:
                return inner
            if has_none_index(node):
                inner = replace(inner, newaxis=True)
            return inner
        if isinstance(node, ast.BinOp):
            left = self._ev(node.left)
            right = self._ev(node.right)
            if isinstance(node.op, ast.MatMult):
                for t in (left, right):
                    self._consume(t, "the @ operator", node.lineno, None)
                return EMPTY
            return left | right
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return union(self._ev(e) for e in node.elts)
        if isinstance(node, ast.Starred):
            return self._ev(node.value)
        if isinstance(node, ast.IfExp):
            self._ev(node.test)
            return self._ev(node.body) | self._ev(node.orelse)
        if isinstance(node, ast.NamedExpr):
            t = self._ev(node.value)
            self.env[node.target.id] = t
            return t
        if isinstance(
            node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            return EMPTY
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._ev(child)
        return EMPTY

    def _call(self, call: ast.Call) -> Taint:
        func = call.func
        callee = last_name(func)
        recv = self._ev(func.value) if isinstance(func, ast.Attribute) else EMPTY
        if isinstance(func, ast.Attribute) and base_name(func) in LIBRARIES:
            recv = EMPTY
        args = [self._ev(a) for a in call.args]
        kwargs = {kw.arg: self._ev(kw.value) for kw in call.keywords}
        all_args = union([*args, *kwargs.values()])
        line = call.lineno
        ctext: Described = func  # unparsed only if a finding quotes it

        # attention consumers
        if (
            callee in MATMUL
            or callee in SDPA
            or (ATTN_CALLEE.search(callee) and not NOT_ATTN_CALLEE.search(callee))
        ):
            for t in (recv if callee in MATMUL else EMPTY, *args, *kwargs.values()):
                self._consume(t, ctext, line, call)
            return EMPTY

        # cache writes
        if self._is_cache_write(call, callee):
            for t in (*args, *kwargs.values()):
                self._cache_write(t, ctext, line)
            if callee == "update":
                return Taint(kv=True, cache_read=line)
            return EMPTY

        # module-local helpers
        resolved = self.module.resolve(call, self.cls)
        if resolved is not None:
            name, fn, is_method = resolved
            summ = self.module.summary((self.cls if is_method else None, name), fn, is_method)
            out = all_args if summ.passes else EMPTY
            first = args[0] if args else EMPTY
            if summ.expands and first.kv and not first.index:
                factor = factor_text(call.args[1]) if len(call.args) > 1 else None
                if factor is None and call.keywords:
                    factor = factor_text(call.keywords[0].value)
                out = replace(out, expanded=self._origin(call, name, factor))
            if summ.upproj:
                out = self._upproj(out, call, name)
            return out

        # sources
        if callee in UPPROJ:
            return self._upproj(all_args | recv, call, callee)
        if callee in KV_PROJ and isinstance(func, ast.Attribute):
            return Taint(kv=True)
        if callee == "arange":
            return Taint(index=True)

        # expansions along the head dim
        src = (
            recv
            if isinstance(func, ast.Attribute) and recv is not EMPTY
            else (args[0] if args else EMPTY)
        )
        src_is_recv = isinstance(func, ast.Attribute) and recv is not EMPTY
        if callee == "repeat_interleave":
            pos = 1 if src_is_recv else 2
            dim = keyword_value(call, "dim")
            if dim is None and len(call.args) > pos:
                dim = call.args[pos]
            reps = keyword_value(call, "repeats")
            if reps is None and len(call.args) > pos - 1:
                reps = call.args[pos - 1]
            if src.index:
                return src
            if src.kv and const_int(dim) in (1, -3):
                return replace(src, expanded=self._origin(call, "repeat_interleave",
                                                          factor_text(reps)))
            return src
        if callee == "repeat" and src_is_recv:
            reps_args = call.args
            if src.kv and not src.index and len(reps_args) >= 3 and const_int(reps_args[1]) != 1:
                return replace(src, expanded=self._origin(call, ".repeat",
                                                          factor_text(reps_args[1])))
            return src
        if callee == "repeat" and not src_is_recv and len(call.args) >= 2:
            pat = call.args[1]
            first = args[0]
            if (
                first.kv
                and isinstance(pat, ast.Constant)
                and isinstance(pat.value, str)
                and einops_head_repeat(pat.value)
            ):
                factor = factor_text(call.keywords[0].value) if call.keywords else None
                return replace(first, expanded=self._origin(call, "einops.repeat", factor))
            return first
        if callee == "unsqueeze" and src_is_recv:
            return replace(src, newaxis=True)
        if callee in ("expand", "broadcast_to") and src_is_recv:
            if src.newaxis and src.kv:
                fac = factor_text(call.args[2]) if len(call.args) > 2 else ""
                return replace(src, broadcast=fac or "")
            return src
        if callee in RESHAPE and src_is_recv:
            if src.broadcast is not None and callee != "contiguous" and src.kv:
                return replace(
                    src,
                    broadcast=None,
                    newaxis=False,
                    expanded=self._origin(call, "expand+reshape", src.broadcast or None),
                )
            return src

        if callee in NO_PROPAGATE:
            return EMPTY
        if isinstance(func, ast.Attribute) and base_name(func) in ("self", "cls", "module"):
            return EMPTY  # a sub-module call (a layer) makes a new tensor
        if src_is_recv:
            return recv | all_args if callee in ("cat", "stack") else recv
        return all_args

    # ---------------------------------------------------------------- helpers
    def _origin(self, call: ast.Call, helper: str, factor: str | None) -> Origin:
        return Origin(
            line=call.lineno,
            col=call.col_offset + 1,
            helper=helper,
            factor=factor,
            fallback=self._fallback > 0,
        )

    def _upproj(self, taint: Taint, call: ast.Call, name: str) -> Taint:
        origin = self._origin(call, name, None)
        if taint.cache_read is not None:
            return replace(taint, rebuilt=replace(origin, cache_line=taint.cache_read), kv=True)
        return replace(taint, upproj=origin, kv=True)

    def _is_cache_write(self, call: ast.Call, callee: str) -> bool:
        if callee in CACHE_WRITE:
            return True
        if callee == "update" and isinstance(call.func, ast.Attribute):
            return len(call.args) >= 2 or bool(CACHE_RECV.search(source_text(call.func.value)))
        return False

    def _check_cache_target(self, target: ast.expr, taint: Taint, stmt: ast.AST) -> None:
        node = target
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and (
            CACHE_ATTR.search(node.attr) or "cache" in node.attr
        ):
            self._cache_write(taint, f"{source_text(node)} assignment", getattr(stmt, "lineno", 0))
        elif isinstance(node, ast.Name) and "cache" in node.id and node is not target:
            self._cache_write(taint, f"{node.id}[...] assignment", getattr(stmt, "lineno", 0))

    def _consume(self, taint: Taint, consumer: Described, line: int,
                 call: ast.Call | None) -> None:
        if not self.report:
            return
        if taint.expanded is not None:
            self.log.report_gqa("KV401", taint.expanded, consumer, line)
        if taint.rebuilt is not None:
            self.log.report_mla("KV404", taint.rebuilt, consumer, line)

    def _cache_write(self, taint: Taint, writer: Described, line: int) -> None:
        if not self.report:
            return
        if taint.expanded is not None:
            self.log.report_gqa("KV402", taint.expanded, writer, line)
        if taint.upproj is not None and taint.cache_read is None:
            self.log.report_mla("KV403", taint.upproj, writer, line)
