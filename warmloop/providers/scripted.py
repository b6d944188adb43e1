"""A scripted model: a queue of replies that records every rendered request.

Shipped in the library so users can test their own agents deterministically:

    model = ScriptedModel([call("search", query="x"), call("submit", answer="42")])
    run = Agent(model, tools=[search]).run_sync("question")
    assert model.requests[1].payload["messages"][-1]["role"] == "tool"

`requests[k]` is what request k was rendered as, `sessions[k]` its routing key and
`branches[k]` the (transcript id, parent id, revision) it was rendered from; keep-alives
(`keepalive.ping`) are answered with an empty turn and listed in `keepalives`. It
streams too (`stream`, as `agent.iter` asks): a reply's text as one delta, each call as one. A small
`context_window` makes the agent's maintenance (pruning, folding) easy to exercise.

Named as a provider's model (`name="anthropic:claude-sonnet-4-6"`, `cache_ttl="1h"`), it
carries that model's facts from the tables (window, cache rules, prices; a window the
tables do not know stays unknown, as it would live), so the agent plans as it would live;
otherwise its window is `context_window` (default `DEFAULT_WINDOW`) and it bills nothing.

It renders in the Chat Completions wire format (native tools) or, with
`text_protocol=True`, as Thought/Action text that the loop parses, and reports usage as a
perfect prefix cache would (about four characters a token).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from warmloop.errors import ConfigurationError, ProviderError
from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, ToolCall
from warmloop.protocols import react_text
from warmloop.providers.base import (
    KnownFacts,
    ModelResponse,
    Rendered,
    TranscriptRenderer,
    text_protocol_reply,
)
from warmloop.providers.deltas import Delta, TextDelta, ToolCallDelta
from warmloop.providers.model_settings import Place
from warmloop.providers.records import ProviderRecord, load
from warmloop.providers.registry import register_provider, wire_format
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.guard import common_prefix_length
from warmloop.wire.stream import WireStream

CHARS_PER_TOKEN = 4
MAX_UNSENT = 64
DEFAULT_WINDOW = 128_000
"""The scripted engine's window when its name is no model of the tables."""


@dataclass(frozen=True)
class Reply:
    """One scripted reply: text and (name, raw JSON arguments) tool calls."""

    text: str = ""
    calls: tuple[tuple[str, str], ...] = ()
    reasoning: str = ""


def call(name: str, /, **arguments: object) -> Reply:
    """A reply that calls one tool with keyword arguments."""
    return Reply(calls=((name, json.dumps(arguments, ensure_ascii=False)),))


def raw_call(name: str, arguments: str) -> Reply:
    """A reply that calls one tool with an exact raw argument string (even invalid JSON)."""
    return Reply(calls=((name, arguments),))


Script = str | Reply | AssistantTurn | Callable[[Rendered], "str | Reply | AssistantTurn"]


