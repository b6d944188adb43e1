"""`warmloop run --agent MODULE:ATTR` and `resume --agent`: a user's own agent, from a module
written to the test's directory (the current directory), on the scripted model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from warmloop.cli.main import main
from warmloop.messages import AssistantTurn, UserText
from warmloop.sessions.locate import open_store

AGENTS = '''
from warmloop import Agent, ScriptedModel, call, tool


@tool
def lookup(city: str) -> str:
    """Return the country a city is in."""
    return {"Paris": "France", "Rome": "Italy"}.get(city, "unknown")


@tool
def weather(city: str) -> str:
    """Return the weather in a city."""
    return "sunny"


def build() -> Agent:
    model = ScriptedModel(
        [call("lookup", city="{city}"), call("submit", answer="{answer}")],
        name="anthropic:claude-sonnet-4-6",
    )
    return Agent(model, [lookup])


def other() -> Agent:
    model = ScriptedModel([call("submit", answer="x")], name="anthropic:claude-sonnet-4-6")
    return Agent(model, [weather])


agent = build()
count = 3
'''


def agents_module(directory: Path, name: str, city: str = "Paris", answer: str = "France") -> str:
    """Write the agents module as `name`.py in `directory`; its name, to import."""
    text = textwrap.dedent(AGENTS).replace("{city}", city).replace("{answer}", answer)
    (directory / f"{name}.py").write_text(text, encoding="utf-8")
    return name


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), env={"COLUMNS": "200"})


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's directory as the current directory, where --agent imports from."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_run_agent_runs_the_module_agent_and_prints_its_outputs(here: Path) -> None:
    module = agents_module(here, "paris_agent")
    result = invoke("run", "Where is Paris?", "--agent", f"{module}:agent")
    assert result.exit_code == 0, result.output
    assert "agent paris_agent:agent, model anthropic:claude-sonnet-4-6" in result.stdout
    assert 'step 1 → lookup {"city": "Paris"}' in result.stdout
    assert "← lookup: France" in result.stdout
    assert "answer  France" in result.stdout


def test_run_agent_calls_a_factory_and_prints_json(here: Path) -> None:
    module = agents_module(here, "rome_agent", city="Rome", answer="Italy")
    result = invoke("run", "Where is Rome?", "--agent", f"{module}:build", "--json")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["outputs"] == {"answer": "Italy"}
    assert printed["model"] == "anthropic:claude-sonnet-4-6"
    assert len(printed["requests"]) == 2
    assert printed["error"] is None


def test_resume_agent_continues_the_session_with_its_own_tools(here: Path) -> None:
    module = agents_module(here, "session_agent")
    store = str(here / "sessions.db")
    first = invoke(
        "run",
        "Where is Paris?",
        "--agent",
        f"{module}:build",
        "--session",
        "demo",
        "--store",
        store,
    )
    assert first.exit_code == 0, first.output
    again = invoke(
        "resume",
        "demo",
        "And Paris again?",
        "--agent",
        f"{module}:build",
        "--store",
        store,
        "--json",
    )
    assert again.exit_code == 0, again.output
    printed = json.loads(again.stdout)
    assert printed["outputs"] == {"answer": "France"}
    assert printed["session"] == "demo"
    # The follow-up extends the stored conversation, on the agent's own tools.
    stored = open_store(store).load("demo")
    assert stored is not None
    assert stored.transcript is not None
    tasks = [m.text for m in stored.transcript if isinstance(m, UserText)]
    assert tasks == ["Where is Paris?", "And Paris again?"]
    calls = [
        c.name for m in stored.transcript if isinstance(m, AssistantTurn) for c in m.tool_calls
    ]
    assert calls == ["lookup", "submit", "lookup", "submit"]


def test_resume_agent_refuses_an_agent_with_other_tools_naming_the_difference(
    here: Path,
) -> None:
    module = agents_module(here, "refused_agent")
    store = str(here / "sessions.db")
    made = invoke(
        "run",
        "Where is Paris?",
        "--agent",
        f"{module}:build",
        "--session",
        "demo",
        "--store",
        store,
    )
    assert made.exit_code == 0, made.output
    result = invoke("resume", "demo", "And Rome?", "--agent", f"{module}:other", "--store", store)
    assert result.exit_code == 1
    assert "session 'demo' was made with other tools or outputs" in result.output
    assert "it called lookup" in result.output
    assert f"{module}:other lacks lookup" in result.output


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--model", "openai:gpt-5"], "--model"),
        (["--option", "timeout=5", "--context-window", "9000"], "--option, --context-window"),
        (["--workspace", "elsewhere", "--max-steps", "3"], "--workspace, --max-steps"),
    ],
)
def test_run_agent_refuses_the_flags_of_the_built_in_agent(
    here: Path, flags: list[str], named: str
) -> None:
    module = agents_module(here, "flag_agent_" + str(len(flags)) + flags[0].strip("-"))
    result = invoke("run", "Hi.", "--agent", f"{module}:agent", *flags)
    assert result.exit_code == 2  # bad usage
    assert f"so {named} cannot be used with it" in result.output


def test_run_agent_that_names_no_agent_reports_no_model_in_json(here: Path) -> None:
    module = agents_module(here, "nosuch_agent")
    result = invoke("run", "Hi.", "--agent", f"{module}:nosuch", "--json")
    assert result.exit_code == 2  # bad usage
    printed = json.loads(result.stdout)
    assert printed["model"] is None  # never the built-in agent's model: no agent was made
    assert printed["error"]["kind"] == "usage"
    assert "has no attribute 'nosuch'" in printed["error"]["message"]


@pytest.mark.parametrize("code", ["0", "None", "'done'"])
def test_run_agent_refuses_a_module_that_exits_on_import(here: Path, code: str) -> None:
    name = f"exiting_agent_{len(code)}"
    (here / f"{name}.py").write_text(f"import sys\n\nsys.exit({code})\n", encoding="utf-8")
    result = invoke("run", "Hi.", "--agent", f"{name}:agent")
    assert result.exit_code == 2, result.output  # never 0, having run nothing
    assert f"importing {name!r} exited" in result.stderr
    assert 'if __name__ == "__main__":' in result.stderr
