"""MCP through the official SDK: a real server (tests/support/mcp_server.py, written with the `mcp`
SDK) started over stdio and over streamable HTTP; its tools join the catalog name-sorted,
are found by search and called through the gateway; a server that fails to start or dies
mid-session gives a clear error and the session goes on without its tools; a reconnect
that lists the tools in another order produces byte-identical requests."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from warmloop import Agent, ScriptedModel, call
from warmloop.errors import MissingExtra
from warmloop.messages import Notice, ToolResult
from warmloop.tools.mcp import McpServer
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript

pytestmark = pytest.mark.slow  # real MCP server processes: the slow tier

SERVER = [sys.executable, "-m", "tests.support.mcp_server"]


def stdio_server(*flags: str) -> McpServer:
    return McpServer("test", command=SERVER[0], args=[*SERVER[1:], *flags], timeout=20)


@pytest.fixture
def server() -> Iterator[McpServer]:
    found = stdio_server()
    yield found
    found.close()


def results(transcript: Transcript) -> list[ToolResult]:
    return [m for m in transcript if isinstance(m, ToolResult)]


SCRIPT = [
    call("search_tools", query="weather forecast for a city", limit=2),
    call("call_tool", name="get_forecast", arguments={"city": "Oslo", "days": 2}),
    call("search_tools", query="add two integers", limit=1),
    call("call_tool", name="add", arguments={"a": 2, "b": "x"}),
    call("call_tool", name="add", arguments={"a": 2, "b": 40}),
    call("submit", answer="done"),
]


def test_a_stdio_servers_tools_join_the_catalog_sorted_and_run_through_the_gateway() -> None:
    server = stdio_server("--reverse")  # it lists get_forecast first, add last
    box = Toolbox(servers=[server])
    assert box.catalog.names() == ["add", "crash", "echo", "fail", "get_forecast"]
    assert [s.name for s in box.specs()] == ["search_tools", "call_tool"]
    run = Agent(ScriptedModel(SCRIPT), tools=box).run_sync("Forecast, then add.")
    found, forecast, _, invalid, added, _ = results(run.transcript)
    assert "get_forecast(city: string, days?: integer)" in found.content
    assert forecast.content == "Oslo: sunny for 2 day(s)"
    assert not forecast.is_error
    assert invalid.is_error
    assert "Invalid arguments for add" in invalid.content
    assert added.content == "42"
    server.close()
    taught = [t.name for m in run.transcript if isinstance(m, Notice) for t in m.tools]
    assert taught[0] == "get_forecast"
    assert "add" in taught


def test_a_server_that_dies_mid_session_is_a_clear_error_and_the_session_goes_on(
    server: McpServer,
) -> None:
    box = Toolbox(servers=[server])
    model = ScriptedModel(
        [
            call("search_tools", query="crash kill server add fail echo", limit=5),
            call("call_tool", name="echo", arguments={"text": "hi"}),
            call("call_tool", name="fail", arguments={"reason": "nope"}),
            call("call_tool", name="crash"),
            call("call_tool", name="echo", arguments={"text": "again"}),
            call("search_tools", query="echo"),
            call("submit", answer="survived"),
        ]
    )
    run = Agent(model, tools=box).run_sync("Use the server until it dies.")
    assert run.outputs.model_dump() == {"answer": "survived"}
    _, echoed, failed, crashed, after, search, _ = results(run.transcript)
    assert echoed.content == "hi"
    assert failed.is_error
    assert "fail failed:" in failed.content
    assert crashed.is_error
    assert "MCP server 'test' is not running" in crashed.content
    assert after.is_error
    assert "its tools are unavailable" in after.content
    assert search.is_error
    assert "No tool matches" in search.content
    assert server.problem


def test_a_server_that_fails_to_start_leaves_the_session_without_its_tools() -> None:
    broken = McpServer(
        "broken",
        command=sys.executable,
        args=["-c", "import sys; print('no config file', file=sys.stderr); sys.exit(2)"],
        timeout=10,
    )
    box = Toolbox(servers=[broken])
    assert len(box.catalog) == 0
    assert "could not be started" in broken.problem
    assert "no config file" in broken.problem
    model = ScriptedModel([call("search_tools", query="anything"), call("submit", answer="ok")])
    run = Agent(model, tools=box).run_sync("Go on.")
    assert run.outputs.model_dump() == {"answer": "ok"}


NATIVE_SCRIPT = [
    call("get_forecast", city="Oslo", days=2),
    call("add", a=2, b=40),
    call("submit", answer="done"),
]


@pytest.mark.parametrize("native", [False, True], ids=["gateway", "native"])
def test_a_reconnect_that_lists_tools_in_another_order_sends_identical_requests(
    server: McpServer, native: bool
) -> None:
    # Natively the whole catalog is in the tool block, so its order is on the wire.
    box = Toolbox(servers=[server], native=native)
    script = NATIVE_SCRIPT if native else SCRIPT
    before = ScriptedModel(script)
    Agent(before, tools=box).run_sync("Forecast, then add.")
    server.args.append("--reverse")  # the same server, now listing its tools reversed
    server.reconnect()
    assert not server.problem
    after = ScriptedModel(script)
    Agent(after, tools=box).run_sync("Forecast, then add.")
    sent = [json.dumps(r.payload) for r in before.requests]
    assert sent == [json.dumps(r.payload) for r in after.requests]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_streamable_http_server_joins_the_catalog_too() -> None:
    port = free_port()
    process = subprocess.Popen(
        [*SERVER, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:  # until the server listens or exits: never a count a loaded machine can run out
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, "the MCP server exited before it listened"
            time.sleep(0.05)
        remote = McpServer("web", url=f"http://127.0.0.1:{port}/mcp", timeout=20, prefix="web_")
        box = Toolbox(servers=[remote])
        assert box.catalog.names()[0] == "web_add"
        model = ScriptedModel(
            [
                call("search_tools", query="add two integers", limit=1),
                call("call_tool", name="web_add", arguments={"a": 1, "b": 2}),
                call("submit", answer="ok"),
            ]
        )
        run = Agent(model, tools=box).run_sync("Add over HTTP.")
        assert results(run.transcript)[1].content == "3"
        remote.close()
    finally:
        process.terminate()
        process.wait(10)


def test_a_server_tool_that_clashes_with_a_core_tool_is_skipped_with_a_warning(
    server: McpServer, caplog: pytest.LogCaptureFixture
) -> None:
    def add(a: int, b: int) -> int:
        """Our own add."""
        return a + b

    box = Toolbox([add], servers=[server])
    assert box.catalog.names() == ["crash", "echo", "fail", "get_forecast"]
    assert "tool 'add' skipped" in caplog.text


def test_a_server_without_the_mcp_sdk_is_refused_where_it_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not a 30 s wait ending in "did not answer": the missing extra, named at once."""
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MissingExtra, match=re.escape("pip install 'warmloop[mcp]'")) as caught:
        stdio_server()
    assert "did not answer" not in str(caught.value)
    assert caught.value.extra == "mcp"
