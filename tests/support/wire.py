"""Wire-level prefix checking (I1) on request bodies captured at the HTTP transport.

Provider tests capture what the official SDK actually put on the wire and hand each body
to `WireLog.record`; the autouse fixture in conftest then asserts that, per session, every
request's prefix stream extends the previous one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

CACHE_MARKERS = frozenset({"cache_control"})


def strip_keys(value: Any, keys: Iterable[str] = CACHE_MARKERS) -> Any:
    """`value` with the given keys removed at every depth (the moving cache marker)."""
    drop = frozenset(keys)
    if isinstance(value, dict):
        return {k: strip_keys(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [strip_keys(v, drop) for v in value]
    return value


def wire_stream(
    body: bytes | dict[str, Any],
    conversation_key: str,
    *,
    ignore: Iterable[str] = CACHE_MARKERS,
) -> str:
    """The prompt-order stream of a JSON request body: everything but the conversation,
    then each conversation item in order, cache markers removed.

    A request that appends to the previous one yields a stream that starts with the
    previous stream, so a literal prefix check is the I1 check.
    """
    data = json.loads(body) if isinstance(body, bytes) else body
    data = strip_keys(data, ignore)
    items = data.pop(conversation_key, [])
    head = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return head + "".join(
        json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "," for item in items
    )


@dataclass
class WireLog:
    """Request bodies per session, in order, as captured at the transport."""

    streams: dict[str, list[str]] = field(default_factory=dict)

    def record(self, session: str, stream: str) -> None:
        self.streams.setdefault(session, []).append(stream)

    def violations(self) -> list[str]:
        """Human-readable I1 failures, empty when every session only appended."""
        found = []
        for session, streams in self.streams.items():
            for k in range(1, len(streams)):
                before, after = streams[k - 1], streams[k]
                if not after.startswith(before):
                    pos = next(
                        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
                        min(len(before), len(after)),
                    )
                    found.append(
                        f"session {session}: request {k + 1} does not extend request {k} "
                        f"(first difference at {pos}: {before[pos : pos + 60]!r} -> "
                        f"{after[pos : pos + 60]!r})"
                    )
        return found
