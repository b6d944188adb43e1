"""What `warmloop proxy` adds, through each official SDK to the loopback server: a routing key
per conversation on the provider's own host where the client sent none (OpenAI's
`prompt_cache_key`, "Prompt caching > Requests are routed ... prompt_cache_key"; xAI's
`x-grok-conv-id`, "Prompt Caching > Maximizing Cache Hits"), Anthropic breakpoints beside the
client's own where they leave room ("Prompt caching > cache_control"), each fix switchable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from tests.support.proxy_wire import Captured, send
from tests.support.wire_servers import WireServer
from warmloop.proxy.fixes import OFF, Fixes
from warmloop.proxy.server import Proxy

PARSER = "Fix the parser so that nested brackets in a query no longer crash it"
DOCS = "Write the user guide for the export command, with one example per format"


class Loopback(httpx2.HTTPTransport):
    """A real transport whose every connection goes to the loopback server: the proxy
    believes its upstream is a provider's own host (as /etc/hosts would make it)."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.target = httpx2.URL(url)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(
            scheme="http", host=self.target.host, port=self.target.port
        )
        return super().handle_request(request)


def chat(base: str, task: str, *, turns: int = 0, **extra: Any) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
    messages: Any = [{"role": "system", "content": "You are terse."}]
    messages.append({"role": "user", "content": task})
    for n in range(turns):
        messages.append({"role": "assistant", "content": f"{task}: step {n} done."})
        messages.append({"role": "user", "content": f"Go on with step {n + 1} of: {task}"})
    client.chat.completions.create(model="gpt-5", messages=messages, **extra)


@pytest.mark.parametrize(
    ("upstream", "field", "header"),
    [
        ("https://api.openai.com", "prompt_cache_key", None),
        ("https://api.x.ai", None, "x-grok-conv-id"),
    ],
)
def test_each_conversation_gets_its_own_routing_key_on_the_providers_host(
    wire_server: WireServer, upstream: str, field: str | None, header: str | None
) -> None:
    captured = Captured()
    wire_server.serve(captured)
    with Proxy(upstream, None, fixes=Fixes(), transport=Loopback(wire_server.url)) as proxy:
        proxy.start()
        chat(proxy.url, PARSER)
        chat(proxy.url, DOCS)
        chat(proxy.url, PARSER, turns=1)
        chat(proxy.url, DOCS, turns=2)
    keys = [
        body.get(field) if field else headers.get(header or "")
        for _, headers, body in captured.seen
    ]
    assert all(isinstance(key, str) and key.startswith("wl-") for key in keys)
    assert keys[0] == keys[2]
    assert keys[1] == keys[3]
    assert keys[0] != keys[1]
    if field:  # the header is no field, and the field no header
        assert all("x-grok-conv-id" not in headers for _, headers, _ in captured.seen)
    else:
        assert all("prompt_cache_key" not in body for body in captured.bodies)


def test_a_key_the_client_sent_is_never_replaced(wire_server: WireServer) -> None:
    captured = Captured()
    wire_server.serve(captured)
    transport = Loopback(wire_server.url)
    with Proxy("https://api.openai.com", None, fixes=Fixes(), transport=transport) as proxy:
        proxy.start()
        chat(proxy.url, PARSER, prompt_cache_key="mine")
    assert captured.bodies[0]["prompt_cache_key"] == "mine"


def test_the_cache_key_fix_switches_off(wire_server: WireServer) -> None:
    captured = Captured()
    wire_server.serve(captured)
    transport = Loopback(wire_server.url)
    fixes = Fixes(cache_key=False)
    with Proxy("https://api.openai.com", None, fixes=fixes, transport=transport) as proxy:
        proxy.start()
        chat(proxy.url, PARSER)
    assert "prompt_cache_key" not in captured.bodies[0]


def test_breakpoints_the_client_placed_stay_and_the_proxy_adds_what_they_leave(
    wire_server: WireServer,
) -> None:
    captured = Captured()
    wire_server.serve(captured)
    marked: Any = [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    with Proxy(wire_server.url, None, fixes=Fixes()).start() as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            system=marked,
            messages=[{"role": "user", "content": PARSER}],
        )
    body = captured.bodies[0]
    assert body["system"] == marked  # the client's, as it sent it
    write = {"type": "text", "text": PARSER, "cache_control": {"type": "ephemeral"}}
    assert body["messages"] == [{"role": "user", "content": [write]}]


@pytest.mark.parametrize("fixes", [OFF, Fixes(breakpoints=False)], ids=["record", "no-breakpoints"])
def test_breakpoints_switch_off(wire_server: WireServer, fixes: Fixes) -> None:
    captured = Captured()
    wire_server.serve(captured)
    with Proxy(wire_server.url, None, fixes=fixes).start() as proxy:
        send("anthropic", proxy.url, stream=False)
    assert "cache_control" not in json.dumps(captured.bodies[0])
    assert captured.bodies[0]["system"] == "You are terse."


def test_a_session_header_the_client_sent_is_kept(wire_server: WireServer) -> None:
    captured = Captured()
    wire_server.serve(captured)
    with Proxy(wire_server.url, None, fixes=Fixes(session_header="X-Session-ID")) as proxy:
        proxy.start()
        chat(proxy.url, PARSER, extra_headers={"X-Session-ID": "theirs"})
        chat(proxy.url, PARSER)
    (_, first, _), (_, second, _) = captured.seen
    assert first["x-session-id"] == "theirs"
    assert second["x-session-id"].startswith("wl-")


def test_credentials_are_never_logged_written_or_sent_as_a_key(
    wire_server: WireServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-ant-proxy-SECRET-0a1b2c3d"
    captured = Captured()
    wire_server.serve(captured)
    log = tmp_path / "requests.jsonl"
    fixes = Fixes(session_header="X-Session-ID")
    with Proxy(wire_server.url, log, fixes=fixes, guard=True).start() as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key=secret, max_retries=0)
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=64,
            system="You are terse.",
            messages=[{"role": "user", "content": PARSER}],
        )
        client.messages.create(  # a rewritten first turn: the guard prints a bust line
            model="claude-sonnet-4-6",
            max_tokens=64,
            system="You are terse.",
            messages=[{"role": "user", "content": DOCS}],
        )
    (_, headers, body), _ = captured.seen
    credential = headers.get("x-api-key") or headers.get("authorization", "")
    assert secret in credential  # the client's credential reaches the API only
    assert secret not in headers["x-session-id"]
    assert secret not in json.dumps(body)
    assert log.read_text().count("\n") == 2
    assert secret not in log.read_text() + capsys.readouterr().err


def opening(base: str, model: str, system: Any) -> None:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
    messages: Any = [{"role": "system", "content": system}, {"role": "user", "content": PARSER}]
    client.chat.completions.create(model=model, messages=messages)


@pytest.mark.parametrize(
    ("model", "marked"),
    [("gpt-5.6", True), ("gpt-5", False)],
    ids=["takes-breakpoints", "implicit-only"],
)
def test_openai_models_that_take_breakpoints_get_one_after_the_opening(
    wire_server: WireServer, model: str, marked: bool
) -> None:
    """Prompt caching > Prompt cache breakpoints (GPT-5.6 and later): the explicit
    breakpoint on the block that ends the stable opening lets every session read it."""
    captured = Captured()
    wire_server.serve(captured)
    transport = Loopback(wire_server.url)
    with Proxy("https://api.openai.com", None, fixes=Fixes(), transport=transport) as proxy:
        proxy.start()
        opening(proxy.url, model, "You are terse.")
    system = captured.bodies[0]["messages"][0]
    if marked:
        block = {"type": "text", "text": "You are terse."}
        assert system["content"] == [{**block, "prompt_cache_breakpoint": {"mode": "explicit"}}]
    else:
        assert system["content"] == "You are terse."
    assert captured.bodies[0]["messages"][1] == {"role": "user", "content": PARSER}


def test_an_openai_breakpoint_the_client_placed_is_left_where_it_is(
    wire_server: WireServer,
) -> None:
    captured = Captured()
    wire_server.serve(captured)
    transport = Loopback(wire_server.url)
    theirs = [  # the client's breakpoint ends the first block: the second is no opening
        {"type": "text", "text": "You are", "prompt_cache_breakpoint": {"mode": "explicit"}},
        {"type": "text", "text": " terse."},
    ]
    with Proxy("https://api.openai.com", None, fixes=Fixes(), transport=transport) as proxy:
        proxy.start()
        opening(proxy.url, "gpt-5.6", theirs)
    assert captured.bodies[0]["messages"][0]["content"] == theirs
