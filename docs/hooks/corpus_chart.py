"""MkDocs hook: draw the framework corpus chart from the committed results before the build,
so `mkdocs build` publishes the figures of the last benchmark run (docs/framework-corpus.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "docs" / "images" / "framework-corpus.png"


def on_pre_build(config: Any, **_: Any) -> None:
    if str(ROOT) not in sys.path:  # `mkdocs` runs from its own script's directory
        sys.path.insert(0, str(ROOT))
    from benchmarks.corpus_chart import RESULTS, draw, load

    draw(load(RESULTS), CHART)
