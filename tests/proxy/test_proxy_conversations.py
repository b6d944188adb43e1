"""The proxy's conversations: grouped as the audit groups a log, with bounded memory
(conversations expire when idle and past a limit), and a bust reported as it happens."""

from __future__ import annotations

import logging
from typing import Any

import openai
import pytest

from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.providers.openai.record import CHAT
from warmloop.providers.registry import wire_format
from warmloop.proxy.conversations import KEEP, LiveConversations, Placed
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy

WIRE = wire_format(CHAT.name)


def body(task: str, turns: int = 0, **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    messages.append({"role": "user", "content": f"Task {task}: fix what it names, then stop."})
    for n in range(turns):
        messages.append({"role": "assistant", "content": f"Task {task}, step {n} done."})
        messages.append({"role": "user", "content": f"Go on with step {n + 1} of task {task}."})
    return {"model": "gpt-5", "messages": messages, **extra}


def placed(conversations: LiveConversations, request: dict[str, Any]) -> Placed:
    found = conversations.place(WIRE, request)
    assert found is not None
    return found


def test_a_body_its_format_cannot_read_is_filed_nowhere() -> None:
    conversations = LiveConversations(Clock())
    assert conversations.place(WIRE, {"messages": {"role": "user"}}) is None
    assert len(conversations) == 0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_continuation_lands_in_its_conversation_and_a_new_task_opens_one() -> None:
    conversations = LiveConversations(Clock())
    first = placed(conversations, body("a")).conversation
    other = placed(conversations, body("b")).conversation
    again = placed(conversations, body("a", turns=3))
    assert again.conversation is first
    assert other is not first
    assert again.check is not None
    assert again.check.bust is None


def test_a_routing_key_decides_the_conversation() -> None:
    conversations = LiveConversations(Clock())
    first = placed(conversations, body("a", prompt_cache_key="k1")).conversation
    same_task = placed(conversations, body("a", turns=1, prompt_cache_key="k2"))
    assert same_task.conversation is not first


def test_an_idle_conversation_is_forgotten() -> None:
    clock = Clock()
    conversations = LiveConversations(clock, idle_seconds=60)
    first = placed(conversations, body("a")).conversation
    clock.now = 59
    assert placed(conversations, body("a", turns=1)).conversation is first
    clock.now = 59 + 60
    later = placed(conversations, body("a", turns=2))
    assert later.conversation is not first
    assert later.check is None
    assert len(conversations) == 1


def test_memory_stays_bounded_past_the_limit() -> None:
    conversations = LiveConversations(Clock(), limit=50)
    for n in range(1_000):
        placed(conversations, body(str(n)))
        placed(conversations, body(str(n), turns=1))
        placed(conversations, body(str(n), turns=2))
    assert len(conversations) == 50
    assert len(conversations._entries) == 50 * min(3, KEEP)
    assert len(conversations._exact) <= 2 * len(conversations._entries)
    # the index is rebuilt from what is held: it names no more than twice that, plus slack
    assert conversations._filed <= 2 * 50 * min(3, KEEP) + 64
    newest = conversations.snapshot()[0]
    assert placed(conversations, body("999", turns=3)).conversation.id == newest.id


def test_a_bust_is_reported_as_it_happens_with_its_cause(
    wire_server: WireServer, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    wire_server.serve(Captured())
    caplog.set_level(logging.WARNING, logger="warmloop.proxy")
    with Proxy(wire_server.url, None, guard=True, name="warmloop proxy").start() as proxy:
        client = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0)
        first: Any = body("a", turns=2)["messages"]
        client.chat.completions.create(model="gpt-5", messages=first)
        # the framework re-renders an earlier tool result: the prefix moves at message 3
        rebuilt = [*first[:3], {"role": "assistant", "content": "Task a, step 0 (redone)."}]
        client.chat.completions.create(model="gpt-5", messages=[*rebuilt, *first[4:]])
    (record,) = [r for r in caplog.records if r.name == "warmloop.proxy"]
    assert record.getMessage().startswith("cache bust in wl-")
    assert record.__dict__["cause"] == "history-rewritten"
    line = capsys.readouterr().err
    assert line.startswith("warmloop proxy: cache bust in wl-")
    assert "message 3" in line


def test_record_files_no_conversation(wire_server: WireServer) -> None:
    with Proxy(wire_server.url, None) as proxy:
        assert proxy.conversations is None
    with Proxy(wire_server.url, None, fixes=Fixes()) as proxy:
        assert proxy.conversations is not None
