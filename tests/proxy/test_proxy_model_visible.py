"""Must-show 3, first half: the proxy never changes what the model sees. Per wire format,
streamed and not, one request goes through its official SDK straight to the loopback
server, and the same request through `warmloop proxy` (every fix on) to it: the bodies the
server received are equal, in order and bytes of every value, once the cache markers and
routing key the proxy may add are set aside; and the proxy did add what its fixes promise."""

from __future__ import annotations

import json

import pytest

from tests.support.proxy_wire import WIRES, Captured, model_visible, send
from tests.support.wire_servers import WireServer
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy

ALL_ON = Fixes(breakpoints=True, cache_key=True, session_header="X-Session-ID")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("wire", WIRES)
def test_the_model_sees_what_the_client_sent(
    wire_server: WireServer, wire: str, stream: bool
) -> None:
    upstream = Captured()
    wire_server.serve(upstream)
    send(wire, wire_server.url, stream=stream)
    with Proxy(wire_server.url, None, fixes=ALL_ON, guard=True).start() as proxy:
        send(wire, proxy.url, stream=stream)
    (_, _, direct), (_, headers, proxied) = upstream.seen
    blocks = wire == "anthropic"
    seen = json.dumps(model_visible(proxied, blocks=blocks), ensure_ascii=False)
    sent = json.dumps(model_visible(direct, blocks=blocks), ensure_ascii=False)
    assert seen == sent
    assert headers["x-session-id"].startswith("wl-")
    if blocks:  # warmloop's placement: tools, system, the turn before the answer, the newest
        marked = json.dumps(proxied).count('"cache_control"')
        assert marked == 4
    # a loopback upstream is no provider's own host: no routing field it never documented
    assert "prompt_cache_key" not in proxied
