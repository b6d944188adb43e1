"""OpenAI's explicit breakpoint on Responses requests through `warmloop proxy` (issue 34).

OpenAI's prompt caching guide (https://developers.openai.com/api/docs/guides/prompt-caching,
"Prompt cache breakpoints"): GPT-5.6 and later take `prompt_cache_breakpoint:
{"mode": "explicit"}` on a content part (`input_text` in Responses: the SDK's
`ResponseInputTextParam.prompt_cache_breakpoint`, "Marks the exact end of a reusable prompt
prefix"); the implicit breakpoint sits at the newest message and matches whole entries, so
only an explicit one at the end of the opening lets a second session, with another task,
read it. Each request goes through the official SDK to the loopback server, straight and
through the proxy, and the model-visible content of both is the same.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.proxy.test_proxy_fixes import DOCS, PARSER, Loopback
from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy

OPENAI = "https://api.openai.com"
RULES = "Answer with the tools. Cite the lines you read."
MARK = {"mode": "explicit"}


def respond(
    base: str, model: str, task: str, *, opening: Any = RULES, stream: bool = False
) -> None:
    """One Responses request through the official SDK (a developer opening, the task), read
    to its end."""
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
    items: Any = [{"role": "developer", "content": opening}, {"role": "user", "content": task}]
    made: Any = client.responses.create(
        model=model, input=items, max_output_tokens=64, stream=stream
    )
    if stream:
        list(made)


def visible(body: dict[str, Any]) -> dict[str, Any]:
    """A received Responses body as the model reads it: no breakpoint markers, and a string
    content as the one `input_text` part it stands for (API reference, "Create a model
    response" > input > content: "A text input to the model" or a list of input parts)."""

    def part(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: part(v) for k, v in value.items() if k != "prompt_cache_breakpoint"}
        if isinstance(value, list):
            return [part(v) for v in value]
        return value

    out: dict[str, Any] = part(body)
    for item in out["input"]:
        if isinstance(item.get("content"), str):
            item["content"] = [{"type": "input_text", "text": item["content"]}]
    return out


def through_proxy(wire_server: WireServer, send: Any) -> Captured:
    """Run `send(base)` straight to the loopback server, then through the proxy (every fix on,
    upstream api.openai.com, every connection sent to the loopback server)."""
    captured = Captured()
    wire_server.serve(captured)
    send(wire_server.url)
    with Proxy(OPENAI, None, fixes=Fixes(), transport=Loopback(wire_server.url)) as proxy:
        proxy.start()
        send(proxy.url)
    return captured


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_gpt_5_6_gets_a_breakpoint_at_the_end_of_the_opening_and_sees_the_same(
    wire_server: WireServer, stream: bool
) -> None:
    captured = through_proxy(
        wire_server, lambda base: respond(base, "gpt-5.6", PARSER, stream=stream)
    )
    direct, proxied = captured.bodies
    opening = {"type": "input_text", "text": RULES, "prompt_cache_breakpoint": MARK}
    assert proxied["input"][0] == {"role": "developer", "content": [opening]}
    assert proxied["input"][1] == direct["input"][1]  # the newest turn: the implicit one's
    assert json.dumps(proxied).count("prompt_cache_breakpoint") == 1
    assert "prompt_cache_breakpoint" not in json.dumps(direct)
    proxied.pop("prompt_cache_key")  # the routing key, on the provider's own host
    assert visible(proxied) == visible(direct)


def test_every_session_of_an_agent_marks_the_same_opening(wire_server: WireServer) -> None:
    def two_sessions(base: str) -> None:
        respond(base, "gpt-5.6", PARSER)
        respond(base, "gpt-5.6", DOCS)

    captured = through_proxy(wire_server, two_sessions)
    _, _, first, second = captured.bodies
    assert first["input"][0] == second["input"][0]
    assert first["input"][0]["content"][0]["prompt_cache_breakpoint"] == MARK


@pytest.mark.parametrize(
    "send",
    [
        pytest.param(lambda base: respond(base, "gpt-5", PARSER), id="implicit-only-model"),
        pytest.param(
            lambda base: respond(
                base,
                "gpt-5.6",
                PARSER,
                opening=[
                    {"type": "input_text", "text": RULES, "prompt_cache_breakpoint": MARK},
                    {"type": "input_text", "text": " Be brief."},
                ],
            ),
            id="client-placed-its-own",
        ),
        pytest.param(
            lambda base: openai.OpenAI(
                base_url=f"{base}/v1", api_key="sk-test", max_retries=0
            ).responses.create(model="gpt-5.6", instructions=RULES, input=PARSER),
            id="instructions-string",
        ),
    ],
)
def test_a_request_the_breakpoint_is_not_for_goes_as_sent(
    wire_server: WireServer, send: Any
) -> None:
    """GPT-5 caches implicitly only; a breakpoint the client placed is the client's; and
    `instructions` is a string no breakpoint can mark (moving it into a message would
    change what the model reads)."""
    captured = through_proxy(wire_server, send)
    direct, proxied = captured.bodies
    proxied.pop("prompt_cache_key")
    assert proxied == direct
