"""The breakpoints `warmloop proxy` adds beside a client's own (issue 46), through the official
SDKs to the loopback server.

Anthropic ("Prompt caching"): at most 4 `cache_control` breakpoints per request, wherever
they are (a marker on a block inside a `tool_result`'s content is one), each finding an
earlier write within 20 blocks before it; longer TTLs come before shorter ones. The client's
markers are counted wherever it put them and never moved; the proxy adds only what they
leave unused, where the lookback they leave cannot reach; and a conversation seen rebuilding
its prompt gets no marker past where it rebuilds (a write nothing reads, at 1.25x).
OpenAI (GPT-5.6, "Prompt cache breakpoints"): Codex opens its `input` with an
`additional_tools` item that has no content; the breakpoint goes on the opening's last item
that has content, after it.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai

from tests.proxy.test_proxy_fixes import PARSER, Loopback
from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.providers.anthropic.cache import MAX_BREAKPOINTS, client_markers
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy

MARK = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}
TOOLS: Any = [{"name": "read", "description": "Read a file.", "input_schema": {"type": "object"}}]


def sent(wire_server: WireServer, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    """Send each request through the proxy (every fix on) with the Anthropic SDK; the
    bodies the upstream received."""
    captured = Captured()
    wire_server.serve(captured)
    with Proxy(wire_server.url, None, fixes=Fixes(), guard=True).start() as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        for request in requests:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=64, **request)
    return captured.bodies


def step(calls: int, start: int = 0) -> list[dict[str, Any]]:
    """One assistant turn of `calls` parallel tool calls and the user turn of their results."""
    uses = [
        {"type": "tool_use", "id": f"toolu_{start + n}", "name": "read", "input": {}}
        for n in range(calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"toolu_{start + n}", "content": f"line {n}"}
        for n in range(calls)
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def marked_last(message: dict[str, Any], control: Any = MARK) -> dict[str, Any]:
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return {**message, "content": [*blocks[:-1], {**blocks[-1], "cache_control": control}]}


def test_a_marker_inside_a_tool_result_counts_and_four_are_never_passed(
    wire_server: WireServer,
) -> None:
    """Four markers, one inside a tool result's content: the request goes as sent (a fifth
    is a 400). Three: the proxy adds one, never more."""
    nested = {
        "type": "tool_result",
        "tool_use_id": "toolu_0",
        "content": [{"type": "text", "text": "line 1", "cache_control": MARK}],
    }
    messages: Any = [
        {"role": "user", "content": [{"type": "text", "text": PARSER, "cache_control": MARK}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_0", "name": "read", "input": {}}],
        },
        {"role": "user", "content": [nested]},
    ]
    tools = [{**TOOLS[0], "cache_control": MARK}]
    system: Any = [{"type": "text", "text": "You are terse.", "cache_control": MARK}]
    four, three = sent(
        wire_server,
        {"tools": tools, "system": system, "messages": messages},
        {"tools": TOOLS, "system": system, "messages": messages},
    )
    assert len(client_markers(four)) == MAX_BREAKPOINTS
    assert four["tools"] == tools
    assert four["system"] == system
    assert four["messages"] == messages
    assert len(client_markers(three)) == MAX_BREAKPOINTS
    assert three["tools"] == [{**TOOLS[0], "cache_control": MARK}]  # the one it left
    assert three["system"] == system
    assert three["messages"] == messages


def test_a_wide_step_gets_the_read_the_clients_newest_marker_cannot_reach(
    wire_server: WireServer,
) -> None:
    """A client that marks its newest turn: after a 30-call step that marker is 30 blocks
    past the previous request's write, out of the 20-block lookback; the proxy marks where
    the previous request ended. After a 3-call step the client's marker reaches it."""
    opening = [{"role": "user", "content": PARSER}]
    for calls, added in ((30, True), (3, False)):
        history = [*opening, *step(calls)]
        first = [*opening[:-1], marked_last(opening[-1])]
        second = [*history[:-1], marked_last(history[-1])]
        bodies = sent(wire_server, {"messages": first}, {"messages": second})
        received = bodies[1]["messages"]
        assert received[-1] == second[-1]  # the client's marker, where it put it
        assert (received[0] == marked_last(opening[0])) is added
        assert received[1:] == second[1:]


