"""The loops warmloop is measured against, written here as prompt policies over the same
session: each takes the conversation an agent has at each request (system prompt, task,
turns so far) and decides what to send.

- rebuild: re-renders its prompt every step with the step number, the time and a progress
  line in the system prompt (how many agent frameworks write their memory).
- sliding window: system, task and the last `WINDOW` messages (never cutting a tool
  result from its call: a parallel step stays whole).
- summarise at trigger: append-only until the prompt passes `TRIGGER` tokens; then one
  summary request over the whole prompt, and the old turns are replaced by the summary
  (the last `KEEP` messages stay).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from benchmarks.scenarios import Request, Scenario
from warmloop.providers.openai.record import CHAT
from warmloop.wire.stream import canonical_stream

WINDOW = 12
TRIGGER = 12_000
KEEP = 4
SUMMARY_OUTPUT = 400
CHARS_PER_TOKEN = 4
CLOCK_START = 1_767_258_000.0

Policy = Callable[[Scenario], list[Request]]


def tokens(payload: dict[str, Any]) -> int:
    """Prompt tokens of a Chat payload (about four characters a token)."""
    return -(-canonical_stream(payload, CHAT).length // CHARS_PER_TOKEN)


def _with(request: Request, messages: Sequence[dict[str, Any]], **extra: Any) -> Request:
    return Request(request.at, {**request.payload, "messages": list(messages)}, **extra)


def warmloop(scenario: Scenario) -> list[Request]:
    """warmloop itself: the requests its Agent sent."""
    return list(scenario.requests)


def rebuild(scenario: Scenario) -> list[Request]:
    """A loop that rebuilds its prompt each step, volatile progress in the system prompt."""
    out = []
    for step, request in enumerate(scenario.requests, start=1):
        system, *rest = request.messages
        calls = sum(1 for m in rest if m.get("role") == "tool")
        now = datetime.fromtimestamp(CLOCK_START + request.at, UTC).isoformat(timespec="seconds")
        progress = f"\n\nStep {step}. Current time: {now}. Tool calls so far: {calls}."
        out.append(_with(request, [{**system, "content": system["content"] + progress}, *rest]))
    return out


def _tail_start(messages: Sequence[dict[str, Any]], start: int) -> int:
    """`start`, moved back to the assistant turn whose tool results it would cut off (a
    parallel step stays whole, even past the window)."""
    while 0 < start < len(messages) and messages[start].get("role") == "tool":
        start -= 1
    return start


def sliding_window(scenario: Scenario) -> list[Request]:
    """System, task, and the last `WINDOW` messages."""
    out = []
    for request in scenario.requests:
        system, task, *turns = request.messages
        start = _tail_start(turns, max(0, len(turns) - WINDOW))
        out.append(_with(request, [system, task, *turns[start:]]))
    return out


def summary_text(covered: Sequence[dict[str, Any]]) -> str:
    """A deterministic stand-in for the model's summary of `covered` (~1,600 characters)."""
    calls = [m for m in covered if m.get("role") == "assistant"]
    head = f"Summary of the work so far ({len(calls)} steps): "
    return head + "read the billing modules, searched for rounding helpers, ran tests. " * 22


def _view(
    head: Sequence[dict[str, Any]], turns: Sequence[dict[str, Any]], cut: int, summary: str
) -> list[dict[str, Any]]:
    note = [{"role": "user", "content": summary}] if summary else []
    return [*head, *note, *turns[cut:]]


def summarise_at_trigger(scenario: Scenario) -> list[Request]:
    """Append-only until `TRIGGER` tokens; then a summary request and a compacted history."""
    out: list[Request] = []
    cut, summary = 0, ""
    for request in scenario.requests:
        head, turns = request.messages[:2], request.messages[2:]
        current = _with(request, _view(head, turns, cut, summary))
        if tokens(current.payload) > TRIGGER:
            ask = {"role": "user", "content": "Summarise the work so far in 300 words."}
            out.append(_with(request, [*current.messages, ask], output_tokens=SUMMARY_OUTPUT))
            cut = _tail_start(turns, max(cut, len(turns) - KEEP))
            summary = summary_text(turns[:cut])
            current = _with(request, _view(head, turns, cut, summary))
        out.append(current)
    return out


POLICIES: dict[str, Policy] = {
    "warmloop": warmloop,
    "rebuild each step": rebuild,
    f"sliding window ({WINDOW})": sliding_window,
    f"summarise at {TRIGGER // 1000}k": summarise_at_trigger,
}
