"""The Python API a user reaches for: model options with one set of names, a conversation id
that is the routing key, a step budget that fits ordinary tasks, and the CLI's --base-url
and --option."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from warmloop import Agent, ConfigurationError, ScriptedModel, Transcript, call, tool
from warmloop.cli.main import main
from warmloop.cli.shared import CliContext
from warmloop.providers.select import resolve_model

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant",
    "OPENAI_API_KEY": "sk-oai",
    "GEMINI_API_KEY": "g-key",
    "DEEPSEEK_API_KEY": "sk-ds",
}
GATEWAY = "http://127.0.0.1:9999/v1/"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


def client_of(model: Any) -> Any:
    return getattr(model, "_client", None) or model.client


@pytest.mark.parametrize(
    "spec",
    ["anthropic:claude-sonnet-4-6", "openai:gpt-5", "openai-chat:gpt-4o", "deepseek:deepseek-chat"],
)
def test_base_url_timeout_and_retries_have_the_same_names_everywhere(spec: str) -> None:
    model = resolve_model(spec, base_url=GATEWAY, timeout=12.5, max_retries=1, api_key="k2")
    client = client_of(model)
    assert str(client.base_url) == GATEWAY
    assert client.timeout == 12.5
    assert client.max_retries == 1
    assert client.api_key == "k2"


def test_gemini_takes_a_base_url_too() -> None:
    model = resolve_model("gemini:gemini-2.5-flash", base_url="http://127.0.0.1:9999/")
    assert model._client._api_client._http_options.base_url == "http://127.0.0.1:9999/"  # type: ignore[attr-defined]


def test_a_self_hosted_server_can_be_named_by_its_model_and_a_base_url() -> None:
    model = resolve_model("openai-compatible:qwen3", base_url=GATEWAY, text_protocol=True)
    assert model.name == f"openai-compatible:{GATEWAY}#qwen3"
    assert model.text_protocol  # type: ignore[attr-defined]


def test_provider_specific_options_reach_the_provider() -> None:
    anthropic = resolve_model("anthropic:claude-sonnet-4-6", cache_ttl="1h")
    assert anthropic.cache_ttl == "1h"  # type: ignore[attr-defined]
    openai = resolve_model("openai:gpt-5", prompt_cache_retention="24h")
    rendered = openai.render(Transcript(), ())
    assert rendered.payload["prompt_cache_retention"] == "24h"
    local = resolve_model("local", n_ctx=4096, max_tokens=64)
    assert local.context_window == 4096 - 64  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "option", "message"),
    [
        ("local", {"base_url": GATEWAY}, "model 'local' takes no option 'base_url'"),
        ("openai:gpt-5", {"cache_ttl": "1h"}, "its options are: api_key, client"),
        ("anthropic:claude-sonnet-4-6", {"n_ctx": 8}, "takes no option 'n_ctx'"),
        ("anthropic:claude-sonnet-4-6", {"cache_ttl": "2h"}, "cache_ttl must be '5m' or '1h'"),
    ],
)
def test_an_option_a_provider_does_not_take_is_a_clear_error(
    spec: str, option: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        resolve_model(spec, **option)


@tool
def step(n: int) -> str:
    """Take step n."""
    return f"did {n}"


def test_a_conversation_id_is_the_routing_key_and_is_validated() -> None:
    model = ScriptedModel([call("step", n=1), call("submit", answer="ok")])
    run = Agent(model, [step]).run_sync("go", conversation_id="ticket-4711")
    assert run.transcript.conversation == "ticket-4711"
    assert model.sessions == ["ticket-4711", "ticket-4711"]
    with pytest.raises(ConfigurationError, match="is not allowed"):
        Agent(model, [step]).run_sync("go", conversation_id="../etc")


def test_the_default_step_budget_fits_a_task_of_thirty_tool_calls() -> None:
    replies = [call("step", n=n) for n in range(30)] + [call("submit", answer="done")]
    run = Agent(ScriptedModel(replies), [step]).run_sync("thirty steps")
    assert not run.extracted
    assert run.steps == 31


def test_the_cli_passes_base_url_and_options_to_the_model() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def factory(spec: str, **options: Any) -> ScriptedModel:
        seen.append((spec, options))
        return ScriptedModel([call("submit", answer="ok")])

    options = ["timeout=30", "cache_ttl=1h", "text_protocol=true"]
    arguments = ["run", "task", "--model", "openai:gpt-5", "--base-url", GATEWAY]
    for option in options:
        arguments += ["--option", option]
    result = CliRunner().invoke(main, arguments, obj=CliContext(model_factory=factory))
    assert result.exit_code == 0, result.output
    assert seen == [
        (
            "openai:gpt-5",
            {"timeout": 30, "cache_ttl": "1h", "text_protocol": True, "base_url": GATEWAY},
        )
    ]


def test_a_malformed_option_is_a_one_line_error() -> None:
    result = CliRunner().invoke(main, ["run", "task", "--option", "no-equals-sign"])
    assert result.exit_code == 2  # bad usage (docs/cli.md "Exit codes")
    assert "--option 'no-equals-sign' must be KEY=VALUE" in result.stderr
    assert "Traceback" not in result.output
