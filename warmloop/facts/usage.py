"""One normalised token usage for every provider and engine, and the rules that keep it sane.

Providers report counts in loosely typed JSON: a field can be missing, null, a float or
junk, and some gateways report overlapping counters. Every count is made a non-negative
int here (`count`), and a prompt's split into uncached, read and written tokens never adds
up to more than the prompt (`prompt_split`), so no report or cost can fail on odd usage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields


def count(value: object) -> int:
    """A token count from a loosely typed field: a non-negative int, else 0 (None, junk,
    booleans, negatives); a finite float is truncated."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value):
        return max(int(value), 0)
    return 0


def prompt_split(prompt: object, read: object, written: object) -> tuple[int, int, int]:
    """`(uncached, read, written)` of a prompt whose total is `prompt`, clipped so the
    three add up to exactly the prompt. Reads come first: some gateways (OpenRouter in
    front of Gemini) report reads and writes that each cover nearly the whole prompt,
    and a read is what the cache really served."""
    total = count(prompt)
    hit = min(count(read), total)
    wrote = min(count(written), total - hit)
    return total - hit - wrote, hit, wrote


MAX_COUNT = 10**12
"""More tokens than any request has held: a larger count in a log is damage, read as none
(10^400 would overflow every price computed from it)."""


def count_at(raw: Mapping[str, object], *path: str) -> int:
    """The count at a key path of a provider's usage object (0 when absent, junk or
    absurd): what each wire format's usage reader reads its fields with."""
    value: object = raw
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if 0 <= value <= MAX_COUNT else 0


@dataclass(frozen=True)
class Usage:
    """Token counts of one request (every field a non-negative int, whatever was passed).

    `input_tokens` is every prompt token, cached or not, as pydantic-ai and the
    OpenTelemetry GenAI conventions count it; of those, `cache_read_tokens` were served
    from the cache (for a local engine, KV reused) and `cache_write_tokens` written to it
    (billed extra by some providers), of which `cache_write_1h_tokens` at Anthropic's
    one-hour rate and `cache_write_12h_tokens` at OpenAI's twelve-hour rate; the rest,
    `uncached_tokens`, paid in full (for a local engine, evaluated). A prompt never holds
    fewer tokens than it read and wrote: `input_tokens` is raised to their sum when a
    caller passed less. `reasoning_tokens` is the part of `output_tokens` spent on
    reasoning (already in `output_tokens`, reported apart for information).
    `compaction_*` is the usage of a provider's server-side compaction (Anthropic's
    `usage.iterations`), counted the same way: billed on top of the request, outside its
    prompt.
    """

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cache_write_12h_tokens: int = 0
    reasoning_tokens: int = 0
    compaction_input_tokens: int = 0
    compaction_cache_read_tokens: int = 0
    compaction_cache_write_tokens: int = 0
    compaction_output_tokens: int = 0

    def __post_init__(self) -> None:
        # A None from `"cache_creation": {}` once reached the report and crashed it: every
        # field is an int from here on, whatever a parser handed over.
        for item in fields(self):
            value = getattr(self, item.name)
            if type(value) is not int or value < 0:
                object.__setattr__(self, item.name, count(value))
        for total, read, written in (
            ("input_tokens", "cache_read_tokens", "cache_write_tokens"),
            (
                "compaction_input_tokens",
                "compaction_cache_read_tokens",
                "compaction_cache_write_tokens",
            ),
        ):
            parts = getattr(self, read) + getattr(self, written)
            if getattr(self, total) < parts:
                object.__setattr__(self, total, parts)

    @classmethod
    def of_parts(
        cls, uncached: object, read: object, written: object, output: object = 0, **more: int
    ) -> Usage:
        """A usage from a prompt's three parts (uncached, read, written: how Anthropic,
        DeepSeek and a local engine report it), `input_tokens` their sum."""
        parts = (count(uncached), count(read), count(written))
        return cls(sum(parts), parts[1], parts[2], count(output), **more)

    @property
    def uncached_tokens(self) -> int:
        """The prompt tokens neither read from the cache nor written to it (full price)."""
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens

    @property
    def prompt_tokens(self) -> int:
        """All input tokens of the request, cached or not: `input_tokens`."""
        return self.input_tokens

    @property
    def cache_hit_rate(self) -> float:
        """Fraction of the prompt served from the cache (0.0 for an empty prompt)."""
        total = self.input_tokens
        return self.cache_read_tokens / total if total else 0.0

    @property
    def compaction(self) -> Usage:
        """The server-side compaction's own usage, as a request of its own."""
        return Usage(
            self.compaction_input_tokens,
            self.compaction_cache_read_tokens,
            self.compaction_cache_write_tokens,
            self.compaction_output_tokens,
        )

    def __add__(self, other: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))
