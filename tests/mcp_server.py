"""A real MCP server for the toolbox tests, written with the official `mcp` SDK.

    python -m tests.mcp_server [--reverse] [--http PORT]

It serves over stdio (or streamable HTTP on PORT) a few tools: `add`, `echo`, `get_forecast`,
`fail` (reports a tool error) and `crash` (kills the server process mid-call, as a server
that dies mid-session). `--reverse` registers them in the opposite order, so its tool
listing comes out reversed, as a server may list tools in any order on reconnect.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def echo(text: str) -> str:
    """Repeat the text back."""
    return text


def get_forecast(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city."""
    return f"{city}: sunny for {days} day(s)"


def fail(reason: str) -> str:
    """Always fail with the reason given."""
    raise ValueError(reason)


def crash() -> str:
    """Kill this server process at once (a server dying mid-session)."""
    os._exit(3)


def main() -> None:
    server = MCPServer("warmloop-test")
    tools: list[Callable[..., Any]] = [add, crash, echo, fail, get_forecast]
    for function in reversed(tools) if "--reverse" in sys.argv else tools:
        server.add_tool(function)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
