"""One normalised token usage for every provider and engine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """Token counts of one request.

    `input_tokens` is uncached input (full price; for a local engine, tokens it evaluated),
    `cache_read_tokens` input served from the cache (for a local engine, KV reused),
    `cache_write_tokens` input written to the cache (billed extra by some providers), of
    which `cache_write_1h_tokens` at the one-hour rate (Anthropic).
    """

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """All input tokens of the request, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_hit_rate(self) -> float:
        """Fraction of the prompt served from the cache (0.0 for an empty prompt)."""
        total = self.prompt_tokens
        return self.cache_read_tokens / total if total else 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )
