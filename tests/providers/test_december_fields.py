"""Each model family's requests carry exactly the cache fields its provider documents (the
facts of December 2026, issue 48), through the official SDKs to the loopback wire server.

OpenAI's prompt caching guide: GPT-5.6 and later "must set `prompt_cache_key` to use the more
reliable matching", take `prompt_cache_options` (`ttl`, `prewarm`) and explicit
`prompt_cache_breakpoint`s, and deprecate `prompt_cache_retention`; GPT-5.5 and older answer
`prompt_cache_options` and breakpoints with a 400, GPT-5.5 defaults to `24h` and refuses
`in_memory`, and before it the default depends on the organisation's data retention
(unknown to a client: `CacheProfile.default_retention_known`). Gemini 3.x and 4 cache from
4,096 tokens, Gemini 4 reads at a 95% discount; Vertex AI's durable tier serves an evicted
prefix for up to 24 h, so no keep-alive is planned there.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.fake_servers import ToolUse
from tests.support.wire_servers import WireServer, openai_client, scripted
from warmloop import Transcript, UserText
from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import profile_for
from warmloop.keepalive.rule import pause_costs
from warmloop.messages import SystemText
from warmloop.providers.openai.chat import OpenAIChatModel
from warmloop.providers.openai.responses import OpenAIResponsesModel

OPENING = "You answer questions about cities, one word each. " * 30
OLDER = ("gpt-5", "gpt-5-mini", "gpt-5.2", "gpt-5.5", "gpt-4.1")
NEWER = ("gpt-5.6-sol", "gpt-5.6-luna", "gpt-6-sol", "gpt-6.1-sol")
OPTIONS = {"ttl", "prewarm", "comparison_response_id"}
"""`prompt_cache_options`' documented keys (openai SDK 3.57, `PromptCacheOptions`)."""


def transcript() -> Transcript:
    return Transcript([SystemText(OPENING), UserText("Which country is Paris in?")])


async def sent_body(
    wire: WireServer, model: OpenAIResponsesModel | OpenAIChatModel
) -> dict[str, Any]:
    """The body of one request `model` sends for `transcript()`."""
    await model.send(model.render(transcript(), []), session_id="conversation-1")
    (body,) = wire.requests()
    return body


def responses(wire: WireServer, name: str, **options: Any) -> OpenAIResponsesModel:
    handler = scripted([ToolUse("submit", {"answer": "France"})])
    # A stand-in for OpenAI's own API at a loopback host: the key is asked for (issue 45).
    options = {"cache_key": True, **options}
    return OpenAIResponsesModel(name, client=openai_client(wire, handler), **options)


def breakpoints(body: dict[str, Any]) -> list[object]:
    """Every `prompt_cache_breakpoint` anywhere in the body."""
    found: list[object] = []

    def walk(value: object) -> Iterator[None]:
        if isinstance(value, dict):
            if "prompt_cache_breakpoint" in value:
                found.append(value["prompt_cache_breakpoint"])
            for item in value.values():
                yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)
        return
        yield

    list(walk(body))
    return found


@pytest.mark.parametrize("name", OLDER)
async def test_a_model_before_gpt_5_6_gets_no_field_it_refuses(
    wire_server: WireServer, name: str
) -> None:
    body = await sent_body(wire_server, responses(wire_server, name))
    assert body["prompt_cache_key"]
    assert "prompt_cache_options" not in body
    assert breakpoints(body) == []
    retention = profile_for(f"openai:{name}")
    # A free longer retention is asked for where the table sells one (GPT-5: 24h); GPT-5.5
    # takes 24h by default and refuses in_memory, so it gets no retention field at all.
    expected = "24h" if len(retention.retentions) > 1 else None
    assert body.get("prompt_cache_retention") == expected


@pytest.mark.parametrize("name", NEWER)
async def test_gpt_5_6_and_later_carry_the_key_options_and_breakpoint_never_the_old_field(
    wire_server: WireServer, name: str
) -> None:
    body = await sent_body(wire_server, responses(wire_server, name, prompt_cache_retention="12h"))
    assert body["prompt_cache_key"]
    assert "prompt_cache_retention" not in body  # deprecated there
    assert body["prompt_cache_options"] == {"ttl": "12h"}
    assert set(body["prompt_cache_options"]) <= OPTIONS
    assert breakpoints(body) == [{"mode": "explicit"}]  # the opening's end, one of four


