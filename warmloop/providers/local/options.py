"""The keyword options of the embedded model (`local`), typed (checked by `resolve_model`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typing_extensions import TypedDict


class LocalOptions(TypedDict, total=False):
    """`local` (`LocalModel`, in process)."""

    model_path: str | Path | None
    n_ctx: int
    max_tokens: int
    seed: int
    n_threads: int
    context_window: int | None
    openings: Any
