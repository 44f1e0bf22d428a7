"""What the source analyzer reports: its codes, :class:`SourceFinding`, and the wording of
each finding (:class:`FindingLog`, one per analysed function, reports an origin once)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvlint.scan.syntax import Described, described
from kvlint.scan.taint import Origin
from kvlint.scan.vocabulary import FIX_GQA, FIX_MLA

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


class FindingLog:
    """The findings of one function (``qualname``), each (code, origin) reported once."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname
        self.findings: list[SourceFinding] = []
        self._reported: set[tuple[str, int, int]] = set()

    def _add(self, code: str, origin: Origin, message: str, data: dict[str, object]) -> None:
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

    def report_gqa(self, code: str, origin: Origin, what: Described,
                   line: int) -> None:
        consumer = described(what)
        var = origin.variable or "the K/V tensor"
        path = " on the path where enable_gqa is not used" if origin.fallback else ""
        times = f"{origin.factor} times" if origin.factor else "once per query head of a group"
        if code == "KV401":
            msg = (
                f"{var} is expanded by {origin.helper} (line {origin.line}) in {self.qualname}"
                f"{path} and read by {consumer} (line {line}): the KV heads are copied {times} "
                f"per decode step; {FIX_GQA}"
            )
            data: dict[str, object] = {"consumer_line": line, "consumer": consumer}
        else:
            msg = (
                f"{var} is expanded by {origin.helper} (line {origin.line}) in {self.qualname}"
                f"{path} and written to the KV cache by {consumer} (line {line}): the cache "
                f"stores every KV head {times}, multiplying KV memory and the bytes read per "
                f"decode step; cache the un-repeated KV heads and {FIX_GQA}"
            )
            data = {"cache_line": line, "cache_write": consumer}
        data.update({"helper": origin.helper, "fallback": origin.fallback})
        if origin.factor:
            data["factor"] = origin.factor
        self._add(code, origin, msg, data)

    def report_mla(self, code: str, origin: Origin, what: Described,
                   line: int) -> None:
        consumer = described(what)
        var = origin.variable or "the up-projected K/V"
        if code == "KV403":
            msg = (
                f"{var} comes from the MLA latent up-projection {origin.helper} (line "
                f"{origin.line}) in {self.qualname} and is written to the KV cache by "
                f"{consumer} (line {line}): the cache holds full per-head K/V instead of the "
                f"latent (tens of times more KV memory); {FIX_MLA}"
            )
            data: dict[str, object] = {"cache_line": line, "cache_write": consumer}
        else:
            msg = (
                f"{var} is rebuilt by the MLA up-projection {origin.helper} (line {origin.line})"
                f" from the cached latent (cache read at line {origin.cache_line}) in "
                f"{self.qualname} and read by {consumer} (line {line}): per-head K/V is "
                f"recomputed and read for the whole context every decode step (no matrix "
                f"absorption); {FIX_MLA}"
            )
            data = {"consumer_line": line, "consumer": consumer, "cache_line": origin.cache_line}
        data["helper"] = origin.helper
        self._add(code, origin, msg, data)

