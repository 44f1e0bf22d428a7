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

Codes: KV401 gqa-materialized, KV402 gqa-materialized-cache, KV403 mla-full-kv-cache,
KV404 mla-not-absorbed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

__all__ = ["CODES", "SourceFinding", "scan_source"]

CODES: dict[str, str] = {
    "KV401": "gqa-materialized",
    "KV402": "gqa-materialized-cache",
    "KV403": "mla-full-kv-cache",
    "KV404": "mla-not-absorbed",
}


@dataclass(frozen=True)
class SourceFinding:
    """One finding in a Python source file."""

    code: str
    line: int
    column: int
    message: str
    function: str
    variable: str
    data: dict[str, object] = field(default_factory=dict)


# --------------------------------------------------------------------------- vocabulary

_KV_NAME = re.compile(
    r"^(?:k|v|xk|xv|kv|key|value|keys|values)$"
    r"|^(?:k|v|xk|xv|key|value|keys|values)_\w+$"
    r"|^\w+_(?:k|v|key|value|keys|values)$"
)
_NOT_KV = re.compile(
    r"weight|bias|mask|len|size|dim|shape|num|idx|index|mapping|pos|scale|proj|norm|head|ids"
    r"|top_|max_|min_|rank|type|name|dtype|device|fn|func|id$|offset|stride|count|list|dict"
)
_CACHE_ATTR = re.compile(
    r"(?:k|v|key|value)s?_cache|cache_(?:k|v|key|value)|past_key|^kv_buffer|^k_buffer|^v_buffer"
)
_CACHE_RECV = re.compile(r"cache|past|kv_pool|pool", re.IGNORECASE)
_KV_PROJ = frozenset(
    {
        "k_proj",
        "v_proj",
        "wk",
        "wv",
        "key",
        "value",
        "to_k",
        "to_v",
        "key_proj",
        "value_proj",
        "k_lin",
        "v_lin",
        "linear_k",
        "linear_v",
        "k_linear",
        "v_linear",
    }
)
_UPPROJ = frozenset({"kv_b_proj", "wkv_b", "kv_up_proj", "kv_b", "w_kv_b", "kv_b_linear"})
_MATMUL = frozenset({"matmul", "bmm", "baddbmm", "einsum", "mm"})
_SDPA = frozenset({"scaled_dot_product_attention", "sdpa"})
_ATTN_CALLEE = re.compile(r"attn|attention", re.IGNORECASE)
_NOT_ATTN_CALLEE = re.compile(
    r"dropout|mask|norm|get_interface|proj|layer|_init|bias|weight|config|output", re.IGNORECASE
)
_CACHE_WRITE = frozenset(
    {
        "store",
        "set_kv_buffer",
        "reshape_and_cache",
        "reshape_and_cache_flash",
        "write_to_cache",
        "write_kv",
        "append_kv",
        "set_kv",
        "save_kv",
        "store_kv",
        "update_kv_cache",
        "concat_and_cache_mla",
    }
)
_NO_PROPAGATE = frozenset(
    {
        "len",
        "size",
        "dim",
        "numel",
        "item",
        "tolist",
        "isinstance",
        "hasattr",
        "getattr",
        "int",
        "float",
        "bool",
        "str",
        "type",
        "print",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "zeros",
        "ones",
        "empty",
        "full",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "randn",
        "rand",
        "tensor",
        "arange",
        "stride",
        "data_ptr",
        "get_seq_length",
        "softmax",
        "log_softmax",
        "get_interface",
    }
)
_RESHAPE = frozenset({"reshape", "view", "flatten", "contiguous", "clone"})
_LOAD_TIME_FN = re.compile(
    r"^__init__$|load|weight|convert|checkpoint|state_dict|^_?init_|quantiz|^from_", re.IGNORECASE
)
_LIBRARIES = frozenset({"torch", "F", "functional", "nn", "einops", "np", "jnp", "mx"})
_GQA_TEST = re.compile(r"gqa", re.IGNORECASE)

