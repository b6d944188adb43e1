"""The keyword options of `anthropic:` models, typed (checked by `resolve_model`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from warmloop.messages import JsonValue
from warmloop.providers.option_check import CommonOptions


class AnthropicOptions(CommonOptions, total=False):
    """`anthropic:` (`AnthropicModel`)."""

    max_tokens: int
    cache_ttl: Literal["5m", "1h"]
    thinking: Mapping[str, JsonValue] | None
    max_retries: int | None
    diagnose: bool
