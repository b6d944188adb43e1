"""A logged request as simulator blocks: canonical pieces, their tokens and cache markers.

For a format whose cache reads at markers, a block is what its lookback counts, with the
markers the client really sent (its record's `WireFormat.pieces`: for Anthropic's 20-block
lookback, each tool, each system block and each content block of each message). For the
other formats a block is one head section (request parameters, tools, system) or one
conversation item. Token counts are spread over the blocks in proportion to their text and
add up to the request's prompt tokens (logged, or estimated).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from warmloop.exchange.grouping import Conversation
from warmloop.exchange.reuse import pieces
from warmloop.simulate import Block
from warmloop.wire.guard import common_prefix_length
from warmloop.wire.pieces import Pieces


def _split(found: Pieces, cuts: Mapping[str, set[int]]) -> Pieces:
    """`found` with each piece cut at the offsets `cuts` holds for its text; a marker stays
    on the last part (a cache marker closes its block, wherever the block is cut)."""
    texts: list[str] = []
    marks: list[str | None] = []
    for text, mark in zip(found.texts, found.marks, strict=True):
        start = 0
        for offset in sorted(cuts.get(text, ())):
            texts.append(text[start:offset])
            marks.append(None)
            start = offset
        texts.append(text[start:])
        marks.append(mark)
    return Pieces(tuple(texts), tuple(marks))


def conversation_pieces(conversation: Conversation, *, cut: bool = True) -> list[Pieces]:
    """Each request's blocks; with `cut`, a piece is cut where a request diverges inside it
    from the request it continues (both sides), so the shared start of a rebuilt message is
    one block on both: automatic caching (and an engine's KV cache) reads the longest common
    prefix, not whole messages. Cuts belong to a piece's text, wherever it is sent, and two
    pieces that share a start share every cut inside it, so shared blocks stay identical
    across the whole conversation. Explicit caching (Anthropic) reads only up to a marker at
    the end of a block the client sent: no cut for it."""
    found = [pieces(entry) for entry in conversation.entries]
    if not cut:
        return found
    cuts: dict[str, set[int]] = {}
    pairs: list[tuple[str, str, int]] = []
    for k, parent in enumerate(conversation.parents):
        if parent is None:
            continue
        before, after = found[parent], found[k]
        piece = before.common(after)
        if piece < min(len(before.texts), len(after.texts)):
            old, new = before.texts[piece], after.texts[piece]
            offset = common_prefix_length(old, new)
            if offset:
                pairs.append((old, new, offset))
                for text in (old, new):
                    if offset < len(text):
                        cuts.setdefault(text, set()).add(offset)
    changed = True
    while changed:  # pieces with a common start share the cuts inside it: to a fixpoint
        changed = False
        for old, new, offset in pairs:
            inside = {c for c in cuts.get(old, set()) | cuts.get(new, set()) if c < offset}
            for text in (old, new):
                have = cuts.setdefault(text, set())
                if not inside <= have:
                    have |= inside
                    changed = True
    return [_split(p, cuts) for p in found]


def sized(
    texts: Sequence[str],
    tokens: int,
    marks: Sequence[str | None],
    previous: Sequence[Block] = (),
    common: int = 0,
) -> tuple[Block, ...]:
    """Blocks whose tokens add up to `tokens`: the `common` leading blocks shared with the
    previous request keep their token counts from `previous` (the same text is the same
    tokens), the rest share what is left in proportion to each text's length."""
    kept = [block.tokens for block in previous[:common]]
    if sum(kept) > tokens:  # the shared prefix cannot outweigh the whole request
        kept = []
    counts = kept + _spread([len(text) for text in texts[len(kept) :]], tokens - sum(kept))
    return tuple(
        Block(count, hashlib.sha256(text.encode("utf-8")).hexdigest(), mark)
        for text, count, mark in zip(texts, counts, marks, strict=True)
    )


def _spread(lengths: Sequence[int], tokens: int) -> list[int]:
    total = sum(lengths) or 1
    counts, seen, previous_end = [], 0, 0
    for length in lengths:
        seen += length
        end = round(seen * tokens / total)
        counts.append(end - previous_end)
        previous_end = end
    if counts:
        counts[-1] += tokens - previous_end  # an empty tail still gets every token
    return counts


def ideal_marks(count: int, common: int, ttl: str) -> tuple[str | None, ...]:
    """Where a careful client puts explicit markers: on the last block, and on the last
    block shared with the previous request (so a read never depends on the lookback)."""
    marks: list[str | None] = [None] * count
    if count:
        marks[-1] = ttl
    if 0 < common < count:
        marks[common - 1] = ttl
    return tuple(marks)
