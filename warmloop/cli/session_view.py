"""How the CLI shows stored sessions: the resume line, the session list, a session's
transcript with each request's usage and each rewrite point, and its JSON export."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

from rich.table import Table
from rich.text import Text

from warmloop.cli.view import transcript_view
from warmloop.facts.pricing import cost_report
from warmloop.messages import AssistantTurn
from warmloop.sessions.ledger import ArchivedMessage, RewritePoint, StoredRequest
from warmloop.sessions.session import SessionInfo, StoredSession
from warmloop.sessions.warmth import duration, warmth
from warmloop.tools.gateway import SUBMIT
from warmloop.transcript_file import message_to_json

EXPORT_FORMAT = "warmloop.session/1"


def session_calls(session: StoredSession | None) -> tuple[list[str], list[str]]:
    """The tools a stored session's messages called and the output fields its submits
    gave, in first-use order (both empty when it called none)."""
    tools: dict[str, None] = {}
    outputs: dict[str, None] = {}
    if session is None or session.transcript is None:
        return [], []
    for message in session.transcript:
        for made in message.tool_calls if isinstance(message, AssistantTurn) else ():
            if made.name != SUBMIT:
                tools[made.name] = None
                continue
            try:
                given = json.loads(made.arguments)
            except ValueError:
                continue
            outputs.update(dict.fromkeys(given if isinstance(given, dict) else ()))
    return list(tools), list(outputs)


def calls_made(session: StoredSession | None) -> str:
    """What a stored session's messages show of the tools it was made with: the tools it
    called and the outputs its submits gave (`; it called lookup; its outputs: count`), or
    "" when it called none."""
    tools, outputs = session_calls(session)
    shown = f"; it called {', '.join(tools)}" if tools else ""
    return shown + (f"; its outputs: {', '.join(outputs)}" if outputs else "")


def resume_line(name: str, info: SessionInfo | None, now: float) -> Text:
    """`new session NAME`, or how long it was idle and whether its cache is expected warm."""
    if info is None or not info.length:
        return Text(f"new session {name}", style="dim")
    state = warmth(info, now)
    style = {True: "green", False: "yellow", None: "dim"}[state.warm]
    return Text.assemble(
        (f"resuming session {name} ({info.length} messages, {info.requests} requests): ", "dim"),
        (state.describe(), style),
    )


def session_cost(info: SessionInfo, requests: Sequence[StoredRequest]) -> float | None:
    """The session's cost in USD under today's price table (None when unpriced)."""
    return cost_report(info.meta.model, (r.usage for r in requests)).total


def sessions_table(
    rows: Sequence[tuple[SessionInfo, float | None]], now: float, location: str
) -> Table:
    """One row per session: id, model, steps, tokens, cost, idle time, cache state."""
    table = Table(title=f"Sessions in {location}", title_justify="left")
    for name, justify in [
        ("id", "left"),
        ("model", "left"),
        ("steps", "right"),
        ("tokens", "right"),
        ("cost $", "right"),
        ("idle", "right"),
        ("cache", "left"),
        ("in use", "left"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for info, cost in rows:
        state = warmth(info, now)
        cache = {True: "warm", False: "cold", None: "unknown"}[state.warm]
        idle = "-" if state.idle_seconds is None else duration(state.idle_seconds)
        table.add_row(
            Text(info.id),
            Text(info.meta.model or "-"),
            str(info.requests),
            f"{info.usage.prompt_tokens + info.usage.output_tokens:,}",
            "-" if cost is None else f"{cost:.4f}",
            idle,
            cache,
            "yes" if info.lease_holder else "",
        )
    return table


def _request_note(number: int, request: StoredRequest, cost: float | None) -> Text:
    usage = request.usage
    share = usage.cache_read_tokens / usage.prompt_tokens if usage.prompt_tokens else 0.0
    priced = "" if cost is None else f", ${cost:.5f}"
    return Text(
        f"    request {number}: {usage.prompt_tokens:,} prompt tokens, "
        f"{usage.cache_read_tokens:,} from the cache ({share:.0%}), "
        f"{usage.cache_write_tokens:,} written, {usage.output_tokens:,} output, "
        f"{request.seconds:.2f} s{priced}",
        style="dim",
    )


def _rewrite_note(point: RewritePoint) -> Text:
    if point.kind == "fold":
        what = f"folded messages {point.start}-{point.end - 1} under a summary at {point.end}"
    else:
        what = (
            f"replaced the content of {point.replaced} message(s) in {point.start}-{point.end - 1}"
        )
    return Text(
        f"── rewrite, revision {point.revision}: {what} (originals archived)", style="bold magenta"
    )


def session_view(
    stored: StoredSession,
    requests: Sequence[StoredRequest],
    rewrites: Sequence[RewritePoint],
    archive: Sequence[ArchivedMessage],
) -> Iterator[Text]:
    """A stored session in full: its header, then every message, with each request's usage
    after the turn it produced, each rewrite where it happened, and archived originals."""
    info, transcript = stored.info, stored.transcript
    yield Text(
        f"session {info.id}: model {info.meta.model or '-'}, {info.requests} requests, "
        f"revision {info.revision}, {len(archive)} archived original(s)",
        style="bold",
    )
    if transcript is None:
        yield Text("(no step stored yet)", style="dim")
        return
    notes: dict[int, list[Text]] = defaultdict(list)
    per_request = cost_report(info.meta.model, (r.usage for r in requests)).per_request
    for number, request in enumerate(requests, start=1):
        cost = None if per_request is None else per_request[number - 1].total
        notes[request.position].append(_request_note(number, request, cost))
    for item in archive:
        notes[item.position].append(
            Text(
                f"    (replaced at revision {item.revision}; the original is archived)",
                style="dim magenta",
            )
        )
    for point in rewrites:
        notes[point.length - 1].append(_rewrite_note(point))
    yield from transcript_view(transcript, notes)


def session_export(
    stored: StoredSession,
    requests: Sequence[StoredRequest],
    rewrites: Sequence[RewritePoint],
    archive: Sequence[ArchivedMessage],
) -> dict[str, Any]:
    """Everything stored about a session as JSON-ready data: the transcript in its file
    format, the archive, the rewrite points and each request's usage."""
    info = stored.info
    transcript = json.loads(stored.transcript.dump()) if stored.transcript else None
    return {
        "format": EXPORT_FORMAT,
        "session": info.id,
        "provider": info.provider,
        "cache_ttl": info.cache_ttl,
        "transcript": transcript,
        "archive": [
            {
                "revision": a.revision,
                "position": a.position,
                "archived_at": a.archived_at,
                "message": message_to_json(a.message),
            }
            for a in archive
        ],
        "rewrites": [asdict(p) for p in rewrites],
        "requests": [asdict(r) for r in requests],
    }
