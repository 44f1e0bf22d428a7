"""The optional Nsight Compute measurement of the GPU probe: ``dram__bytes_read.sum`` over
the attention modules, at several contexts, with the fixed part removed by a slope fit
(research note ``gpu-probe.md`` §1). Pure: no torch (the profiled program,
:mod:`kvlint.probe.gpu_bench`, imports it in its own process).

NVTX naming
    :mod:`kvlint.probe.gpu_bench` pushes one push/pop range per attention forward, named
    ``kvlint_attn:{context}`` (``kvlint_attn:8192``), in the default domain, and no other
    range. Warm-up steps and cache resets run outside any range. ncu is given one plain
    ``--nvtx-include kvlint_attn:{context}/`` per context (``:`` is not an NVTX-filter
    quantifier, and several includes are OR-ed), so no ``regex:`` support is needed and only
    the kernels of the attention modules are profiled. In the CSV, a launch belongs to
    context ``L`` when its NVTX cell holds ``kvlint_attn:L`` as a whole name, wherever ncu
    prints it (``<default domain>:kvlint_attn:8192:none:none:0:0``, a nested stack
    ``outer/kvlint_attn:8192``...): not preceded by a name character nor followed by a
    digit, so ``kvlint_attn:81920`` is not ``kvlint_attn:8192``. ``ncu.in_range(cell,
    "kvlint_attn")`` still matches every one of these ranges.

Method
    bytes(L) = b0 + s * L per decode step; ``b0`` (the attention projections' weights, Q/O,
    launches' fixed traffic) drops out of the slope, ``s / batch`` is the DRAM bytes read
    per context token and sequence, compared with the theory's bytes per token.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvlint.errors import UsageError
from kvlint.probe import ncu
from kvlint.probe.ncu import KernelMetrics
from kvlint.probe.result import ImplMeasurement
from kvlint.probe.slope import MIN_R2, fit, fit_quality_note

NVTX_PREFIX = "kvlint_attn"
"""Every range :mod:`kvlint.probe.gpu_bench` pushes is ``kvlint_attn:{context}``."""
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
PERMISSION_MESSAGE = (
    "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): run it as root, or "
    "load the NVIDIA driver with NVreg_RestrictProfilingToAdminUsers=0")
_CONTEXT_IN_CELL = re.compile(rf"(?<![A-Za-z0-9_]){NVTX_PREFIX}:(\d+)(?!\d)")


def range_name(context: int) -> str:
    """The NVTX push/pop range the attention modules run in at ``context``."""
    return f"{NVTX_PREFIX}:{int(context)}"


def contexts_in(nvtx: str | None) -> set[int]:
    """The contexts whose range an NVTX cell names (usually one; none for ``None``)."""
    if nvtx is None:
        return set()
    return {int(match) for match in _CONTEXT_IN_CELL.findall(nvtx)}


def ncu_available() -> str | None:
    """The path of ``ncu`` on ``PATH``, or ``None``."""
    return shutil.which("ncu")


def bytes_per_context(rows: Sequence[KernelMetrics], contexts: Sequence[int], steps: int, *,
                      exclude_kernels: str | None = None) -> dict[int, float]:
    """DRAM bytes read per decode step at each context: the launches in range
    ``kvlint_attn:{context}`` summed, divided by ``steps``.

    ``exclude_kernels`` (a regular expression searched in the kernel name) leaves kernels
    out, e.g. ``CatArrayBatchedCopy`` for DynamicCache's concatenation of the history.
    Raises ``ValueError`` when ``steps < 1`` or a context has no launch in its range.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    skip = re.compile(exclude_kernels) if exclude_kernels else None
    wanted = [int(c) for c in contexts]
    summed = dict.fromkeys(wanted, 0)
    launches = dict.fromkeys(wanted, 0)
    for row in rows:
        if skip is not None and skip.search(row.name):
            continue
        for context in contexts_in(row.nvtx):
            if context in summed:
                summed[context] += row.dram_read_bytes
                launches[context] += 1
    missing = [c for c in wanted if not launches[c]]
    if missing:
        raise ValueError("no profiled kernel in NVTX range "
                         + ", ".join(range_name(c) for c in missing))
    return {c: summed[c] / steps for c in wanted}