class ScriptedModel(KnownFacts):
    """A model whose replies are queued in advance; `requests` records what it was sent."""

    def __init__(
        self,
        replies: Iterable[Script] = (),
        *,
        text_protocol: bool = False,
        name: str = "scripted",
        context_window: int | None = None,
        cache_ttl: str | None = None,
    ) -> None:
        self.name = name
        self.facts = scripted_facts(name, context_window, cache_ttl)
        self.text_protocol = text_protocol
        self._queue: list[Script] = list(replies)
        renders = load(_renderer_of(RECORD))
        self._renderer: TranscriptRenderer = renders(name, text_protocol=text_protocol)
        self.requests: list[Rendered] = []
        self.keepalives: list[Rendered] = []
        """Keep-alive requests, answered without using up a scripted reply."""
        self.sessions: list[str] = []
        self.branches: list[tuple[str, str, int]] = []
        self._rendered_from: dict[int, tuple[Rendered, tuple[str, str, int]]] = {}
        self._last: dict[str, WireStream] = {}

    @property
    def context_window(self) -> int:
        """The window the agent plans with, in tokens."""
        return self.facts.context_window

    def enqueue(self, *replies: Script) -> None:
        """Queue more replies."""
        self._queue.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        rendered = self._renderer.render(transcript, tools)
        branch = (transcript.id, transcript.meta.parent, transcript.revision)
        self._rendered_from[id(rendered)] = (rendered, branch)
        if len(self._rendered_from) > MAX_UNSENT:  # rendered but never sent: forget the oldest
            del self._rendered_from[next(iter(self._rendered_from))]
        return rendered

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        if rendered.keepalive:  # answered without a scripted reply: it is no step
            self.keepalives.append(rendered)
            return ModelResponse(AssistantTurn(), self._usage(rendered, session_id))
        if not self._queue:
            raise ProviderError(
                f"scripted model {self.name!r} has no reply left for request "
                f"{len(self.requests) + 1}; queue more with enqueue()"
            )
        usage = self._usage(rendered, session_id)
        self.requests.append(rendered)
        self.sessions.append(session_id)
        found = self._rendered_from.pop(id(rendered), None)
        self.branches.append(
            found[1] if found is not None and found[0] is rendered else ("", "", 0)
        )
        item = self._queue.pop(0)
        reply = item(rendered) if callable(item) else item
        if isinstance(reply, AssistantTurn):
            return ModelResponse(reply, usage)
        if isinstance(reply, str):
            if not self.text_protocol:
                return ModelResponse(AssistantTurn(text=reply), usage)
            return text_protocol_reply(reply, rendered.turn_index, usage)
        calls = tuple(
            ToolCall(react_text.call_id(rendered.turn_index, i), name, args)
            for i, (name, args) in enumerate(reply.calls)
        )
        return ModelResponse(AssistantTurn(reply.text, reply.reasoning, calls), usage)

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """`send`, streamed: the reply's text as one delta, then each tool call as one."""
        response = await self.send(rendered, session_id=session_id)
        turn = response.turn
        if turn.text:
            deltas(TextDelta(turn.text))
        for index, made in enumerate(turn.tool_calls):
            deltas(ToolCallDelta(index, made.name, made.id, made.arguments))
        return response

    def _usage(self, rendered: Rendered, session_id: str) -> Usage:
        """Token counts as a perfect prefix cache keyed by session would report them (a
        request whose derivation proved it extends the last one is not joined into text)."""
        stream = rendered.wire
        previous = self._last.get(session_id)
        self._last[session_id] = stream
        if previous is None:
            reused = 0
        elif stream.head == previous.head and stream.extends_items_of(previous):
            reused = previous.length
        else:
            old, new = previous.text, stream.text
            reused = len(old) if new.startswith(old) else common_prefix_length(old, new)
        total = -(-stream.length // CHARS_PER_TOKEN)
        cached = min(reused // CHARS_PER_TOKEN, total)
        return Usage(input_tokens=total, cache_read_tokens=cached, output_tokens=1)


def scripted_facts(name: str, context_window: int | None, cache_ttl: str | None) -> ModelFacts:
    """The facts of the model `name` stands for, or of a scripted engine (`DEFAULT_WINDOW`,
    unpriced) when it names none."""
    try:
        facts = table_facts(name, retention=cache_ttl, context_window=context_window)
    except ConfigurationError:
        if cache_ttl is not None:
            raise
    else:
        if facts.profile.provider != "scripted":
            return facts
    window = DEFAULT_WINDOW if context_window is None else context_window
    return table_facts("scripted", context_window=window)


# A scripted model takes every setting into its Chat Completions payload, for tests.
SETTINGS = (
    Place("temperature", ("temperature",)),
    Place("top_p", ("top_p",)),
    Place("max_tokens", ("max_completion_tokens",)),
    Place("stop", ("stop",)),
    Place("seed", ("seed",)),
    Place("reasoning_effort", ("reasoning_effort",)),
    Place("parallel_tool_calls", ("parallel_tool_calls",)),
    Place("thinking_budget", ("thinking_budget",)),
)
RECORD = register_provider(
    ProviderRecord(
        "scripted",
        "warmloop.providers.scripted:ScriptedModel",
        "openai-chat",
        needs_name=None,
        listed=False,
        settings=SETTINGS,
    )
)
"""Speaks Chat Completions (the registered format's renderer writes its payloads)."""


def _renderer_of(record: ProviderRecord) -> str:
    found = wire_format(record.wire_format or "").renderer
    if found is None:
        raise ConfigurationError(f"wire format {record.wire_format!r} names no renderer")
    return found