def test_an_added_marker_takes_the_ttl_of_the_clients_next(wire_server: WireServer) -> None:
    """The API wants longer TTLs first: before a client's hour marker, the proxy's are
    hour markers too."""
    messages = [marked_last({"role": "user", "content": PARSER}, HOUR)]
    (body,) = sent(wire_server, {"tools": TOOLS, "system": "You are terse.", "messages": messages})
    assert body["tools"][-1]["cache_control"] == HOUR
    assert body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": HOUR}]
    assert body["messages"] == messages


def test_a_conversation_that_rebuilds_its_prompt_gets_no_write_nothing_reads(
    wire_server: WireServer,
) -> None:
    """A framework that re-renders its one user message every step (the trajectory inside
    it, the instruction after it): once seen, only the tools and the system prompt, which
    stay, are marked."""

    def rebuilt(n: int) -> dict[str, Any]:
        trajectory = "".join(f"[[ ## thought_{i} ## ]] read file {i}\n" for i in range(n))
        prompt = f"[[ ## question ## ]] {PARSER}\n{trajectory}Respond with the next thought."
        return {
            "tools": TOOLS,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": prompt}],
        }

    bodies = sent(wire_server, rebuilt(1), rebuilt(2), rebuilt(3))
    assert "cache_control" in json.dumps(bodies[0]["messages"])  # not seen rebuilding yet
    for body in bodies[1:]:
        assert body["messages"] == rebuilt(3 if body is bodies[2] else 2)["messages"]
        assert body["tools"][-1]["cache_control"] == MARK
        assert body["system"][-1]["cache_control"] == MARK


def program(steps: int, fields: str, system: str) -> dict[str, Any]:
    """A DSPy-like program's request: one user message re-rendered every step (the task,
    the trajectory so far, then an instruction naming the fields it asks for)."""
    trajectory = "".join(
        f"[[ ## thought_{i} ## ]] read part {i} of the parser\n" for i in range(steps)
    )
    instruction = f"Respond with the corresponding output fields, starting with {fields}."
    prompt = f"[[ ## question ## ]] {PARSER}\n{trajectory}{instruction}"
    return {"system": system, "messages": [{"role": "user", "content": prompt}]}


def test_a_sibling_of_a_conversation_seen_rebuilding_bets_no_write_on_its_messages(
    wire_server: WireServer,
) -> None:
    """DSPy's extraction after its loop: the same re-rendered message, one step longer and
    asking for other fields, under a system prompt of its own. Filed apart (a key-less
    request is scoped by its system prompt), it starts with the reach its sibling was seen
    to have: no marker on its messages, a write nothing reads. A new conversation with no
    such sibling still gets its bet, and its messages their marker."""
    loop, fields = "You are a loop.", "`[[ ## next_thought ## ]]`, then `[[ ## next_tool ## ]]`"
    extraction = program(64, "`[[ ## answer ## ]]`", "You are an extractor.")
    other = {"system": "You are a reviewer.", "messages": [{"role": "user", "content": PARSER}]}
    bodies = sent(wire_server, *(program(n, fields, loop) for n in (61, 62, 63)), extraction, other)
    assert "cache_control" in json.dumps(bodies[0]["messages"])  # not seen rebuilding yet
    assert bodies[3]["messages"] == extraction["messages"]  # no marker: no bet
    assert "cache_control" in json.dumps(bodies[4]["messages"])


def test_codex_gets_its_opening_breakpoint_after_a_content_less_item(
    wire_server: WireServer,
) -> None:
    captured = Captured()
    wire_server.serve(captured)
    tools_item = {"type": "additional_tools", "role": "developer", "tools": []}
    developer = {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "Sandbox: workspace-write."}],
    }
    task = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": PARSER}]}
    transport = Loopback(wire_server.url)
    with Proxy("https://api.openai.com", None, fixes=Fixes(), transport=transport) as proxy:
        proxy.start()
        client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        body: Any = {
            "model": "gpt-5.6",
            "instructions": "You are Codex.",
            "input": [tools_item, developer, task],
        }
        client.responses.create(**body)
    received = captured.bodies[0]["input"]
    assert received[0] == tools_item
    assert received[1]["content"][-1]["prompt_cache_breakpoint"] == {"mode": "explicit"}
    assert received[2] == task
