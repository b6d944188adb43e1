"""The public benchmark's chart: each framework's cost against the best its own requests
allow, direct and through `warmloop proxy`, grouped by the provider whose rules price it,
beside warmloop's own loop (`python -m benchmarks proxy_corpus --results FILE`).

`draw(rows, path)` is what the docs build calls (`docs/hooks/corpus_chart.py`) on the rows
the last run wrote (`benchmarks/results/framework_corpus.json`), so the page's chart is
always the committed figures; re-running the benchmark rewrites both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "framework_corpus.json"
OWN = "warmloop_"


def load(path: Path = RESULTS) -> list[dict[str, object]]:
    """The rows of the last run (`proxy_corpus --results`)."""
    rows: list[dict[str, object]] = json.loads(path.read_text("utf-8"))["rows"]
    return rows


def draw(rows: Sequence[Mapping[str, object]], path: Path) -> None:
    """One horizontal bar chart: per framework (grouped by rules), direct and proxied."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(
        rows,
        key=lambda r: (
            str(r["rules"]),
            str(r["framework"]).startswith(OWN) is False,
            str(r["framework"]),
        ),
    )
    labels = [f"{r['framework']} ({r['wire']}, {r['rules']})" for r in ordered]
    direct = [float(str(r["direct"])) for r in ordered]
    proxied = [float(str(r["proxied"])) for r in ordered]
    figure, axes = plt.subplots(figsize=(10, 0.42 * len(ordered) + 1.6))
    ys = range(len(ordered))
    axes.barh([y + 0.2 for y in ys], direct, height=0.4, label="direct", color="#c44e52")
    axes.barh(
        [y - 0.2 for y in ys], proxied, height=0.4, label="through warmloop proxy", color="#4c72b0"
    )
    axes.axvline(1.0, color="black", linewidth=0.8)
    axes.set_yticks(list(ys))
    axes.set_yticklabels(labels, fontsize=8)
    for tick, row in zip(axes.get_yticklabels(), ordered, strict=True):
        if str(row["framework"]).startswith(OWN):
            tick.set_fontweight("bold")
    axes.invert_yaxis()
    axes.set_xlabel("input cost / the best its own requests allow (1.0 = best)")
    axes.set_title("Framework corpus: cost against each framework's own bound")
    axes.legend(loc="lower right", fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
