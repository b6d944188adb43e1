"""`ModelSettings` through each provider's official SDK to a loopback server (issue 32):
every setting a provider documents arrives as its documented field, one it does not is
refused naming the provider before any request, a run's settings replace its agent's, and
a change of a setting the cache is keyed on (Anthropic's thinking) is the cause the guard
names, while a sampling setting (temperature) moves no prefix."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_servers import ToolUse
from tests.support.wire import WireLog, wire_stream
from tests.support.wire_servers import WireServer, connect, scripted
from warmloop import Agent, ConfigurationError, ModelSettings
from warmloop.cli.model_options import model_options

SUBMIT = ToolUse("submit", {"answer": "done"})
LOOK = ToolUse("look", {"what": "sky"})


def look(what: str) -> str:
    """Look at something."""
    return f"{what}: blue"


def at(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        value = value[key]
    return value


# Each provider's documented field for each setting it takes (the places are cited where
# they are declared, warmloop/providers/builtin.py):
# Anthropic "Messages > Create a Message"; OpenAI "Responses > Create a model response" and
# "Chat Completions > Create chat completion"; DeepSeek "Create Chat Completion"; vLLM /
# llama.cpp server chat completions; Gemini REST `GenerationConfig` (camelCase on the wire).
CASES: dict[str, tuple[ModelSettings, dict[tuple[str, ...], Any]]] = {
    "anthropic": (
        {
            "max_tokens": 3000,
            "reasoning_effort": "high",
            "stop": ["END"],
            "thinking_budget": 1024,
            "parallel_tool_calls": False,
        },
        {
            ("max_tokens",): 3000,
            ("output_config", "effort"): "high",
            ("stop_sequences",): ["END"],
            ("thinking",): {"type": "enabled", "budget_tokens": 1024},
            ("tool_choice",): {"type": "auto", "disable_parallel_tool_use": True},
        },
    ),
    "openai": (
        {
            "temperature": 0.25,
            "top_p": 0.5,
            "max_tokens": 3000,
            "reasoning_effort": "low",
            "parallel_tool_calls": False,
        },
        {
            ("temperature",): 0.25,
            ("top_p",): 0.5,
            ("max_output_tokens",): 3000,
            ("reasoning", "effort"): "low",
            ("parallel_tool_calls",): False,
        },
    ),
    "openai-chat": (
        {
            "temperature": 0.25,
            "top_p": 0.5,
            "max_tokens": 3000,
            "stop": ["END"],
            "seed": 7,
            "reasoning_effort": "high",
            "parallel_tool_calls": False,
        },
        {
            ("temperature",): 0.25,
            ("top_p",): 0.5,
            ("max_completion_tokens",): 3000,
            ("stop",): ["END"],
            ("seed",): 7,
            ("reasoning_effort",): "high",
            ("parallel_tool_calls",): False,
        },
    ),
    "deepseek": (
        {"temperature": 0.25, "top_p": 0.5, "max_tokens": 3000, "stop": ["END"]},
        {("temperature",): 0.25, ("top_p",): 0.5, ("max_tokens",): 3000, ("stop",): ["END"]},
    ),
    "openai-compatible": (
        {"temperature": 0.25, "max_tokens": 3000, "seed": 7, "stop": ["END"]},
        {("temperature",): 0.25, ("max_tokens",): 3000, ("seed",): 7, ("stop",): ["END"]},
    ),
    "gemini": (
        {
            "temperature": 0.25,
            "top_p": 0.5,
            "max_tokens": 3000,
            "stop": ["END"],
            "seed": 7,
            "thinking_budget": 512,
        },
        {
            ("generationConfig", "temperature"): 0.25,
            ("generationConfig", "topP"): 0.5,
            ("generationConfig", "maxOutputTokens"): 3000,
            ("generationConfig", "stopSequences"): ["END"],
            ("generationConfig", "seed"): 7,
            # google-genai sends thinkingConfig's own keys as given (proto JSON takes both
            # spellings), beside the include_thoughts GeminiModel sets.
            ("generationConfig", "thinkingConfig", "thinking_budget"): 512,
        },
    ),
}


CONVERSATION = {"anthropic": "messages", "openai": "input", "gemini": "contents"}
"""Where each wire keeps the conversation (the rest are Chat Completions: `messages`)."""


@pytest.mark.parametrize("prefix", sorted(CASES))
def test_each_setting_arrives_as_the_providers_documented_field_on_every_step(
    wire_server: WireServer, wire_log: WireLog, prefix: str
) -> None:
    settings, fields = CASES[prefix]
    wire_server.serve(scripted([LOOK, SUBMIT]))
    agent = Agent(connect(wire_server, prefix), [look], model_settings=settings)
    run = agent.run_sync("what colour is the sky?")
    assert run.outputs.model_dump() == {"answer": "done"}
    bodies = wire_server.requests()
    assert len(bodies) == 2
    for body in bodies:  # the same settings on both steps: the second extends the first
        assert {path: at(body, path) for path in fields} == fields
        # I1 on the bodies as sent, settings included (checked by `prefix_invariant`).
        wire_log.record(prefix, wire_stream(body, CONVERSATION.get(prefix, "messages")))
    assert agent.busts == []


REFUSED = [
    ("openai", "seed", 1),
    ("openai", "stop", ["END"]),
    ("anthropic", "seed", 1),
    ("anthropic", "temperature", 0.5),
    ("gemini", "parallel_tool_calls", False),
    ("deepseek", "reasoning_effort", "low"),
    ("openai-chat", "thinking_budget", 1024),
]


@pytest.mark.parametrize(("prefix", "setting", "value"), REFUSED)
def test_a_setting_the_provider_does_not_document_is_refused_naming_it_before_any_request(
    wire_server: WireServer, prefix: str, setting: str, value: object
) -> None:
    model = connect(wire_server, prefix)
    given: Any = {setting: value}
    with pytest.raises(ConfigurationError, match=rf"provider .*\({prefix}:\).* {setting} "):
        Agent(model, model_settings=given)
    agent = Agent(model)
    with pytest.raises(ConfigurationError, match=rf"\({prefix}:\) does not take .*{setting}"):
        agent.run_sync("a task", model_settings=given)
    assert wire_server.requests() == []


def test_a_runs_settings_replace_the_agents_for_that_run_only(wire_server: WireServer) -> None:
    wire_server.serve(scripted([SUBMIT, SUBMIT]))
    agent = Agent(
        connect(wire_server, "openai-chat"), model_settings={"temperature": 0.1, "top_p": 0.9}
    )
    agent.run_sync("first", model_settings={"temperature": 0.9})
    agent.run_sync("second")
    first, second = wire_server.requests()
    assert (first["temperature"], first["top_p"]) == (0.9, 0.9)
    assert (second["temperature"], second["top_p"]) == (0.1, 0.9)


@pytest.mark.moves_cache_prefix(reason="the follow-up turns thinking on, which Anthropic keys")
def test_the_guard_names_a_thinking_change_on_a_follow_up_as_the_cause(
    wire_server: WireServer,
) -> None:
    wire_server.serve(scripted([SUBMIT, SUBMIT]))
    agent = Agent(connect(wire_server, "anthropic"))
    first = agent.run_sync("first")
    agent.run_sync("and then?", history=first.transcript, model_settings={"thinking_budget": 2048})
    assert wire_server.requests()[1]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    [bust] = agent.busts
    assert bust.section == "request"
    assert "thinking (model setting thinking_budget)" in bust.cause


def test_a_sampling_setting_changed_on_a_follow_up_moves_no_prefix(
    wire_server: WireServer,
) -> None:
    wire_server.serve(scripted([SUBMIT, SUBMIT]))
    agent = Agent(connect(wire_server, "anthropic"), model_settings={"stop": ["END"]})
    first = agent.run_sync("first")
    agent.run_sync("and then?", history=first.transcript, model_settings={"max_tokens": 900})
    assert [body["max_tokens"] for body in wire_server.requests()] == [4096, 900]
    assert agent.busts == []  # the answer's limit reads nothing from the cache: no bust


def test_resolve_model_and_the_clis_options_take_settings_an_agent_goes_over(
    wire_server: WireServer,
) -> None:
    wire_server.serve(scripted([SUBMIT]))
    # `--option KEY=VALUE` of a setting's name is a model setting, checked the same way.
    chosen = model_options("deepseek:deepseek-chat", ("temperature=0.4", "max_tokens=100"))
    assert chosen == {"model_settings": {"temperature": 0.4, "max_tokens": 100}}
    agent = Agent(connect(wire_server, "deepseek", **chosen), model_settings={"max_tokens": 50})
    agent.run_sync("a task")
    [body] = wire_server.requests()
    assert (body["temperature"], body["max_tokens"]) == (0.4, 50)
