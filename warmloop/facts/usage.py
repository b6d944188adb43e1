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

    `input_tokens` is uncached input (full price; for a local engine, tokens it evaluated),
    `cache_read_tokens` input served from the cache (for a local engine, KV reused),
    `cache_write_tokens` input written to the cache (billed extra by some providers), of
    which `cache_write_1h_tokens` at Anthropic's one-hour rate and `cache_write_12h_tokens`
    at OpenAI's twelve-hour rate. `reasoning_tokens` is the part of `output_tokens` spent
    on reasoning (already in `output_tokens`, reported apart for information).
    `compaction_*` is the usage of a provider's server-side compaction (Anthropic's
    `usage.iterations`): billed on top of the request, outside its prompt.
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

    @property
    def prompt_tokens(self) -> int:
        """All input tokens of the request, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_hit_rate(self) -> float:
        """Fraction of the prompt served from the cache (0.0 for an empty prompt)."""
        total = self.prompt_tokens
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
