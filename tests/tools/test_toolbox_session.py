"""Issue 9, what it must show (1): a scripted 40-request session over the 120-tool catalog
(`benchmarks.toolbox_session`) in which 6 tools are discovered at different steps and used
through `call_tool` and from `run_code`, on the Anthropic, OpenAI Responses, OpenAI Chat and
Gemini wire formats (each request rendered offline by that provider's own renderer, as its
SDK would send it, and recorded in `wire_log`, whose prefix check the suite fixture runs):
the tool block is byte-identical on every request, and each discovered tool is announced
exactly once, also across a resume through the session store in a fresh agent."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import pytest
from google import genai
from openai import AsyncOpenAI

from benchmarks.toolbox_session import CORE, TARGETS, catalog, plan, reply
from tests.support.wire import WireLog, wire_stream
from warmloop import Agent
from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, Notice, ToolCall, ToolResult
from warmloop.protocols.react_text import call_id
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model, ModelResponse, Rendered
from warmloop.providers.gemini.model import GeminiModel
from warmloop.providers.openai.chat import OpenAIChatModel
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.providers.scripted import Reply
from warmloop.tools.schema import ToolSpec
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript

FORMATS: dict[str, tuple[Callable[[], Model], str, Callable[[dict[str, Any]], Any]]] = {
    "anthropic": (
        lambda: AnthropicModel("claude-sonnet-4-6", client=anthropic.AsyncAnthropic(api_key="x")),
        "messages",
        lambda p: p["tools"],
    ),
    "responses": (
        lambda: OpenAIResponsesModel("gpt-5", client=AsyncOpenAI(api_key="x")),
        "input",
        lambda p: p["tools"],
    ),
    "chat": (
        lambda: OpenAIChatModel("gpt-5", client=AsyncOpenAI(api_key="x")),
        "messages",
        lambda p: p["tools"],
    ),
    "gemini": (
        lambda: GeminiModel("gemini-2.5-flash", client=genai.Client(api_key="x")),
        "contents",
        lambda p: p["config"]["tools"],
    ),
}


class OnWire:
    """A scripted model that renders with a real provider's renderer and records every
    payload's prefix stream (what the fixture checks) and tool block (what we check)."""

    def __init__(self, fmt: str, replies: list[Reply], log: WireLog, blocks: list[str]) -> None:
        build, self.key, self.tools_of = FORMATS[fmt]
        self.real = build()
        self.name = self.real.name
        self.facts = self.real.facts
        self.fmt, self.replies, self.log, self.blocks = fmt, replies, log, blocks

    async def discover(self) -> ModelFacts:
        return self.facts

    def render(self, transcript: Transcript, tools: Any) -> Rendered:
        return self.real.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        payload = rendered.payload
        self.log.record(self.fmt, wire_stream(payload, self.key))
        self.blocks.append(json.dumps(self.tools_of(payload), sort_keys=False, default=str))
        item = self.replies.pop(0)
        calls = tuple(
            ToolCall(call_id(rendered.turn_index, i), name, args)
            for i, (name, args) in enumerate(item.calls)
        )
        return ModelResponse(AssistantTurn(item.text, "", calls), Usage(rendered.length // 4))


def scripted() -> list[Reply]:
    replies = [reply("gateway", step) for step in plan()]
    assert all(isinstance(r, Reply) for r in replies)
    return [r for r in replies if isinstance(r, Reply)]


def toolbox() -> Toolbox:
    """A fresh toolbox, as a new process would build it."""
    return Toolbox(CORE, catalog(), code=True)


def announced(transcript: Transcript) -> list[str]:
    return [t.name for m in transcript if isinstance(m, Notice) for t in m.tools]


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_a_forty_request_session_keeps_one_tool_block_and_teaches_each_tool_once(
    fmt: str, wire_log: WireLog, tmp_path: Path
) -> None:
    replies, blocks = scripted(), list[str]()
    assert len(replies) == 40
    store = tmp_path / "sessions.db"
    first = Agent(OnWire(fmt, replies, wire_log, blocks), tools=toolbox(), max_steps=30)
    run = first.run_sync("Sort out the delayed refunds.", session="refunds", store=store)
    assert len(run.requests) == 20
    # A fresh agent and toolbox continue the stored session in place: what was taught is
    # read back from the transcript.
    second = Agent(OnWire(fmt, replies, wire_log, blocks), tools=toolbox(), max_steps=30)
    follow = second.run_sync("Now the rest.", session="refunds", store=store)
    assert not replies
    assert len(blocks) == 40

    assert len(set(blocks)) == 1, "the tool block changed between requests"
    names = [
        t["name"] if "name" in t else t.get("function", {}).get("name")
        for t in json.loads(blocks[0])
    ]
    assert fmt == "gemini" or set(names) >= {"search_tools", "call_tool", "run_code"}

    transcript = follow.transcript
    taught = announced(transcript)
    assert len(taught) == len(set(taught)), f"announced twice: {taught}"
    assert set(TARGETS) <= set(taught)
    results = [m for m in transcript if isinstance(m, ToolResult)]
    assert not [r.content for r in results if r.is_error]
    assert sum(r.name == "call_tool" for r in results) == 9
    assert sum(r.name == "run_code" for r in results) == 3
    # Each announcement is in place on the wire, once, in the last request's conversation.
    last = wire_log.streams[fmt][-1]
    for name in TARGETS:
        assert last.count(f'<tool>{{\\"name\\": \\"{name}\\"') == 1


def test_the_tool_block_leaves_the_catalog_out_and_never_mentions_it() -> None:
    specs = toolbox().specs()
    assert [s.name for s in specs] == [
        "read_file",
        "list_files",
        "write_file",
        "search_tools",
        "call_tool",
        "run_code",
    ]
    text = json.dumps([s.full() for s in specs])
    assert not any(t in text for t in TARGETS)
    assert all(isinstance(s, ToolSpec) and not s.defer_loading for s in specs)
