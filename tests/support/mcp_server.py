"""A real MCP server for the toolbox tests, written with the official `mcp` SDK.

    python -m tests.support.mcp_server [--reverse] [--http PORT] [--hostile FILE]

It serves over stdio (or streamable HTTP on PORT) a few tools: `add`, `echo`, `get_forecast`,
`fail` (reports a tool error) and `crash` (kills the server process mid-call, as a server
that dies mid-session). `--reverse` registers them in the opposite order, so its tool
listing comes out reversed, as a server may list tools in any order on reconnect.

`--hostile FILE` also lists the tools a JSON file describes exactly as written, as a hostile
or careless server would: each an object with `name`, `description`, `input_schema` and
optionally `output_schema` and `structured` (the structured content its calls return). Such a
tool answers every call with the text "ran" and does no checking of its own.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.types import CallToolResult, InputRequiredResult, TextContent, Tool


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


class HostileServer(MCPServer):
    """The test server plus tools listed verbatim from a file (see the module docstring)."""

    def __init__(self, raw: list[dict[str, Any]]) -> None:
        super().__init__("warmloop-test")
        self.raw = {tool["name"]: tool for tool in raw}

    async def list_tools(self) -> list[Tool]:
        listed = await super().list_tools()
        return listed + [
            Tool(
                name=name,
                description=tool["description"],
                input_schema=tool["input_schema"],
                output_schema=tool.get("output_schema"),
            )
            for name, tool in self.raw.items()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self.raw.get(name)
        if tool is None:
            return await super().call_tool(name, arguments, context)
        return CallToolResult(
            content=[TextContent(type="text", text="ran")],
            structured_content=tool.get("structured"),
        )


def main() -> None:
    raw: list[dict[str, Any]] = []
    if "--hostile" in sys.argv:
        raw = json.loads(Path(sys.argv[sys.argv.index("--hostile") + 1]).read_text("utf-8"))
    server = HostileServer(raw)
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