@pytest.mark.parametrize("name", NEWER)
async def test_the_default_retention_sends_no_ttl(wire_server: WireServer, name: str) -> None:
    body = await sent_body(wire_server, responses(wire_server, name))
    assert "prompt_cache_options" not in body
    assert "prompt_cache_retention" not in body


def test_a_ttl_an_older_model_does_not_sell_is_refused_before_any_request() -> None:
    with pytest.raises(ConfigurationError, match="has no cache TTL '12h'"):
        OpenAIResponsesModel("gpt-5", api_key="sk-test", prompt_cache_retention="12h")
    with pytest.raises(ConfigurationError, match="has no cache TTL 'in_memory'"):
        OpenAIResponsesModel("gpt-5.5", api_key="sk-test", prompt_cache_retention="in_memory")


async def test_chat_completions_to_gpt_5_6_carry_the_key(wire_server: WireServer) -> None:
    handler = scripted([ToolUse("submit", {"answer": "France"})])
    client = openai_client(wire_server, handler)  # stands in for OpenAI: asks for the key
    model = OpenAIChatModel("gpt-5.6-sol", client=client, cache_key=True)
    body = await sent_body(wire_server, model)
    assert body["prompt_cache_key"]
    assert "prompt_cache_retention" not in body


def test_a_model_that_needs_the_key_and_will_send_none_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gateway = "http://127.0.0.1:9/v1"
    with caplog.at_level(logging.WARNING):
        OpenAIResponsesModel("gpt-5", api_key="sk-test", base_url=gateway)
        assert "prompt_cache_key" not in caplog.text  # GPT-5 matches without one
        OpenAIResponsesModel("gpt-5.6-sol", api_key="sk-test", base_url=gateway, cache_key=True)
        assert "prompt_cache_key" not in caplog.text
        OpenAIResponsesModel("gpt-5.6-sol", api_key="sk-test", base_url=gateway)
    assert "fall back to the older, far less reliable matching" in caplog.text


def test_the_retention_defaults_per_family_say_where_they_are_unknown() -> None:
    assert not profile_for("openai:gpt-5").default_retention_known  # the organisation's ZDR
    assert "data-retention" in profile_for("openai:gpt-5").default_ttl_depends
    for known in ("openai:gpt-5-mini", "openai:gpt-5.5", "openai:gpt-5.6-sol", "openai:gpt-6-sol"):
        assert profile_for(known).default_retention_known, known
    assert profile_for("openai:gpt-5.5").ttl == "24h"
    assert [profile_for(f"openai:{n}").needs_cache_key for n in (*OLDER, *NEWER)] == [False] * len(
        OLDER
    ) + [True] * len(NEWER)


def test_gemini_3_and_4_cache_from_4096_tokens_and_gemini_4_reads_at_5_percent() -> None:
    for name in ("gemini-3.6-flash", "gemini-3-pro-next", "gemini-4-argon", "gemini-4-neon"):
        assert profile_for(f"gemini:{name}").min_cacheable_tokens == 4_096, name
    assert profile_for("gemini:gemini-4-hydrogen").read_multiplier == 0.05
    assert profile_for("gemini:gemini-3.8-flash").read_multiplier == 0.1
    assert profile_for("gemini:gemini-2.5-flash").min_cacheable_tokens == 2_048


def test_no_keep_alive_is_planned_where_vertex_durable_tier_serves_the_prefix() -> None:
    assert pause_costs(profile_for("gemini:gemini-2.5-flash"), 50_000) is not None
    vertex = profile_for("vertex:gemini-2.5-flash")
    assert vertex.durable_seconds == 86_400
    assert pause_costs(vertex, 50_000) is None


def test_every_fact_has_its_source_and_date() -> None:
    for name in (
        "openai:gpt-5.6-sol",
        "gemini:gemini-4-argon",
        "gemini:gemini-3.7-flash",
        "vertex:x",
    ):
        profile = profile_for(name)
        assert profile.source.startswith("https://"), name
        assert profile.as_of.year == 2026, name
    assert json.dumps(profile_for("openai:gpt-5.6-sol").as_of.isoformat()) == '"2026-12-07"'
