"""A tiny MCP server over stdio, written with the official `mcp` SDK; `mcp_tools.py` starts
it. Any MCP server works the same way (`McpServer("name", command=...)`)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")


@server.tool()
def get_forecast(city: str, days: int = 1) -> str:
    """Get the weather forecast for a city."""
    return f"{city}: sunny for {days} day(s)"


if __name__ == "__main__":
    server.run("stdio")
