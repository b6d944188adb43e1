"""The `/untouched` route (issue 46): a client pointed at it sends its requests exactly as
it wrote them, through the official SDK to the loopback server: the same body bytes and
`Accept-Encoding` it sent, no marker, key or header added, filed in no conversation, the
path without the route's prefix."""

from __future__ import annotations

from typing import Any

import anthropic

from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import UNTOUCHED, Proxy


def test_a_request_on_the_untouched_route_goes_as_the_client_wrote_it(
    wire_server: WireServer,
) -> None:
    captured = Captured()
    wire_server.serve(captured)
    fixes = Fixes(session_header="X-Session-ID")
    request: Any = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": "Fix the parser."}],
    }
    headers = {"Accept-Encoding": "gzip, br"}
    with Proxy(wire_server.url, None, fixes=fixes, guard=True).start() as proxy:
        for base in (f"{proxy.url}{UNTOUCHED}", proxy.url):
            client = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
            client.messages.create(**request, extra_headers=headers)
        page = proxy.status()
    (untouched_path, untouched, untouched_body), (_, fixed, fixed_body) = captured.seen
    assert untouched_path == "/v1/messages"
    assert untouched_body == request
    assert "x-session-id" not in untouched
    assert untouched["accept-encoding"] == "gzip, br"
    assert fixed_body != request  # the same request off the route gets its markers
    assert "x-session-id" in fixed
    assert fixed["accept-encoding"] == "gzip"
    assert page["requests"] == 1
