"""Real requests refused in a test run (issue 45, must-show 5; pydantic-ai's
`ALLOW_MODEL_REQUESTS`): with `warmloop.testing.ALLOW_MODEL_REQUESTS = False`, or
`WARMLOOP_ALLOW_MODEL_REQUESTS=0`, a run on a real model fails loudly before its SDK sends
anything (the loopback server receives nothing), on every wire; the scripted model runs as
ever."""

from __future__ import annotations

import pytest

import warmloop.testing
from tests.support.fake_servers import Said
from tests.support.wire_servers import WireServer, connect, scripted
from warmloop import Agent, ModelRequestsRefused, RunAborted, ScriptedModel

PREFIXES = ("anthropic", "openai", "openai-chat", "openai-compatible", "gemini")


def refused_run(server: WireServer, prefix: str) -> RunAborted:
    server.serve(scripted([Said("Hello.")]))
    with pytest.raises(RunAborted) as info:
        Agent(connect(server, prefix)).run_sync("Hi.")
    assert server.requests() == []  # nothing left the process
    return info.value


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_real_request_is_refused_loudly_when_requests_are_off(
    wire_server: WireServer, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warmloop.testing, "ALLOW_MODEL_REQUESTS", False)
    error = refused_run(wire_server, prefix)
    assert isinstance(error.__cause__, ModelRequestsRefused)
    assert "ALLOW_MODEL_REQUESTS is False" in str(error)
    assert "ScriptedModel" in str(error)


def test_the_environment_turns_requests_off_too(
    wire_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMLOOP_ALLOW_MODEL_REQUESTS", "0")
    error = refused_run(wire_server, "openai-chat")
    assert "WARMLOOP_ALLOW_MODEL_REQUESTS=0" in str(error)


def test_the_scripted_model_is_never_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warmloop.testing, "ALLOW_MODEL_REQUESTS", False)
    assert Agent(ScriptedModel(["Hello."])).run_sync("Hi.").output == "Hello."


def test_requests_go_out_while_allowed(wire_server: WireServer) -> None:
    wire_server.serve(scripted([Said("Hello.")]))
    assert Agent(connect(wire_server, "openai-chat")).run_sync("Hi.").output == "Hello."
    assert len(wire_server.requests()) == 1
