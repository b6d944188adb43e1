"""`warmloop record --diagnose`: the documented diagnostic fields are added to forwarded
requests only when asked, and only for api.anthropic.com (Messages: the
`cache-diagnosis-2026-04-07` beta and `diagnostics.previous_message_id`, "Cache
diagnostics", https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics) and
api.openai.com (Responses: `prompt_cache_options.comparison_response_id`, "Prompt cache
diagnostics", https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics).
Every other request reaches the upstream byte for byte as the client sent it.

The upstream is the recorder's own transport (an `httpx2.MockTransport` answering in the
documented shapes), so the proxy believes it talks to the real host; the client is real
HTTP over loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from warmloop.audit.report import audit
from warmloop.cli.main import main
from warmloop.exchange.identity import shown_key
from warmloop.exchange.log import read_log
from warmloop.exchange.response_facts import response_facts
from warmloop.providers.anthropic.readers import BETA as ANTHROPIC_BETA
from warmloop.proxy.server import Proxy

SYSTEM = "You fix bugs. " * 50


def answer(body: dict[str, Any]) -> httpx2.Response:
    """A 200 whose body streams as a real upstream's does (the proxy relays raw bytes)."""
    data = json.dumps(body).encode()
    headers = {"content-type": "application/json", "content-length": str(len(data))}
    return httpx2.Response(200, headers=headers, stream=httpx2.ByteStream(data))


@dataclass
class Upstream:
    """Answers Messages and Responses requests as documented; keeps what it received."""

    received: list[httpx2.Request] = field(default_factory=list)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.received.append(request)
        number = len(self.received)
        if request.url.path.endswith("/messages"):
            asked = json.loads(request.content).get("diagnostics")
            named = (asked or {}).get("previous_message_id")
            diagnostics = (
                {"cache_miss_reason": {"type": "messages_changed", "cache_missed_input_tokens": 9}}
                if named == "msg_2"
                else None
            )
            return answer(
                {
                    "id": f"msg_{number}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-6",
                    "content": [{"type": "text", "text": "ok"}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 2},
                    "diagnostics": diagnostics,
                }
            )
        body = {
            "id": f"resp_{number}",
            "object": "response",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}},
        }
        if request.url.path.endswith("/responses"):
            body["prompt_cache_diagnostics"] = {"type": "cache_hit"}
        return answer(body)

    def bodies(self) -> list[bytes]:
        return [request.content for request in self.received]


@contextmanager
def recording(
    upstream: str, out: Path, *, diagnose: bool
) -> Iterator[tuple[Upstream, httpx2.Client]]:
    fake = Upstream()
    transport = httpx2.MockTransport(fake.handler)
    with Proxy(upstream, out, transport=transport, diagnose=diagnose) as recorder:
        recorder.start()
        with httpx2.Client(base_url=recorder.url, timeout=30) as client:
            yield fake, client


def messages_body(task: str, *turns: str, user: str | None = None) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for turn in turns:
        messages += [
            {"role": "assistant", "content": turn},
            {"role": "user", "content": "go on"},
        ]
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": SYSTEM,
        "messages": messages,
    }
    if user is not None:
        body["metadata"] = {"user_id": user}
    # spaced separators: a proxy that re-serialised an untouched body would be caught
    return json.dumps(body, separators=(", ", ": ")).encode()


