"""Fleet tasks and batches from JSON: what a line may hold, and a clear error naming the
line for anything else; results round-trip through the JSON DBOS stores."""

from __future__ import annotations

import pytest

from warmloop import Agent, ScriptedModel
from warmloop.errors import ConfigurationError
from warmloop.fleet.agent_registry import AgentRegistry, load_registry
from warmloop.fleet.tasks import Task, TaskResult, read_batch


def test_a_batch_reads_text_tasks_and_named_inputs_with_their_sessions() -> None:
    lines = [
        '{"agent": "triage", "task": "Look at ticket 1"}\n',
        "\n",
        '{"agent": "triage", "inputs": {"ticket": 2}, "session": "t-2", "id": "two"}\n',
    ]
    first, second = read_batch(lines, "tasks.jsonl")
    assert first == Task("triage", "Look at ticket 1")
    assert second == Task("triage", {"ticket": 2}, session="t-2", id="two")
    assert Task.from_json(second.to_json()) == second


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json", "line 1: not JSON"),
        ("[1]", "line 1: a task is a JSON object"),
        ('{"task": "x"}', "'agent' names the agent"),
        ('{"agent": "a"}', "exactly one of 'task'"),
        ('{"agent": "a", "task": "x", "inputs": {}}', "exactly one of 'task'"),
        ('{"agent": "a", "task": {"k": 1}}', "use 'inputs' for an object"),
        ('{"agent": "a", "inputs": "x"}', "'inputs' is an object"),
        ('{"agent": "a", "task": "  "}', "the task is empty"),
        ('{"agent": "a", "task": "x", "prompt": "y"}', "unknown keys ['prompt']"),
        ('{"agent": "../x", "task": "x"}', "agent name '../x' is not allowed"),
        ('{"agent": "a", "task": "x", "session": "a/b"}', "session 'a/b' is not allowed"),
    ],
)
def test_a_bad_line_is_refused_naming_the_line(line: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match="line 1") as caught:
        read_batch([line], "tasks.jsonl")
    assert says in str(caught.value)


def test_an_empty_batch_and_repeated_ids_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="holds no task"):
        read_batch(["\n"], "tasks.jsonl")
    same = '{"agent": "a", "task": "x", "id": "one"}'
    with pytest.raises(ConfigurationError, match="ids repeat"):
        read_batch([same, same], "tasks.jsonl")


def test_a_result_round_trips_through_json() -> None:
    result = TaskResult("done", "s", {"answer": 1}, "", 3, 100, 80, 5, 0.25, "w1")
    assert TaskResult.from_json(result.to_json()) == result


registry = AgentRegistry()


@registry.agent("scripted")
def _scripted() -> Agent:
    return Agent(ScriptedModel())


def test_the_registry_builds_each_agent_once_and_names_what_it_knows() -> None:
    loaded = load_registry(f"{__name__}:registry")
    assert loaded.build("scripted") is loaded.build("scripted")
    with pytest.raises(ConfigurationError, match=r"no agent 'other'.*\['scripted'\]"):
        loaded.build("other")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_colon", "write module:attribute"),
        ("no.such.module:registry", "cannot import no.such.module"),
        (f"{__name__}:pytest", "not an AgentRegistry"),
    ],
)
def test_a_bad_registry_spec_is_refused_clearly(spec: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says):
        load_registry(spec)


def test_a_factory_that_returns_no_agent_is_named() -> None:
    def not_an_agent() -> Agent:
        return "not an agent"  # type: ignore[return-value]

    bad = AgentRegistry({"bad": not_an_agent})
    with pytest.raises(ConfigurationError, match="returned str, not an Agent"):
        bad.build("bad")


# Round three (issue 38): a task refused before its run sent nothing.


def test_a_task_refused_before_its_run_reports_no_request() -> None:
    refused = TaskResult("failed", "s", error="no agent 'nobody'")
    assert (refused.requests, refused.input_tokens, refused.cost_usd) == (0, 0, None)
    old = {"status": "failed", "session": "s", "error": "no agent 'nobody'"}
    assert TaskResult.from_json(old) == refused
