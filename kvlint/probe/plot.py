"""``kvlint probe --plot FILE``: measured KV reads per decode step against theory, by
context, one line per implementation (matplotlib, imported only here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.errors import UsageError

if TYPE_CHECKING:
    from kvlint.linter import LintRun

MIB = 1024 * 1024


def series(run: LintRun) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """``{model: {impl or "theory": [(context, MiB read per step), ...]}}``."""
    found: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for result in run.results:
        probe = result.probe
        if probe is None:
            continue
        lines = found.setdefault(result.target.ref, {})
        for m in probe.impls:
            if m.measured_read_bytes is not None:
                lines.setdefault(m.impl, []).append((probe.context,
                                                     m.measured_read_bytes / MIB))
        if probe.impls:
            lines.setdefault("theory", []).append((probe.context,
                                                   probe.impls[0].theory_read_bytes / MIB))
    return {model: {name: sorted(set(points)) for name, points in lines.items()}
            for model, lines in found.items()}


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
        for name, points in lines.items():
            xs, ys = zip(*points, strict=True)
            style = {"linestyle": "--", "color": "black"} if name == "theory" else \
                {"marker": "o"}
            ax.plot(xs, ys, label=name, **style)
        ax.set_title(model.rsplit("/", 1)[-1], fontsize=10)
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