def ncu_measurement(impl: str, per_context: Mapping[int, float], *, batch: int, dtype: str,
                    theory_bytes_per_token: int, theory_read_bytes_at: Callable[[int], int],
                    theory_cache_bytes_at: Callable[[int], int]) -> ImplMeasurement:
    """The measurement a slope fit of DRAM bytes read per step over the contexts gives.

    ``effective = slope / batch`` bytes per context token and sequence; the measured read
    bytes are reported at the largest context ``L`` as ``effective * (L + 1) * batch`` (the
    slope extrapolated without the fixed part), so that the read ratio is the DRAM ratio
    when the theory counts ``L + 1`` tokens of ``theory_bytes_per_token``. Raises
    ``ValueError`` for fewer than 2 contexts, ``batch < 1`` or a non-positive theory.
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if theory_bytes_per_token <= 0:
        raise ValueError(f"theory bytes per token must be positive, got "
                         f"{theory_bytes_per_token}")
    contexts = sorted(int(c) for c in per_context)
    if len(contexts) < 2:
        raise ValueError("the slope needs at least 2 contexts")
    measured_bytes = [float(per_context[c]) for c in contexts]
    line = fit([float(c) for c in contexts], measured_bytes)
    effective = line.slope / batch
    dram_ratio = effective / theory_bytes_per_token
    longest = contexts[-1]
    notes: list[str] = []
    if fit_quality_note(line) is not None:
        if line.r2 < MIN_R2:
            notes.append(f"DRAM-bytes fit R² {line.r2:.3f} < {MIN_R2}: the bytes read are not "
                         f"linear in the context (a working set partly served from L2, or "
                         f"kernels that change with the context): raise the contexts or the "
                         f"batch")
        else:
            notes.append(f"DRAM bytes read did not grow with the context (slope "
                         f"{line.slope:.3g} B/token): a static cache attends over all "
                         f"max_cache_len positions whatever the context, or the contexts "
                         f"are too short")
    notes.append("ncu --cache-control all flushes L2 before each kernel, so kernels that "
                 "legitimately reuse L2 (a repeat_kv copy consumed at once) are slightly "
                 "overstated")
    measured = round(effective * (longest + 1) * batch) if line.slope > 0 else None
    return ImplMeasurement(
        impl=impl,
        dtype=dtype,
        theory_read_bytes=theory_read_bytes_at(longest),
        measured_read_bytes=measured,
        theory_cache_bytes=theory_cache_bytes_at(longest),
        measured_cache_bytes=None,
        details={
            "batch": batch,
            "points": line.points,
            "contexts": contexts,
            "dram_read_bytes_per_step": measured_bytes,
            "slope_bytes_per_token": line.slope,
            "intercept_bytes": line.intercept,
            "r2": line.r2,
            "effective_bytes_per_token": effective,
            "theory_bytes_per_token": theory_bytes_per_token,
            "dram_ratio": dram_ratio,
        },
        notes=tuple(notes),
    )


def _last_line(text: str) -> str | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


def _failure_message(returncode: int, stdout: str, stderr: str) -> str:
    """One line saying why an ncu run failed (``stdout`` may include ncu's log file)."""
    if PERMISSION_ERROR in stdout or PERMISSION_ERROR in stderr:
        return PERMISSION_MESSAGE
    last = _last_line(stderr) or _last_line(stdout)
    status = f"ncu failed (exit status {returncode})"
    return f"{status}: {last}" if last else status


@dataclass(frozen=True, kw_only=True)
class BenchSpec:
    """What the profiled program (:mod:`kvlint.probe.gpu_bench`) runs: its decode steps'
    contexts, batch, layers and dtype, its cache, and how many steps it profiles."""

    contexts: Sequence[int]
    batch: int
    layers: int
    dtype: str
    cache_kind: str = "dynamic"
    max_cache_len: int | None = None
    steps: int = 3


def bench_argv(config_path: str | os.PathLike[str], impl: str, spec: BenchSpec) -> list[str]:
    """The command line of the profiled program, :mod:`kvlint.probe.gpu_bench`."""
    argv = [sys.executable, "-m", "kvlint.probe.gpu_bench", "--config", os.fspath(config_path),
            "--impl", impl, "--contexts", ",".join(str(int(c)) for c in spec.contexts),
            "--batch", str(spec.batch), "--layers", str(spec.layers), "--dtype", spec.dtype,
            "--cache", spec.cache_kind]
    if spec.max_cache_len is not None:
        argv += ["--max-cache-len", str(spec.max_cache_len)]
    return [*argv, "--steps", str(spec.steps)]


def ncu_argv(ncu_path: str, python_argv: Sequence[str], contexts: Sequence[int],
             log_file: str) -> list[str]:
    """``ncu.ncu_command`` for ``python_argv`` with one ``--nvtx-include`` per context."""
    if not contexts:
        raise ValueError("ncu needs at least one context")
    first, *others = (f"{range_name(c)}/" for c in contexts)
    cmd = ncu.ncu_command(python_argv, nvtx_range=first, log_file=log_file)
    at = cmd.index("--nvtx-include") + 2
    extra = [arg for name in others for arg in ("--nvtx-include", name)]
    return [ncu_path, *cmd[1:at], *extra, *cmd[at:]]


def run_ncu(config_path: str | os.PathLike[str], impl: str, spec: BenchSpec, *,
            timeout: float = 600) -> list[KernelMetrics]:
    """Profile ``spec.steps`` decode steps of ``impl`` at each of ``spec.contexts`` under ncu
    and return the attention kernels' launches (:func:`bytes_per_context` turns them into
    bytes).

    Raises ``UsageError`` with one line when ncu is missing, fails (counters not permitted,
    the program failed, a timeout) or profiles nothing.
    """
    path = ncu_available()
    if path is None:
        raise UsageError("ncu (Nsight Compute) is not on PATH: install the CUDA toolkit's "
                         "nsight-compute, or leave out the ncu measurement")
    contexts, steps = spec.contexts, spec.steps
    if steps < 1:
        raise UsageError(f"ncu: steps must be at least 1, got {steps}")
    python_argv = bench_argv(config_path, impl, spec)
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # the child imports kvlint
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH"))
                                        if p)
    with tempfile.TemporaryDirectory(prefix="kvlint-ncu-") as tmp:
        log_file = os.path.join(tmp, "ncu.csv")
        cmd = ncu_argv(path, python_argv, contexts, log_file)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  env=env, check=False)
        except subprocess.TimeoutExpired:
            raise UsageError(f"ncu did not finish within {timeout:g} s: lower the contexts, "
                             f"the steps or the layers") from None
        except OSError as err:
            raise UsageError(f"cannot run ncu: {err}") from None
        log = Path(log_file).read_text(errors="replace") if os.path.exists(log_file) else ""
    output = done.stdout + "\n" + log
    if done.returncode != 0 or PERMISSION_ERROR in output or PERMISSION_ERROR in done.stderr:
        raise UsageError(_failure_message(done.returncode, output, done.stderr))
    try:
        rows = ncu.parse_csv(log)
    except ValueError as err:
        if "No kernels were profiled" in output + done.stderr:
            raise UsageError(f"ncu profiled no kernel in the {NVTX_PREFIX}:* NVTX ranges "
                             f"(does {impl} run its attention in modules named *attn or "
                             f"*attention?)") from None
        raise UsageError(f"cannot read ncu's CSV: {str(err).splitlines()[0]}") from None
    _check_bench_report(done.stdout, contexts, steps)
    return rows


def _check_bench_report(stdout: str, contexts: Sequence[int], steps: int) -> None:
    """The profiled program's last line, ``{"contexts": [...], "steps": S}``, should say it
    ran what was asked (ncu's own output goes to the log file)."""
    for line in reversed(stdout.splitlines()):
        if line.lstrip().startswith("{"):
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                continue
            if (isinstance(report, dict)
                    and (report.get("contexts") != [int(c) for c in contexts]
                         or report.get("steps") != steps)):
                raise UsageError(f"the profiled program reported {line.strip()}, expected "
                                 f"contexts {list(contexts)} and {steps} steps")
            return