_FIX_GQA = (
    "pass the KV heads to an attention kernel that maps query heads to KV heads "
    "(SDPA enable_gqa=True, FlashAttention, an index mapping) instead of copying."
)
_FIX_MLA = (
    "cache only the compressed latent and the rope key (kv_lora_rank + qk_rope_head_dim per "
    "token) and use a latent MLA kernel or fold the up-projection into the query/output side "
    "(matrix absorption)."
)


@dataclass(frozen=True)
class _Origin:
    line: int
    col: int
    helper: str
    factor: str | None = None
    variable: str | None = None
    fallback: bool = False
    cache_line: int | None = None


@dataclass(frozen=True)
class _Taint:
    kv: bool = False
    index: bool = False
    newaxis: bool = False
    broadcast: str | None = None  # the factor text of a pending ``expand`` (``""`` if unknown)
    expanded: _Origin | None = None
    upproj: _Origin | None = None
    cache_read: int | None = None
    rebuilt: _Origin | None = None

    def __or__(self, other: _Taint) -> _Taint:
        if other is _EMPTY:
            return self
        if self is _EMPTY:
            return other
        return _Taint(
            kv=self.kv or other.kv,
            index=self.index and other.index,
            newaxis=self.newaxis or other.newaxis,
            broadcast=self.broadcast if self.broadcast is not None else other.broadcast,
            expanded=self.expanded or other.expanded,
            upproj=self.upproj or other.upproj,
            cache_read=self.cache_read if self.cache_read is not None else other.cache_read,
            rebuilt=self.rebuilt or other.rebuilt,
        )


_EMPTY = _Taint()


def _union(taints: Iterable[_Taint]) -> _Taint:
    out = _EMPTY
    for t in taints:
        out = out | t
    return out


def _is_kv_name(name: str) -> bool:
    return bool(_KV_NAME.match(name)) and not _NOT_KV.search(name)


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Call):
        return _last_name(node.func)
    if isinstance(node, ast.Subscript):
        return _last_name(node.value)
    return ""


def _base_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # pragma: no cover - unparse is total on parsed trees
        return "<expr>"


_Described = str | ast.AST
"""What a message names (a consumer, a cache write): text, or the node whose source text it is
(``ast.unparse`` is paid only when a finding is reported)."""


def _described(value: _Described) -> str:
    return value if isinstance(value, str) else _text(value)


def _factor(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Attribute):
        return node.attr
    return _text(node)


def _const_int(node: ast.expr | None) -> int | None:
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


def _kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _has_none_index(node: ast.Subscript) -> bool:
    sl = node.slice
    elts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    return any(isinstance(e, ast.Constant) and e.value is None for e in elts)


def _einops_head_repeat(pattern: str) -> bool:
    """``'b h s d -> b (h r) s d'``: an input axis grouped with a new axis on the output side."""
    if "->" not in pattern:
        return False
    lhs, rhs = pattern.split("->", 1)
    lhs_axes = set(re.findall(r"\w+", lhs))
    for group in re.findall(r"\(([^)]*)\)", rhs):
        axes = re.findall(r"\w+", group)
        if any(a in lhs_axes for a in axes) and any(a not in lhs_axes for a in axes):
            return True
    return False


# --------------------------------------------------------------------------- module index

_FuncDef = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class _Summary:
    expands: bool = False
    upproj: bool = False
    passes: bool = True


