"""``kvlint probe --plot FILE``: measured KV reads per decode step against theory, by
context, one line per implementation (matplotlib, imported only here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvlint.errors import UsageError

if TYPE_CHECKING:
    from kvlint.linter import LintRun

MIB = 1024 * 1024
MARKERS = ("o", "s", "^", "D", "v")
DASHES = ("-", "--", ":", "-.", (0, (5, 1)))


def series(run: LintRun) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """``{model: {impl or "theory": [(context, MiB read per step), ...]}}``."""
    found: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for result in run.results:
        probe = result.probe
        if probe is None:
            continue
        lines = found.setdefault(result.target.ref, {})
        for m in probe.impls:
            swept = _swept(m.details)
            if swept:  # GPU: one point per timed (or profiled) context, fixed part removed
                lines.setdefault(m.impl, []).extend(swept)
                lines.setdefault("theory", []).extend(
                    (c, m.theory_read_bytes * (c + 1) / (probe.context + 1) / MIB)
                    for c, _ in swept)
            elif m.measured_read_bytes is not None:
                lines.setdefault(m.impl, []).append((probe.context,
                                                     m.measured_read_bytes / MIB))
        if probe.impls and probe.method == "dispatch":
            lines.setdefault("theory", []).append((probe.context,
                                                   probe.impls[0].theory_read_bytes / MIB))
    return {model: {name: sorted(set(points)) for name, points in lines.items()}
            for model, lines in found.items()}


def _swept(details: Mapping[str, Any]) -> list[tuple[int, float]]:
    """Bytes per step at each context of a GPU measurement, less the fitted fixed part:
    ``(t - t0) x bandwidth`` for timings, ``bytes - b0`` for Nsight Compute."""
    contexts = details.get("contexts")
    if not isinstance(contexts, list):
        return []
    if "seconds" in details and "intercept_s" in details:
        bandwidth = float(details["bandwidth_bytes_per_s"])
        return [(int(c), (float(t) - float(details["intercept_s"])) * bandwidth / MIB)
                for c, t in zip(contexts, details["seconds"], strict=True)]
    if "dram_read_bytes_per_step" in details and "intercept_bytes" in details:
        per_step = details["dram_read_bytes_per_step"]
        values = per_step.values() if isinstance(per_step, dict) else per_step
        return [(int(c), (float(b) - float(details["intercept_bytes"])) / MIB)
                for c, b in zip(contexts, values, strict=True)]
    return []


def plot_reads(run: LintRun, path: str) -> None:
    """Write the plot to ``path`` (the format follows its extension)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'kvlint[plot]'") from None
    data = series(run)
    if not data:
        raise UsageError("--plot: nothing was measured")
    fig, axes = plt.subplots(1, len(data), figsize=(6.4 * len(data), 4.2), squeeze=False)
    for ax, (model, lines) in zip(axes[0], data.items(), strict=True):
        for index, (name, points) in enumerate(lines.items()):
            xs, ys = zip(*points, strict=True)
            if name == "theory":
                ax.plot(xs, ys, label="theory", color="black", linewidth=2.5, alpha=0.45)
            else:  # distinct markers and dashes: equal implementations overlap
                ax.plot(xs, ys, label=name, marker=MARKERS[index % len(MARKERS)],
                        linestyle=DASHES[index % len(DASHES)], markersize=7 - index)
        ax.set_title(model.rsplit("/", 1)[-1].removesuffix(".json"), fontsize=10)
        ax.set_xlabel("cached tokens before the step")
        ax.set_ylabel("KV read per decode step (MiB)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except (OSError, ValueError) as err:
        raise UsageError(f"--plot {path}: {err}") from None
    finally:
        plt.close(fig)
