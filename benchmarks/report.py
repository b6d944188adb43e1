"""The benchmark's outputs: a markdown table and a PNG of cumulative cost per request."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.measure import PROVIDERS, LoopResult
from benchmarks.scenarios import PENDING

PLOT_PROVIDER = "anthropic:claude-sonnet-4-6"


def markdown(results: Sequence[LoopResult]) -> str:
    """One row per scenario and loop; baselines show their cost as a multiple of warmloop's."""
    names = [spec.split(":", 1)[0] for spec in PROVIDERS]
    head = ["scenario", "loop", "requests", "prompt tokens", "cached/limit"]
    head += [f"{name} $" for name in names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ours = {r.scenario: r for r in results if r.loop == "warmloop"}
    for result in results:
        base = ours.get(result.scenario)
        cells = [
            result.scenario,
            result.loop,
            str(result.requests),
            f"{result.prompt_tokens:,}",
            f"{result.cached_over_limit:.3f}",
        ]
        for spec in PROVIDERS:
            dollars = result.dollars.get(spec)
            if dollars is None:
                cells.append("-")
                continue
            cell = f"{dollars:.4f}"
            theirs = base.dollars.get(spec) if base is not None and base is not result else None
            if theirs:
                cell += f" ({dollars / theirs:.2f}x)"
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "Costs are whole-session dollars (input, cache reads and writes, output) from each "
        "provider's cache simulator and dated price table; (Nx) is a baseline's cost as a "
        "multiple of warmloop's. Measured by its own benchmark: "
        + "; ".join(f"{name} ({why})" for name, why in PENDING.items())
        + "."
    )
    return "\n".join(lines) + "\n"


def plot(results: Sequence[LoopResult], out: Path, provider: str = PLOT_PROVIDER) -> Path:
    """Cumulative cost per request under `provider`, one panel per scenario (needs the
    `bench` extra: matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = list(dict.fromkeys(r.scenario for r in results))
    figure, axes = plt.subplots(1, len(scenarios), figsize=(5 * len(scenarios), 4), squeeze=False)
    for axis, scenario in zip(axes[0], scenarios, strict=True):
        for result in (r for r in results if r.scenario == scenario):
            series = result.cumulative.get(provider, [])
            ours = result.loop == "warmloop"  # drawn on top: baselines may coincide with it
            axis.plot(
                range(1, len(series) + 1),
                series,
                label=result.loop,
                linewidth=2.6 if ours else 1.6,
                linestyle="--" if ours else "-",
                zorder=3 if ours else 2,
            )
        axis.set_title(scenario)
        axis.set_xlabel("request")
        axis.set_ylabel(f"cumulative $ ({provider})")
        axis.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out