class _Module:
    def __init__(self, tree: ast.Module) -> None:
        self.functions: dict[str, _FuncDef] = {}
        self.methods: dict[str, dict[str, _FuncDef]] = {}
        self.all: list[tuple[str, str | None, _FuncDef]] = []
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
        self._collect(tree.body, "", None)
        self._summaries: dict[tuple[str | None, str], _Summary] = {}

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

    def resolve(self, call: ast.Call, cls: str | None) -> tuple[str, _FuncDef, bool] | None:
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

    def summary(self, key: tuple[str | None, str], fn: _FuncDef, is_method: bool) -> _Summary:
        if key in self._summaries:
            return self._summaries[key]
        self._summaries[key] = _Summary()  # recursion guard
        an = _FunctionAnalyzer(self, fn, fn.name, key[0], report=False)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if is_method and params:
            params = params[1:]
        if params:
            an.env[params[0]] = _Taint(kv=True)
        an.run()
        result = _Summary(
            expands=any(t.expanded is not None for t in an.returns),
            upproj=any(t.upproj is not None or t.rebuilt is not None for t in an.returns),
            passes=any(t.kv for t in an.returns),
        )
        self._summaries[key] = result
        return result


# --------------------------------------------------------------------------- function walk


class _FunctionAnalyzer:
    def __init__(
        self, module: _Module, fn: _FuncDef, qualname: str, cls: str | None, report: bool
    ) -> None:
        self.module = module
        self.fn = fn
        self.qualname = qualname
        self.cls = cls
        self.report = report and not _LOAD_TIME_FN.search(fn.name)
        self.env: dict[str, _Taint] = {}
        self.returns: list[_Taint] = []
        self.findings: list[SourceFinding] = []
        self._reported: set[tuple[str, int, int]] = set()
        self._fallback = 0
        self._is_attention_fn = bool(_ATTN_CALLEE.search(fn.name))
        args = fn.args
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            if _is_kv_name(a.arg):
                self.env[a.arg] = _Taint(kv=True)

    # ---------------------------------------------------------------- driver
    def run(self) -> None:
        self._block(self.fn.body)

    def _block(self, body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            self._stmt(stmt)

    def _branch(self, bodies: Sequence[tuple[Sequence[ast.stmt], bool]]) -> None:
        before = dict(self.env)
        envs: list[dict[str, _Taint]] = []
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
            name = _base_name(stmt.target)
            if isinstance(stmt.target, ast.Name):
                self.env[stmt.target.id] = self.env.get(stmt.target.id, _EMPTY) | taint
            elif name is not None:
                self.env[name] = self.env.get(name, _EMPTY) | taint
            self._check_cache_target(stmt.target, taint, stmt)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                taint = self._ev(stmt.value)
                self.returns.append(taint)
                if self._is_attention_fn:
                    self._consume(taint, "return", stmt.lineno, None)
        elif isinstance(stmt, ast.If):
            self._ev(stmt.test)
            gqa = bool(_GQA_TEST.search(_text(stmt.test)))
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
            name = _base_name(dst)
            if name is not None and name not in ("self", "cls"):
                self.env[name] = self.env.get(name, _EMPTY) | src
            self._check_cache_target(dst, src, value)

    # ---------------------------------------------------------------- assignment
    def _assign(self, target: ast.expr, value: ast.expr, taint: _Taint, stmt: ast.AST) -> None:
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
            if _is_kv_name(name) and not taint.index:
                taint = replace(taint, kv=True)
            taint = self._name_origins(taint, name, stmt)
            self.env[name] = taint
            return
        # subscript / attribute targets
        self._check_cache_target(target, taint, stmt)
        base = _base_name(target)
        if isinstance(target, ast.Subscript) and base is not None and base not in ("self", "cls"):
            self.env[base] = self.env.get(base, _EMPTY) | taint

    def _name_origins(self, taint: _Taint, name: str, stmt: ast.AST) -> _Taint:
        line = getattr(stmt, "lineno", 0)
        end = getattr(stmt, "end_lineno", line) or line

        def named(origin: _Origin | None) -> _Origin | None:
            if origin is not None and origin.variable is None and line <= origin.line <= end:
                return replace(origin, variable=name)
            return origin

        return replace(
            taint,
            expanded=named(taint.expanded),
            upproj=named(taint.upproj),
            rebuilt=named(taint.rebuilt),
        )

    def _ev_quiet(self, node: ast.expr) -> _Taint:
        """Evaluate an already-evaluated sub-expression again without reporting twice."""
        return self._ev(node)

    # ---------------------------------------------------------------- expressions
    def _ev(self, node: ast.expr) -> _Taint:
        if isinstance(node, ast.Name):
            return self.env.get(node.id, _EMPTY)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Attribute):
            inner = self._ev(node.value)
            if _CACHE_ATTR.search(node.attr):
                return _Taint(kv=True, cache_read=node.lineno)
            if node.attr in ("T", "mT", "data"):
                return inner
            return _EMPTY
        if isinstance(node, ast.Subscript):
            inner = self._ev(node.value)
            self._ev(node.slice)
            base_text = _last_name(node.value)
            if isinstance(node.value, ast.Name) and re.search(r"past|cache", base_text):
                inner = inner | _Taint(kv=True, cache_read=node.lineno)
            if inner is _EMPTY:
                return inner
            if _has_none_index(node):
                inner = replace(inner, newaxis=True)
            return inner
        if isinstance(node, ast.BinOp):
            left = self._ev(node.left)
            right = self._ev(node.right)
            if isinstance(node.op, ast.MatMult):
                for t in (left, right):
                    self._consume(t, "the @ operator", node.lineno, None)
                return _EMPTY
            return left | right
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return _union(self._ev(e) for e in node.elts)
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
            return _EMPTY
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._ev(child)
        return _EMPTY

    def _call(self, call: ast.Call) -> _Taint:
        func = call.func
        callee = _last_name(func)
        recv = self._ev(func.value) if isinstance(func, ast.Attribute) else _EMPTY
        if isinstance(func, ast.Attribute) and _base_name(func) in _LIBRARIES:
            recv = _EMPTY
        args = [self._ev(a) for a in call.args]
        kwargs = {kw.arg: self._ev(kw.value) for kw in call.keywords}
        all_args = _union([*args, *kwargs.values()])
        line = call.lineno
        ctext: _Described = func  # unparsed only if a finding quotes it

        # attention consumers
        if (
            callee in _MATMUL
            or callee in _SDPA
            or (_ATTN_CALLEE.search(callee) and not _NOT_ATTN_CALLEE.search(callee))
        ):
            for t in (recv if callee in _MATMUL else _EMPTY, *args, *kwargs.values()):
                self._consume(t, ctext, line, call)
            return _EMPTY

        # cache writes
        if self._is_cache_write(call, callee):
            for t in (*args, *kwargs.values()):
                self._cache_write(t, ctext, line)
            if callee == "update":
                return _Taint(kv=True, cache_read=line)
            return _EMPTY

        # module-local helpers
        resolved = self.module.resolve(call, self.cls)
        if resolved is not None:
            name, fn, is_method = resolved
            summ = self.module.summary((self.cls if is_method else None, name), fn, is_method)
            out = all_args if summ.passes else _EMPTY
            first = args[0] if args else _EMPTY
            if summ.expands and first.kv and not first.index:
                factor = _factor(call.args[1]) if len(call.args) > 1 else None
                if factor is None and call.keywords:
                    factor = _factor(call.keywords[0].value)
                out = replace(out, expanded=self._origin(call, name, factor))
            if summ.upproj:
                out = self._upproj(out, call, name)
            return out

        # sources
        if callee in _UPPROJ:
            return self._upproj(all_args | recv, call, callee)
        if callee in _KV_PROJ and isinstance(func, ast.Attribute):
            return _Taint(kv=True)
        if callee == "arange":
            return _Taint(index=True)

        # expansions along the head dim
        src = (
            recv
            if isinstance(func, ast.Attribute) and recv is not _EMPTY
            else (args[0] if args else _EMPTY)
        )
        src_is_recv = isinstance(func, ast.Attribute) and recv is not _EMPTY
        if callee == "repeat_interleave":
            pos = 1 if src_is_recv else 2
            dim = _kwarg(call, "dim")
            if dim is None and len(call.args) > pos:
                dim = call.args[pos]
            reps = _kwarg(call, "repeats")
            if reps is None and len(call.args) > pos - 1:
                reps = call.args[pos - 1]
            if src.index:
                return src
            if src.kv and _const_int(dim) in (1, -3):
                return replace(src, expanded=self._origin(call, "repeat_interleave", _factor(reps)))
            return src
        if callee == "repeat" and src_is_recv:
            reps_args = call.args
            if src.kv and not src.index and len(reps_args) >= 3 and _const_int(reps_args[1]) != 1:
                return replace(src, expanded=self._origin(call, ".repeat", _factor(reps_args[1])))
            return src
        if callee == "repeat" and not src_is_recv and len(call.args) >= 2:
            pat = call.args[1]
            first = args[0]
            if (
                first.kv
                and isinstance(pat, ast.Constant)
                and isinstance(pat.value, str)
                and _einops_head_repeat(pat.value)
            ):
                factor = _factor(call.keywords[0].value) if call.keywords else None
                return replace(first, expanded=self._origin(call, "einops.repeat", factor))
            return first
        if callee == "unsqueeze" and src_is_recv:
            return replace(src, newaxis=True)
        if callee in ("expand", "broadcast_to") and src_is_recv:
            if src.newaxis and src.kv:
                fac = _factor(call.args[2]) if len(call.args) > 2 else ""
                return replace(src, broadcast=fac or "")
            return src
        if callee in _RESHAPE and src_is_recv:
            if src.broadcast is not None and callee != "contiguous" and src.kv:
                return replace(
                    src,
                    broadcast=None,
                    newaxis=False,
                    expanded=self._origin(call, "expand+reshape", src.broadcast or None),
                )
            return src

        if callee in _NO_PROPAGATE:
            return _EMPTY
        if isinstance(func, ast.Attribute) and _base_name(func) in ("self", "cls", "module"):
            return _EMPTY  # a sub-module call (a layer) makes a new tensor
        if src_is_recv:
            return recv | all_args if callee in ("cat", "stack") else recv
        return all_args

    # ---------------------------------------------------------------- helpers
    def _origin(self, call: ast.Call, helper: str, factor: str | None) -> _Origin:
        return _Origin(
            line=call.lineno,
            col=call.col_offset + 1,
            helper=helper,
            factor=factor,
            fallback=self._fallback > 0,
        )

    def _upproj(self, taint: _Taint, call: ast.Call, name: str) -> _Taint:
        origin = self._origin(call, name, None)
        if taint.cache_read is not None:
            return replace(taint, rebuilt=replace(origin, cache_line=taint.cache_read), kv=True)
        return replace(taint, upproj=origin, kv=True)

    def _is_cache_write(self, call: ast.Call, callee: str) -> bool:
        if callee in _CACHE_WRITE:
            return True
        if callee == "update" and isinstance(call.func, ast.Attribute):
            return len(call.args) >= 2 or bool(_CACHE_RECV.search(_text(call.func.value)))
        return False

    def _check_cache_target(self, target: ast.expr, taint: _Taint, stmt: ast.AST) -> None:
        node = target
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and (
            _CACHE_ATTR.search(node.attr) or "cache" in node.attr
        ):
            self._cache_write(taint, f"{_text(node)} assignment", getattr(stmt, "lineno", 0))
        elif isinstance(node, ast.Name) and "cache" in node.id and node is not target:
            self._cache_write(taint, f"{node.id}[...] assignment", getattr(stmt, "lineno", 0))

    def _consume(self, taint: _Taint, consumer: _Described, line: int,
                 call: ast.Call | None) -> None:
        if not self.report:
            return
        if taint.expanded is not None:
            self._report_gqa("KV401", taint.expanded, consumer, line)
        if taint.rebuilt is not None:
            self._report_mla("KV404", taint.rebuilt, consumer, line)

    def _cache_write(self, taint: _Taint, writer: _Described, line: int) -> None:
        if not self.report:
            return
        if taint.expanded is not None:
            self._report_gqa("KV402", taint.expanded, writer, line)
        if taint.upproj is not None and taint.cache_read is None:
            self._report_mla("KV403", taint.upproj, writer, line)

    def _add(self, code: str, origin: _Origin, message: str, data: dict[str, object]) -> None:
        key = (code, origin.line, origin.col)
        if key in self._reported:
            return
        self._reported.add(key)
        self.findings.append(
            SourceFinding(
                code=code,
                line=origin.line,
                column=origin.col,
                message=message,
                function=self.qualname,
                variable=origin.variable or "<expr>",
                data=data,
            )
        )

    def _report_gqa(self, code: str, origin: _Origin, described: _Described,
                    line: int) -> None:
        consumer = _described(described)
        var = origin.variable or "the K/V tensor"
        path = " on the path where enable_gqa is not used" if origin.fallback else ""
        times = f"{origin.factor} times" if origin.factor else "once per query head of a group"
        if code == "KV401":
            msg = (
                f"{var} is expanded by {origin.helper} (line {origin.line}) in {self.qualname}"
                f"{path} and read by {consumer} (line {line}): the KV heads are copied {times} "
                f"per decode step; {_FIX_GQA}"
            )
            data: dict[str, object] = {"consumer_line": line, "consumer": consumer}
        else:
            msg = (
                f"{var} is expanded by {origin.helper} (line {origin.line}) in {self.qualname}"
                f"{path} and written to the KV cache by {consumer} (line {line}): the cache "
                f"stores every KV head {times}, multiplying KV memory and the bytes read per "
                f"decode step; cache the un-repeated KV heads and {_FIX_GQA}"
            )
            data = {"cache_line": line, "cache_write": consumer}
        data.update({"helper": origin.helper, "fallback": origin.fallback})
        if origin.factor:
            data["factor"] = origin.factor
        self._add(code, origin, msg, data)

    def _report_mla(self, code: str, origin: _Origin, described: _Described,
                    line: int) -> None:
        consumer = _described(described)
        var = origin.variable or "the up-projected K/V"
        if code == "KV403":
            msg = (
                f"{var} comes from the MLA latent up-projection {origin.helper} (line "
                f"{origin.line}) in {self.qualname} and is written to the KV cache by "
                f"{consumer} (line {line}): the cache holds full per-head K/V instead of the "
                f"latent (tens of times more KV memory); {_FIX_MLA}"
            )
            data: dict[str, object] = {"cache_line": line, "cache_write": consumer}
        else:
            msg = (
                f"{var} is rebuilt by the MLA up-projection {origin.helper} (line {origin.line})"
                f" from the cached latent (cache read at line {origin.cache_line}) in "
                f"{self.qualname} and read by {consumer} (line {line}): per-head K/V is "
                f"recomputed and read for the whole context every decode step (no matrix "
                f"absorption); {_FIX_MLA}"
            )
            data = {"consumer_line": line, "consumer": consumer, "cache_line": origin.cache_line}
        data["helper"] = origin.helper
        self._add(code, origin, msg, data)


# --------------------------------------------------------------------------- entry point


def _iter_findings(tree: ast.Module) -> Iterator[SourceFinding]:
    module = _Module(tree)
    for qualname, cls, fn in module.all:
        an = _FunctionAnalyzer(module, fn, qualname, cls, report=True)
        an.run()
        yield from an.findings


def scan_source(text: str, path: str) -> list[SourceFinding]:
    """Scan Python source text; ``ValueError`` (``path:line: invalid Python: msg``) if it
    does not parse.  The text is parsed with :mod:`ast` only, never imported or executed."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise ValueError(f"{path}:{exc.lineno or 0}: invalid Python: {exc.msg}") from None
    except ValueError as exc:  # e.g. source with NUL bytes
        raise ValueError(f"{path}:0: invalid Python: {exc}") from None
    try:
        findings = list(_iter_findings(tree))
    except RecursionError:
        raise ValueError(f"{path}:0: invalid Python: nesting too deep to analyse") from None
    return sorted(findings, key=lambda f: (f.line, f.column, f.code))
