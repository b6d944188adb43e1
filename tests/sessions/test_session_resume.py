"""Resuming a stored session: it continues in place (same id, no fork), the resumed request
is byte-identical on the wire to what the previous process would have sent next, every
assistant turn is stored before its tools run, and a step a crash cut short is closed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from openai import AsyncOpenAI

from tests.providers.test_anthropic import message_response
from tests.providers.test_openai_compatible import completion, message_for, openai_usage
from tests.support.scenario import TOOLS, Step
from tests.support.sessions_data import grown
from warmloop import Agent, ScriptedModel, call, check_pairing, tool
from warmloop.agent.result import RequestFailed
from warmloop.errors import ConfigurationError, SessionBusy
from warmloop.messages import AssistantTurn, ToolCall, ToolResult, UserText
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.base import Model
from warmloop.providers.openai.chat import OpenAIChatModel
from warmloop.sessions.resume import INTERRUPTED_BY_STOP
from warmloop.sessions.sql import SqlStore
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.transcript import Transcript, scratch_copy

LOOKUP = Step(reasoning="I need k1 first.", calls=(("lookup", {"key": "k1"}),))
SUBMIT = Step(text="Done.", calls=(("submit", {"answer": "finished"}),))
SCRIPT = [LOOKUP, SUBMIT, SUBMIT]  # run 1: two steps; the follow-up: one
Handler = Callable[[httpx2.Request], httpx2.Response]


class Wire:
    """A mocked HTTP transport that keeps every request body as the SDK sent it."""

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset  # the script step that answers this wire's first request
        self.reply: Callable[[int], dict[str, Any]] = lambda k: {}
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(request.content)
        return httpx2.Response(200, json=self.reply(len(self.bodies) - 1 + self.offset))

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


def anthropic_model(wire: Wire) -> Model:
    """Replies as "Messages > Create a Message" documents them (see tests/test_anthropic)."""
    wire.reply = lambda k: message_response(SCRIPT[k], k + 1)
    client = anthropic.AsyncAnthropic(api_key="sk-test", http_client=wire.client())
    return AnthropicModel("claude-sonnet-4-6", client=client)


def chat_model(wire: Wire) -> Model:
    """Replies as "Chat > The chat completion object" documents them."""
    wire.reply = lambda k: completion(
        message_for(SCRIPT[k], k, reasoning=False), openai_usage(100, 0, 5)
    )
    client = AsyncOpenAI(
        api_key="sk-test", base_url="https://api.test/v1", http_client=wire.client(), max_retries=0
    )
    return OpenAIChatModel("gpt-5", client=client)


@pytest.mark.parametrize("build", [anthropic_model, chat_model], ids=["anthropic", "chat"])
async def test_a_resumed_request_is_byte_identical_to_the_one_not_resumed(
    build: Callable[[Wire], Model], tmp_path: Path
) -> None:
    first = Wire()
    model = build(first)
    agent = Agent(model, tools=TOOLS)
    run = await agent.run("Look up k1.", session="s", store=tmp_path / "s.db")
    # What this process would send next, from its own transcript in memory.
    going_on = scratch_copy(run.transcript)
    going_on.append(UserText("And again?"))
    await model.send(model.render(going_on, agent.tool_specs), session_id=going_on.conversation)
    # A new process: new store, model and agent; nothing but the stored session.
    second = Wire(offset=2)
    await Agent(build(second), tools=TOOLS).run("And again?", session="s", store=tmp_path / "s.db")
    assert len(first.bodies) == 3
    assert len(second.bodies) == 1
    assert second.bodies[0] == first.bodies[2]
    assert b"Look up k1." in second.bodies[0]
    if build is anthropic_model:
        assert b"I need k1 first." in second.bodies[0]  # thinking and signature echoed


async def test_a_session_continues_in_place_across_runs(store: SqlStore) -> None:
    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="1")])
    first = await Agent(model, TOOLS).run("First?", session="s", store=store)
    model = ScriptedModel([call("submit", answer="2")])
    second = await Agent(model, TOOLS).run("Second?", session="s", store=store)
    assert second.transcript.id == first.transcript.id  # no fork
    assert second.transcript.meta.parent == ""
    assert second.transcript.messages[: len(first.transcript)] == first.transcript.messages
    assert second.start == len(first.transcript)
    stored = store.load("s")
    assert stored is not None
    assert stored.transcript == second.transcript
    assert stored.info.requests == 3
    assert [r.position for r in store.requests("s")] == [2, 4, 7]
    assert stored.info.lease_holder == ""  # released after each run


async def test_each_assistant_turn_is_stored_before_its_tools_run(store: SqlStore) -> None:
    seen: list[tuple[int, str]] = []

    @tool
    def probe() -> str:
        """Report what the store holds while this tool runs."""
        stored = store.load("s")
        assert stored is not None
        assert stored.transcript is not None
        last = stored.transcript[-1]
        seen.append((len(stored.transcript), last.kind))
        return "probed"

    model = ScriptedModel([call("probe"), call("submit", answer="ok")])
    await Agent(model, [probe]).run("Probe.", session="s", store=store)
    assert seen == [(3, "assistant")]  # system, task, and the turn calling the tool


async def test_a_step_a_crash_cut_short_is_closed_with_an_interrupted_result(
    store: SqlStore,
) -> None:
    lease = store.acquire("s")
    transcript = grown(1)
    calls = (ToolCall("call_3_0", "lookup", '{"key":"a"}'), ToolCall("call_3_1", "add", "{}"))
    transcript.append(AssistantTurn(tool_calls=calls))  # stored; its tools never finished
    store.append(lease, transcript)
    store.release(lease)
    model = ScriptedModel([call("submit", answer="resumed")])
    run = await Agent(model, TOOLS).run("Carry on.", session="s", store=store)
    closed = run.transcript.messages[len(transcript) : len(transcript) + 2]
    assert closed == (
        ToolResult("call_3_0", "lookup", INTERRUPTED_BY_STOP, is_error=True),
        ToolResult("call_3_1", "add", INTERRUPTED_BY_STOP, is_error=True),
    )
    check_pairing(run.transcript.messages)
    sent = model.requests[0].payload["messages"]
    assert [m["role"] for m in sent[-3:]] == ["tool", "tool", "user"]


async def test_a_busy_session_fails_at_once_and_sends_nothing(make_store: Any) -> None:
    holder = make_store()
    holder.acquire("s")
    model = ScriptedModel([call("submit", answer="x")])
    with pytest.raises(SessionBusy, match="'s' is in use"):
        await Agent(model, TOOLS).run("Hello?", session="s", store=make_store())
    assert model.requests == []


async def test_a_failed_request_leaves_the_session_at_its_last_complete_step(
    store: SqlStore,
) -> None:
    model = ScriptedModel([call("lookup", key="a")])  # no reply left for request 2
    with pytest.raises(RequestFailed) as failed:
        await Agent(model, TOOLS).run("Go.", session="s", store=store)
    stored = store.load("s")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.messages == failed.value.transcript.messages
    assert stored.transcript[-1].kind == "tool_result"
    assert stored.info.lease_holder == ""  # released although the run failed
    model.enqueue(call("submit", answer="later"))
    run = await Agent(model, TOOLS).run("Try again.", session="s", store=store)
    assert run.outputs.model_dump() == {"answer": "later"}


def test_run_sync_persists_a_session_too(tmp_path: Path) -> None:
    model = ScriptedModel([call("submit", answer="sync")])
    run = Agent(model, TOOLS).run_sync("Go.", session="s", store=str(tmp_path / "x.db"))
    store = SQLiteStore(tmp_path / "x.db")
    stored = store.load("s")
    store.close()
    assert stored is not None
    assert stored.transcript == run.transcript


async def test_session_and_history_are_not_both_allowed(tmp_path: Path) -> None:
    agent = Agent(ScriptedModel([]), TOOLS)
    with pytest.raises(ConfigurationError, match="session= or history="):
        await agent.run("x", session="s", history=Transcript(), store=tmp_path / "x.db")
    with pytest.raises(ConfigurationError, match="pass session= too"):
        await agent.run("x", store=tmp_path / "x.db")


async def test_a_stored_transcript_survives_the_json_round_trip(store: SqlStore) -> None:
    model = ScriptedModel([call("lookup", key="ünï\U0001f600"), call("submit", answer="é")])
    run = await Agent(model, TOOLS).run("Ünicode?", session="s", store=store)
    stored = store.load("s")
    assert stored is not None
    assert stored.transcript is not None
    assert stored.transcript.dump() == run.transcript.dump()
    assert json.loads(stored.transcript.dump())["id"] == run.transcript.id


def test_ctrl_c_during_a_tool_stores_the_closed_step_and_frees_the_session(
    tmp_path: Path,
) -> None:
    @tool
    def stop() -> str:
        """Stands for a user pressing Ctrl-C while a tool runs."""
        raise KeyboardInterrupt

    model = ScriptedModel([call("stop")])
    with pytest.raises(KeyboardInterrupt):
        Agent(model, [stop]).run_sync("Go.", session="s", store=tmp_path / "s.db")
    store = SQLiteStore(tmp_path / "s.db")
    found = store.load("s")
    store.close()
    assert found is not None
    assert found.transcript is not None
    last = found.transcript[-1]
    assert isinstance(last, ToolResult)
    assert last.is_error
    check_pairing(found.transcript.messages)
    assert found.info.lease_holder == ""  # released on the way out


# Round three (issue 32): resume. A window the model was told is stored with the session and
# used again by a resume whose model is told none; a newer one wins; a smaller learned one stays.
MYSTERY = "openai-compatible:mystery"  # a model whose window no table knows


def answering(answer: str, window: int | None = None) -> ScriptedModel:
    return ScriptedModel([call("submit", answer=answer)], name=MYSTERY, context_window=window)


def test_a_told_window_is_stored_and_taken_by_a_resume_told_none(tmp_path: Path) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    first = Agent(answering("a", 50_000)).run_sync("Go.", session="s", store=store)
    assert first.warnings == []
    info = store.info("s")
    assert info is not None
    assert info.meta.told_window == 50_000
    again = Agent(answering("b")).run_sync("Again.", session="s", store=store)
    assert again.warnings == []  # not "the context window is unknown" again
    assert again.facts is not None
    assert (again.facts.context_window, again.facts.window_source) == (50_000, "told")
    newer = Agent(answering("c", 60_000)).run_sync("Wider.", session="s", store=store)
    assert newer.facts is not None
    assert newer.facts.context_window == 60_000
    info = store.info("s")
    assert info is not None
    assert info.meta.told_window == 60_000
    store.close()


@pytest.mark.parametrize(("learned", "trusted"), [(40_000, 40_000), (70_000, 50_000)])
def test_a_learned_window_stays_trusted_when_smaller_than_the_told(
    tmp_path: Path, learned: int, trusted: int
) -> None:
    store = SQLiteStore(str(tmp_path / "s.db"))
    Agent(answering("a", 50_000)).run_sync("Go.", session="s", store=store)
    store.raw("UPDATE sessions SET context_window = ? WHERE id = 's'", (learned,))
    again = Agent(answering("b")).run_sync("Again.", session="s", store=store)
    assert again.facts is not None
    assert again.facts.context_window == trusted
    store.close()