def responses_body(*items: str, options: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {
        "model": "gpt-5.6",
        "instructions": SYSTEM,
        "input": [{"role": "user", "content": text} for text in items],
    }
    if options is not None:
        body["prompt_cache_options"] = options
    return json.dumps(body, separators=(", ", ": ")).encode()


def post(client: httpx2.Client, path: str, body: bytes, **headers: str) -> None:
    sent = {"content-type": "application/json", **headers}
    assert client.post(path, content=body, headers=sent).status_code == 200


def test_anthropic_requests_name_the_previous_message_of_their_conversation(
    tmp_path: Path,
) -> None:
    out = tmp_path / "log.jsonl"
    with recording("https://api.anthropic.com", out, diagnose=True) as (upstream, client):
        post(client, "/v1/messages", messages_body("task A", user="a"))
        post(client, "/v1/messages", messages_body("task B", user="b"))
        post(client, "/v1/messages", messages_body("task A", "step 1", user="a"))
        post(
            client,
            "/v1/messages",
            messages_body("task B", "step 1", user="b"),
            **{"anthropic-beta": "token-efficient-tools-2025-02-19"},
        )
        post(client, "/v1/messages", messages_body("task A", "step 1", "step 2", user="a"))
    sent = [json.loads(body) for body in upstream.bodies()]
    assert [body["diagnostics"]["previous_message_id"] for body in sent] == [
        None,  # a first turn opts in
        None,  # another key: a new conversation, never compared with another's
        "msg_1",
        "msg_2",
        "msg_3",
    ]
    betas = [request.headers.get_list("anthropic-beta") for request in upstream.received]
    assert betas[0] == [ANTHROPIC_BETA]
    assert betas[3] == [f"token-efficient-tools-2025-02-19,{ANTHROPIC_BETA}"]
    # the log keeps the body as forwarded and the answers' diagnostics, which the audit reads
    report = audit(read_log(out))
    b = next(c for c in report.conversations if f"({shown_key('metadata.user_id=b')})" in c.label)
    assert b.findings[1].verdict is not None
    assert b.findings[1].verdict.reason == "messages_changed"
    assert b.findings[1].agrees is False  # the request extended the last: shown as both
    a = next(c for c in report.conversations if f"({shown_key('metadata.user_id=a')})" in c.label)
    assert [f.verdict.kind if f.verdict else None for f in a.findings] == [
        None,
        "unchanged",
        "unchanged",
    ]
    assert all(f.divergence is None for f in a.findings)  # the added fields are no bust


def test_openai_responses_requests_name_the_response_they_continue(tmp_path: Path) -> None:
    out = tmp_path / "log.jsonl"
    first = responses_body("Summarise.", options={"ttl": "30m"})
    chat = b'{"model": "gpt-5", "messages": [{"role": "user", "content": "hi"}]}'
    with recording("https://api.openai.com", out, diagnose=True) as (upstream, client):
        post(client, "/v1/responses", first)
        post(client, "/v1/chat/completions", chat)
        post(client, "/v1/responses", responses_body("Summarise.", "More.", options={"ttl": "30m"}))
    bodies = upstream.bodies()
    assert bodies[0] == first  # nothing to compare with yet: as sent
    assert bodies[1] == chat  # Chat Completions has no diagnostics: as sent
    assert json.loads(bodies[2])["prompt_cache_options"] == {
        "ttl": "30m",
        "comparison_response_id": "resp_1",
    }
    assert "anthropic-beta" not in upstream.received[2].headers
    found = audit(read_log(out))
    responses = next(c for c in found.conversations if c.format == "openai-responses")
    assert [f.verdict.reason if f.verdict else None for f in responses.findings] == [
        "cache_hit",
        "cache_hit",
    ]
    assert responses.findings[1].divergence is None  # the comparison id is no bust


@pytest.mark.parametrize(
    ("upstream", "diagnose"),
    [
        ("https://api.anthropic.com", False),  # not asked
        ("http://127.0.0.1:9", True),  # another host
        ("https://api.example.com", True),
        ("https://api.anthropic.com.example.net", True),
        ("http://api.anthropic.com", True),  # not the documented https API
        ("https://api.anthropic.com:8443", True),
    ],
)
def test_other_hosts_and_no_flag_get_every_request_as_sent(
    tmp_path: Path, upstream: str, diagnose: bool
) -> None:
    bodies = [messages_body("task A"), messages_body("task A", "step 1")]
    with recording(upstream, tmp_path / "log.jsonl", diagnose=diagnose) as (fake, client):
        for body in bodies:
            post(client, "/v1/messages", body, **{"anthropic-beta": "files-api-2025-04-14"})
            post(client, "/v1/responses", responses_body("x"))
    assert fake.bodies() == [bodies[0], responses_body("x"), bodies[1], responses_body("x")]
    for request in fake.received[::2]:  # the Messages requests
        assert request.headers.get_list("anthropic-beta") == ["files-api-2025-04-14"]


def test_a_client_that_asks_itself_is_left_alone(tmp_path: Path) -> None:
    mine = json.loads(messages_body("task A", "step 1"))
    mine["diagnostics"] = {"previous_message_id": "msg_mine"}
    body = json.dumps(mine).encode()
    out = tmp_path / "log.jsonl"
    with recording("https://api.anthropic.com", out, diagnose=True) as (upstream, client):
        post(client, "/v1/messages", messages_body("task A"))
        post(client, "/v1/messages", body)
    assert upstream.bodies()[1] == body


def test_the_command_says_when_diagnose_does_not_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(self: Proxy) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Proxy, "serve_forever", stop)
    args = ["record", "--port", "0", "--out", str(tmp_path / "log.jsonl"), "--diagnose"]
    other = CliRunner().invoke(main, [*args, "--upstream", "http://127.0.0.1:9"])
    assert other.exit_code == 0, other.output
    assert "--diagnose applies to https://api.anthropic.com and https://api.openai.com" in (
        " ".join(other.output.split())
    )
    real = CliRunner().invoke(main, [*args, "--upstream", "https://api.anthropic.com"])
    assert real.exit_code == 0, real.output
    assert "--diagnose applies" not in real.output


def test_response_ids_and_diagnostics_are_read_from_streams_too() -> None:
    message = {"id": "msg_9", "type": "message", "usage": {"input_tokens": 3}}
    message["diagnostics"] = {"cache_miss_reason": None}
    anthropic_events = (
        f"event: message_start\ndata: {json.dumps({'type': 'message_start', 'message': message})}"
        '\n\nevent: message_stop\ndata: {"type": "message_stop"}\n\n'
    ).encode()
    facts = response_facts(anthropic_events, "text/event-stream")
    assert (facts.response_id, facts.diagnostics) == ("msg_9", {"cache_miss_reason": None})
    response = {"id": "resp_9", "object": "response", "usage": {"input_tokens": 3}}
    response["prompt_cache_diagnostics"] = {"type": "cache_hit"}
    done = {"type": "response.completed", "response": response}
    openai_events = f"event: response.completed\ndata: {json.dumps(done)}\n\n".encode()
    facts = response_facts(openai_events, "text/event-stream")
    assert (facts.response_id, facts.diagnostics) == ("resp_9", {"type": "cache_hit"})
