"""Transcripts for the session tests: a seeded conversation that grows step by step."""

from __future__ import annotations

from warmloop.facts.usage import Usage
from warmloop.messages import (
    AssistantTurn,
    Message,
    Meta,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.sessions.ledger import StoredRequest
from warmloop.transcript import Transcript


def step(k: int, content: str = "") -> list[Message]:
    """Step `k`: an assistant turn with two calls and their results."""
    calls = tuple(ToolCall(f"call_{k}_{i}", "lookup", f'{{"key":"{k}.{i}"}}') for i in range(2))
    turn = AssistantTurn(
        text=f"step {k}",
        reasoning=f"why {k}",
        tool_calls=calls,
        provider_details={"signature": f"sig{k}=="},
    )
    results = [
        ToolResult(c.id, c.name, content or f"value {k}.{i} " + "x" * 40)
        for i, c in enumerate(calls)
    ]
    return [turn, *results]


def seeded(task: str = "Find the values.", *, model: str = "scripted") -> Transcript:
    """System text and a task, with meta as a run sets it."""
    meta = Meta(
        created_at=1000.0,
        updated_at=1001.0,
        last_request_at=1000.5,
        model=model,
        tools_fingerprint="f" * 16,
    )
    return Transcript([SystemText("You are careful."), UserText(task)], meta=meta)


def grown(steps: int) -> Transcript:
    """A seeded transcript with `steps` complete steps."""
    transcript = seeded()
    for k in range(1, steps + 1):
        transcript.extend(step(k))
    return transcript


def request(position: int, tokens: int = 100) -> StoredRequest:
    """A stored request whose assistant turn stands at `position`."""
    return StoredRequest(position, 1000.0 + position, 0.25, Usage(tokens, 2 * tokens, 3, 7, 1))
