"""Where the toolbox session's dollars go: each request's blocks sorted into tool
definitions (the tool block and the announcements that teach found tools), searches (the
search calls and what they answer, the provider's own search blocks included) and the rest
of the conversation, each block billed as the simulator billed its request (the leading
`cache_read_tokens` as reads, the next `cache_write_tokens` as writes, the rest uncached),
and the output apart. A block is one conversation item, counted whole: on Anthropic a
step's tool results and the announcement after them are one user message, so there the
results of a step that taught a tool count as tool definitions. Used by
`benchmarks.toolbox`, which prints it beside the optimum's choices (which tools each arm
taught in full).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.session_costs import Rules
from warmloop.facts.pricing import PER_TOKEN
from warmloop.simulate import Block, SimOutcome, SimRequest
from warmloop.wire.stream import canonical_stream

PARTS = ("tool definitions", "searches", "conversation", "output")
_SEARCH_MARKS = ("search_tools", "tool_search", "tool_reference")
_SEARCH_ANSWER = re.compile(r"\d+ match(es)? for ")


def part(label: str, text: str) -> str:
    """Which part of the session a block of the canonical stream belongs to."""
    if label == "tools" or "<tool>{" in text:
        return "tool definitions"
    if any(mark in text for mark in _SEARCH_MARKS) or _SEARCH_ANSWER.search(text):
        return "searches"
    return "conversation"


@dataclass
class Spend:
    """Dollars per part, and how many of them paid for reading a prefix again."""

    dollars: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PARTS, 0.0))
    rereads: float = 0.0

    @property
    def total(self) -> float:
        return sum(self.dollars.values())


def spend(
    requests: Sequence[SimRequest],
    parts: Sequence[Sequence[str]],
    outcomes: Sequence[SimOutcome],
    rules: Rules,
) -> Spend:
    """Each request's blocks billed in order as its usage says (see the module docstring)."""
    out = Spend()
    for request, labels, outcome in zip(requests, parts, outcomes, strict=True):
        usage = outcome.usage
        rates = rules.prices.rates_for(usage)
        read, write = usage.cache_read_tokens, usage.cache_write_tokens
        for block, name in zip(request.blocks, labels, strict=True):
            left = block.tokens
            now = min(left, read)
            read, left = read - now, left - now
            out.dollars[name] += now * rates.cache_read * PER_TOKEN
            out.rereads += now * rates.cache_read * PER_TOKEN
            now = min(left, write)
            write, left = write - now, left - now
            out.dollars[name] += (now * rates.cache_write() + left * rates.input) * PER_TOKEN
        out.dollars["output"] += usage.output_tokens * rates.output * PER_TOKEN
    return out


def labelled(payload: dict[str, Any], rules: Rules, blocks: Sequence[Block]) -> list[str]:
    """The part of each block of `payload` (cut as `session_costs.blocks` cuts it)."""
    stream = canonical_stream(payload, rules.layout)
    pieces = [*stream.head, *(("item", text) for text in stream.items)]
    return [part(label, text) for (label, text), _ in zip(pieces, blocks, strict=True)]
