"""`Agent` takes a model selection string as well as a `Model`: the string resolves exactly
as `resolve_model` does (the same model class, name and facts; the same refusal)."""

from __future__ import annotations

import pytest

from tests.support.fake_servers import Script, ToolUse, serve
from warmloop import Agent, ConfigurationError, resolve_model


def test_an_agent_runs_the_model_a_string_names() -> None:
    script = Script([ToolUse("submit", {"answer": "Paris"})])
    with serve(script) as url:
        run = Agent(f"openai-compatible:{url}").run_sync("What is the capital of France?")
    assert run.outputs.model_dump() == {"answer": "Paris"}
    assert len(script.received) == 1


def test_a_model_string_resolves_as_resolve_model_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-offline")
    name = "anthropic:claude-sonnet-4-5"
    expected = resolve_model(name)
    model = Agent(name).model
    assert type(model) is type(expected)
    assert model.name == expected.name == name
    assert model.facts == expected.facts


def test_a_bad_model_string_is_refused_as_resolve_model_refuses_it() -> None:
    with pytest.raises(ConfigurationError) as direct:
        resolve_model("nonesuch:model-1")
    with pytest.raises(ConfigurationError) as through_agent:
        Agent("nonesuch:model-1")
    assert str(through_agent.value) == str(direct.value)
