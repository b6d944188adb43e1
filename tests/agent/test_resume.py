"""A stored run a crash cut short goes on from its last stored step (`resume_at`): cut the
stored session after every write an uninterrupted run made, resume there, and the resumed
run sends exactly the requests the uninterrupted one sent from that point (byte-identical),
runs only the tools whose result was not stored, and ends with the same transcript."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from warmloop import Agent, ScriptedModel, tool
from warmloop.agent.steps import INTERRUPTED
from warmloop.messages import AssistantTurn, Message, ToolResult, UserText
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Reply, call
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.transcript import Transcript, check_pairing

ran: Counter[str] = Counter()


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    ran[f"lookup:{key}"] += 1
    return f"value of {key}"


@tool(repeatable=False)
def pay(amount: int) -> str:
    """Pay an amount (must not run twice)."""
    ran[f"pay:{amount}"] += 1
    return f"paid {amount}"


REPLIES: list[Reply | str] = [
    Reply(calls=(("lookup", '{"key": "a"}'), ("lookup", '{"key": "b"}'))),
    call("lookup", key="c"),
    "I think it is done.",  # no tool call: with named outputs, the extract step follows
    call("submit", answer="abc"),
]


def scripted(replies: Sequence[Reply | str]) -> ScriptedModel:
    """Replies chosen by the request (how many assistant turns it holds), so a resumed run
    gets the reply the uninterrupted one got at the same point."""

    def reply(rendered: Rendered) -> Reply | str:
        turns: int = sum(m["role"] == "assistant" for m in rendered.payload["messages"])
        return replies[turns]

    return ScriptedModel([reply] * len(replies))


class Snapshots(SQLiteStore):
    """A store that remembers how many messages each write left stored."""

    lengths: list[int]

    def append(self, lease, transcript, requests=(), *, cache_ttl=""):  # type: ignore[no-untyped-def]
        super().append(lease, transcript, requests, cache_ttl=cache_ttl)
        self.lengths.append(len(transcript))


def payloads(model: ScriptedModel) -> list[str]:
    return [json.dumps(r.payload, sort_keys=True) for r in model.requests]


def stored_session(path: Path, messages: Sequence[Message], conversation: str) -> SQLiteStore:
    store = SQLiteStore(path)
    lease = store.acquire("s")
    store.append(lease, Transcript(messages, conversation=conversation))
    store.release(lease)
    return store


def test_a_run_resumed_after_any_write_goes_on_as_if_never_cut(tmp_path: Path) -> None:
    ran.clear()
    whole = scripted(REPLIES)
    store = Snapshots(tmp_path / "whole.db")
    store.lengths = []
    first = Agent(whole, [lookup]).run_sync("task", session="s", store=store)
    final = first.transcript.messages
    expected_tools = Counter(ran)
    assert len(store.lengths) >= 5
    for n, length in enumerate(store.lengths):
        ran.clear()
        cut = final[:length]
        model = scripted(REPLIES)
        resumed_store = stored_session(tmp_path / f"cut{n}.db", cut, first.transcript.conversation)
        run = asyncio.run(
            Agent(model, [lookup]).run("task", session="s", store=resumed_store, resume_at=0)
        )
        assert run.transcript.messages == final, f"cut after {length} messages"
        sent_before = sum(m.kind == "assistant" for m in cut)
        assert payloads(model) == payloads(whole)[sent_before:], f"cut after {length}"
        stored_calls = {m.call_id for m in cut if isinstance(m, ToolResult)}
        redone = Counter(
            {k: v for k, v in expected_tools.items() if not _stored(k, cut, stored_calls)}
        )
        assert ran == redone, f"cut after {length}"
        check_pairing(run.transcript.messages)


def _stored(tool_key: str, cut: Sequence[Message], stored_calls: set[str]) -> bool:
    """Whether the call that ran `tool_key` has its result in `cut`."""
    name, _, key = tool_key.partition(":")
    calls = [c for m in cut if isinstance(m, AssistantTurn) for c in m.tool_calls]
    return any(c.name == name and key in c.arguments and c.id in stored_calls for c in calls)


@pytest.mark.parametrize("repeatable", [True, False])
def test_an_unfinished_call_runs_again_only_if_its_tool_is_repeatable(
    tmp_path: Path, repeatable: bool
) -> None:
    ran.clear()
    name = "lookup" if repeatable else "pay"
    arguments = '{"key": "a"}' if repeatable else '{"amount": 5}'
    replies: list[Reply | str] = [Reply(calls=((name, arguments),)), call("submit", answer="x")]
    whole = Agent(scripted(replies), [lookup, pay]).run_sync("task")
    turn_end = next(i for i, m in enumerate(whole.transcript) if m.kind == "assistant") + 1
    cut = whole.transcript.messages[:turn_end]  # the turn is stored, its tool never returned
    ran.clear()
    store = stored_session(tmp_path / "cut.db", cut, whole.transcript.conversation)
    agent = Agent(scripted(replies), [lookup, pay])
    run = asyncio.run(agent.run("task", session="s", store=store, resume_at=0))
    result = run.transcript[turn_end]
    assert isinstance(result, ToolResult)
    if repeatable:
        assert ran == Counter({"lookup:a": 1})
        assert result == whole.transcript[turn_end]
    else:
        assert ran == Counter()
        assert result.is_error
        assert result.content.startswith(INTERRUPTED)
    check_pairing(run.transcript.messages)


# Round three (issue 38): a run cut during its extract step is still an extracted run.


def test_a_run_cut_during_its_extract_step_resumes_it_as_the_extract_step(
    tmp_path: Path,
) -> None:
    named = {"answer": str}  # named fields: a text reply is no answer, the extract step follows
    whole = Agent(scripted(REPLIES), [lookup], outputs=named).run_sync("task")
    assert whole.extracted
    final = whole.transcript.messages
    prompt = next(n for n, m in enumerate(final) if isinstance(m, UserText) and m.only_tool)
    for length in (prompt + 1, prompt + 2):  # the extract prompt stored; then its answer too
        store = stored_session(
            tmp_path / f"cut{length}.db", final[:length], whole.transcript.conversation
        )
        run = asyncio.run(
            Agent(scripted(REPLIES), [lookup], outputs=named).run(
                "task", session="s", store=store, resume_at=0
            )
        )
        assert run.transcript.messages == final, f"cut after {length} messages"
        assert run.extracted, f"cut after {length} messages"
