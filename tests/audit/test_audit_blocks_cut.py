"""The blocks the cache simulator sees for requests grouped by what they carry on: a prefix
shared inside a message is whole shared blocks, and against a perfect prefix a request
shorter than its parent (a sliding window) reads all the cache serves of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.audit.test_audit_grouping import (
    QUESTION,
    audited,
    call,
    chat,
    group_of,
    observation,
    react,
    result,
    steps,
    task,
)
from warmloop.audit.blocks import conversation_pieces
from warmloop.audit.costs import input_dollars
from warmloop.facts.price_table import prices_for
from warmloop.facts.profiles import profile_for
from warmloop.facts.usage import Usage
from warmloop.wire.guard import common_prefix_length


def test_blocks_are_cut_so_every_request_shares_its_whole_common_prefix_as_blocks(
    tmp_path: Path,
) -> None:
    """The blocks the cache simulator sees: whatever prefix a request shares with the one it
    continues (a rebuilt message's start, a window's first message) is whole shared blocks on
    both sides, across the conversation (a cut made for a later request reaches back)."""
    window = [chat(m[-8:]) for m in steps("X", 12, 0)]
    rebuilt = [react(QUESTION["a"], step, 10) for step in range(8)]
    for bodies in (window, rebuilt):
        (conversation,) = group_of(tmp_path, bodies)
        split = conversation_pieces(conversation)
        for k, parent in enumerate(conversation.parents):
            if parent is None:
                continue
            old, new = split[parent].texts, split[k].texts
            shared = split[parent].common(split[k])
            assert sum(map(len, old[:shared])) == common_prefix_length("".join(old), "".join(new))


def test_a_window_request_shorter_than_its_parent_reads_all_it_can_when_perfect(
    tmp_path: Path,
) -> None:
    """Against a perfect prefix, a request that is shorter than the one it continues reads
    its whole readable length from the cache (OpenAI: 1,024 tokens, then 128-token steps)."""
    messages, window = [task("Y")], []
    for n in range(1, 13):  # results alternately long and short: the window grows, shrinks
        window.append(chat([messages[0], *messages[1:][-4:]]))
        big = {"role": "tool", "tool_call_id": f"call_{n}", "content": observation(n, 6000)}
        messages += [call(n), big if n % 2 else result(n, n)]
    (conversation,) = audited(tmp_path, window).conversations
    profile = profile_for("openai:gpt-5")
    prices = prices_for("openai:gpt-5")
    assert prices is not None
    (cost,) = [c for c in conversation.costs if c.provider == "openai:gpt-5"]
    shorter = 0
    for finding, (_, perfect) in zip(conversation.findings, cost.per_request, strict=True):
        parent = conversation.findings[finding.parent - 1] if finding.parent else None
        if parent is not None and finding.prompt_tokens < parent.prompt_tokens:
            shorter += 1
            read = profile.cacheable(finding.prompt_tokens)
            usage = Usage(input_tokens=finding.prompt_tokens, cache_read_tokens=read)
            assert perfect == pytest.approx(input_dollars(usage, prices))
    assert shorter >= 3
