"""Testing an application's agent (issue 45): `Agent("openai:gpt-5")` made at import needs
no key (it is checked when a run starts), and `agent.override(model=..., deps=...)` swaps
in a scripted model and deps for the runs inside the block only, in its own context (a
thread, a task), as pydantic-ai's `agent.override` does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from warmloop import Agent, ConfigurationError, RunContext, ScriptedModel, call, resolve_model
from warmloop.errors import MissingApiKey

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Shop:
    owner: str


def greet(ctx: RunContext[Shop], name: str) -> str:
    """Greet someone for the shop."""
    return f"{ctx.deps.owner} greets {name}"


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def test_an_app_that_makes_its_agent_at_import_needs_no_key(tmp_path: Path) -> None:
    (tmp_path / "my_app.py").write_text(
        textwrap.dedent(
            """
            from warmloop import Agent

            agent = Agent("openai:gpt-5")
            """
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path)])
    code = "import my_app; print(my_app.agent.model.name)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "openai:gpt-5\n"


def test_the_key_is_checked_when_a_run_starts(no_key: None) -> None:
    agent = Agent("openai:gpt-5")
    with pytest.raises(MissingApiKey, match="OPENAI_API_KEY"):
        agent.run_sync("Hi.")


def test_a_key_set_later_is_found(no_key: None, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = Agent("openai:gpt-5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-later")
    assert agent.model.facts == resolve_model("openai:gpt-5").facts  # the model's own now


def test_override_runs_the_scripted_model_inside_the_block_only(no_key: None) -> None:
    agent = Agent("openai:gpt-5")
    scripted = ScriptedModel(["Hello."])
    with agent.override(model=scripted):
        assert agent.run_sync("Hi.").output == "Hello."
    assert len(scripted.requests) == 1
    with pytest.raises(MissingApiKey):  # the agent's own model again
        agent.run_sync("Hi.")


async def test_override_holds_for_await_run_and_iter(no_key: None) -> None:
    agent = Agent("openai:gpt-5")
    with agent.override(model=ScriptedModel(["one", "two"])):
        assert (await agent.run("Hi.")).output == "one"
        async with agent.iter("Again.") as events:
            _ = [event async for event in events]
        assert events.run.output == "two"


def test_override_deps_replaces_the_runs_deps() -> None:
    model = ScriptedModel([call("greet", name="Ann"), call("submit", answer="done")] * 2)
    agent = Agent(model, [greet], deps_type=Shop)
    with agent.override(deps=Shop("Test owner")):
        run = agent.run_sync("Greet Ann.", deps=Shop("Bob"))
    assert run.transcript.messages[3].content == "Test owner greets Ann"  # type: ignore[union-attr]
    later = agent.run_sync("Greet Ann.", deps=Shop("Bob"))
    assert later.transcript.messages[3].content == "Bob greets Ann"  # type: ignore[union-attr]


def test_overrides_nest_the_inner_winning() -> None:
    agent = Agent(ScriptedModel(["own"]))
    outer, inner = ScriptedModel(["outer", "outer again"]), ScriptedModel(["inner"])
    with agent.override(model=outer):
        with agent.override(model=inner):
            assert agent.run_sync("x").output == "inner"
        assert agent.run_sync("x").output == "outer"
    assert agent.run_sync("x").output == "own"


def test_an_override_is_not_seen_by_another_thread() -> None:
    agent = Agent(ScriptedModel(["own"]))
    seen: list[str] = []
    inside, done = threading.Event(), threading.Event()

    def other() -> None:
        inside.wait(timeout=30)
        seen.append(agent.run_sync("x").output)
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    with agent.override(model=ScriptedModel(["overridden"])):
        inside.set()
        done.wait(timeout=30)
    thread.join()
    assert seen == ["own"]


async def test_an_override_in_one_task_is_not_seen_by_another() -> None:
    agent = Agent(ScriptedModel(["own"]), outputs=str)
    entered = asyncio.Event()
    leave = asyncio.Event()

    async def overriding() -> str:
        with agent.override(model=ScriptedModel(["overridden"])):
            entered.set()
            await leave.wait()
            return (await agent.run("x")).output

    task = asyncio.create_task(overriding())
    await entered.wait()
    assert (await agent.run("x")).output == "own"
    leave.set()
    assert await task == "overridden"


def test_override_refuses_what_is_no_model() -> None:
    agent = Agent(ScriptedModel())
    with (
        pytest.raises(ConfigurationError, match="needs a warmloop Model"),
        agent.override(
            model=42  # type: ignore[arg-type]
        ),
    ):
        pass
    with (
        pytest.raises(ConfigurationError, match="did you mean model="),
        agent.override(
            models=ScriptedModel()  # type: ignore[call-arg]
        ),
    ):
        pass
