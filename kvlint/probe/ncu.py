"""Nsight Compute: the command the GPU probe runs and a parser for its CSV (pure: no torch).

``ncu --csv --page raw --print-units base`` writes one row per profiled kernel launch after a
header row, and with ``--page raw`` the first row after the header holds the units. ncu's own
messages (``==PROF== ...``, ``==WARNING== ...``) may be mixed in, and, without ``--log-file``,
the profiled program's output too. The parser finds columns by name rather than position:
the metric columns by metric name, the kernel by ``Kernel Name``, the NVTX stack by a header
that starts with ``NVTX`` or contains ``Push/Pop_Range``. Research note ``gpu-probe.md`` §1.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_READ_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
DURATION = "gpu__time_duration.sum"
METRICS = (DRAM_READ, DRAM_WRITE, L2_READ_SECTORS, DURATION)
"""What the probe collects: two passes at most under kernel replay."""

SECTOR_BYTES = 32
KERNEL_NAME = "Kernel Name"
DEFAULT_NVTX_RANGE = "kvlint_attn/"
"""``--nvtx-include`` for the push/pop range ``gpu.time_steps`` wraps each step in."""

_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4}
_TIME_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
            "second": 1e9, "s": 1e9}
_UNIT = re.compile(r"^(Ki|Mi|Gi|Ti|K|M|G|T)?(byte|sector|B)s?$")


@dataclass(frozen=True)
class KernelMetrics:
    """One profiled kernel launch."""

    name: str
    nvtx: str | None
    """The NVTX push/pop stack ncu recorded for it, as printed; ``None`` when not collected."""
    dram_read_bytes: int
    dram_write_bytes: int
    l2_read_bytes: int | None
    """L2 reads from the SMs (sectors x 32 B); ``None`` when the metric was not collected."""
    duration_ns: float | None


def ncu_command(python_argv: Sequence[str], *, nvtx_range: str = DEFAULT_NVTX_RANGE,
                launch_skip: int = 0, launch_count: int | None = None,
                log_file: str) -> list[str]:
    """The ``ncu`` invocation that profiles ``python_argv`` (the whole target command line,
    interpreter first) for the probe's metrics.

    Kernel replay with every cache flushed between passes (``--cache-control all``) so each
    kernel starts cold; clocks left alone so durations compare with CUDA-event times; CUDA
    graphs profiled node by node; child processes followed; only kernels inside the NVTX
    range ``nvtx_range`` (``name/`` for a push/pop range).
    """
    if not python_argv:
        raise ValueError("ncu_command needs the command line of the program to profile")
    if launch_skip < 0 or (launch_count is not None and launch_count < 1):
        raise ValueError("launch_skip must be >= 0 and launch_count >= 1")
    cmd = ["ncu", "--target-processes", "all", "--replay-mode", "kernel",
           "--graph-profiling", "node", "--cache-control", "all", "--clock-control", "none",
           "--nvtx", "--nvtx-include", nvtx_range]
    if launch_skip:
        cmd += ["--launch-skip", str(launch_skip)]
    if launch_count is not None:
        cmd += ["--launch-count", str(launch_count)]
    cmd += ["--metrics", ",".join(METRICS), "--csv", "--page", "raw", "--print-units", "base",
            "--log-file", log_file]
    return [*cmd, *python_argv]


def _is_nvtx_header(header: str) -> bool:
    return header.upper().startswith("NVTX") or "Push/Pop_Range" in header


def _unit_scale(unit: str, metric: str) -> float:
    """Factor from a value in ``unit`` to bytes, sectors or nanoseconds."""
    unit = unit.strip()
    if metric == DURATION:
        if not unit:
            return 1.0
        try:
            return _TIME_NS[unit]
        except KeyError:
            raise ValueError(f"unknown time unit {unit!r} for {metric}") from None
    if not unit:
        return 1.0
    match = _UNIT.match(unit)
    if match is None:
        raise ValueError(f"unknown unit {unit!r} for {metric}")
    return _SCALE[match.group(1) or ""]


def _number(cell: str) -> float | None:
    """A metric cell as a float (``1,234.5`` -> 1234.5); ``None`` for ``n/a`` or empty."""
    text = cell.strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    if not text or text.lower() in {"n/a", "na", "-", "nan"}:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _is_units_row(row: Sequence[str], id_column: int | None,
                  metric_columns: Iterable[int]) -> bool:
    """With ``--page raw`` the row after the header gives units: no launch ID (or, without
    an ID column, no number in any metric)."""
    if id_column is not None:
        return not row[id_column].strip()
    return all(_number(row[i]) is None for i in metric_columns)


def _csv_rows(text: str) -> list[list[str]]:
    lines = [line for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("==")]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def parse_csv(text: str) -> list[KernelMetrics]:
    """Kernel launches from ncu's ``--csv --page raw`` output (``--print-units base`` or not).

    Raises ``ValueError`` when no header with ``Kernel Name`` and the DRAM metrics is found,
    or when a launch lacks a DRAM figure.
    """
    rows = _csv_rows(text)
    start = next((i for i, row in enumerate(rows)
                  if KERNEL_NAME in (c.strip() for c in row)
                  and DRAM_READ in (c.strip() for c in row)), None)
    if start is None:
        raise ValueError(f"no ncu CSV header with {KERNEL_NAME!r} and {DRAM_READ!r}: was ncu "
                         f"run with --csv --page raw --metrics {','.join(METRICS)}?")
    header = [c.strip() for c in rows[start]]
    if DRAM_WRITE not in header:
        raise ValueError(f"the ncu CSV has no {DRAM_WRITE!r} column")
    column = {name: header.index(name) for name in (KERNEL_NAME, *METRICS) if name in header}
    nvtx_col = next((i for i, h in enumerate(header) if _is_nvtx_header(h)), None)
    metric_cols = [column[m] for m in METRICS if m in column]
    id_col = header.index("ID") if "ID" in header else None
    scale = dict.fromkeys(METRICS, 1.0)

    def value(row: Sequence[str], metric: str) -> float | None:
        if metric not in column:
            return None
        number = _number(row[column[metric]])
        return None if number is None else number * scale[metric]

    kernels = []
    after_header = True
    for row in rows[start + 1:]:
        if len(row) != len(header):  # the program's own output, without --log-file
            continue
        if [c.strip() for c in row] == header:  # ncu repeats it for each profiled process
            after_header = True
            continue
        if after_header and _is_units_row(row, id_col, metric_cols):
            scale = {m: _unit_scale(row[column[m]], m) for m in METRICS if m in column}
            after_header = False
            continue
        after_header = False
        name = row[column[KERNEL_NAME]].strip()
        read, write = value(row, DRAM_READ), value(row, DRAM_WRITE)
        if read is None or write is None:
            raise ValueError(f"kernel {name!r} has no DRAM bytes in the ncu CSV")
        sectors = value(row, L2_READ_SECTORS)
        nvtx = (row[nvtx_col].strip() or None) if nvtx_col is not None else None
        kernels.append(KernelMetrics(
            name=name, nvtx=nvtx, dram_read_bytes=round(read), dram_write_bytes=round(write),
            l2_read_bytes=None if sectors is None else round(sectors) * SECTOR_BYTES,
            duration_ns=value(row, DURATION)))
    return kernels


def in_range(nvtx: str | None, prefix: str) -> bool:
    """Whether an NVTX cell names a range starting with ``prefix`` (a trailing ``/``, as in
    ``--nvtx-include``, is ignored), at the top of the cell or in any of its ``:``, ``/``,
    ``;`` or ``|`` separated parts (ncu prints domain, range and payload together)."""
    if nvtx is None:
        return False
    wanted = prefix.rstrip("/")
    if nvtx.startswith(wanted):
        return True
    return any(part.strip().startswith(wanted) for part in re.split(r"[:/;|]", nvtx))


def totals(rows: Sequence[KernelMetrics],
           nvtx_prefix: str | None = None) -> dict[str, int | float | None]:
    """Sums over the launches (those in NVTX range ``nvtx_prefix`` when given).

    Keys: ``kernels``, ``dram_read_bytes``, ``dram_write_bytes``, ``dram_bytes`` (read +
    write), ``l2_read_bytes`` and ``duration_ns``; the last two are ``None`` when any summed
    launch lacks them.
    """
    chosen = [r for r in rows if nvtx_prefix is None or in_range(r.nvtx, nvtx_prefix)]
    read = sum(r.dram_read_bytes for r in chosen)
    write = sum(r.dram_write_bytes for r in chosen)
    l2 = [r.l2_read_bytes for r in chosen]
    durations = [r.duration_ns for r in chosen]
    return {
        "kernels": len(chosen),
        "dram_read_bytes": read,
        "dram_write_bytes": write,
        "dram_bytes": read + write,
        "l2_read_bytes": None if None in l2 else sum(v for v in l2 if v is not None),
        "duration_ns": None if None in durations
        else sum(v for v in durations if v is not None),
    }
