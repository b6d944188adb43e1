"""The keyword options of `gemini:` models, typed (checked by `resolve_model`)."""

from __future__ import annotations

from warmloop.providers.option_check import CommonOptions


class GeminiOptions(CommonOptions, total=False):
    """`gemini:` (`GeminiModel`)."""

    max_retries: int
    retry_delay: float
    thinking_budget: int | None
    include_thoughts: bool
