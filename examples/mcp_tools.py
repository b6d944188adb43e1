"""MCP: a server's tools join the toolbox's catalog (needs `pip install 'warmloop[mcp]'`).
This starts `mcp_weather_server.py`, beside this file, over stdio."""

import sys
from pathlib import Path

from warmloop import Agent, McpServer, ScriptedModel, Toolbox, call
from warmloop.errors import MissingExtra

script = Path(__file__).with_name("mcp_weather_server.py")
try:
    server = McpServer("weather", command=sys.executable, args=[str(script)])
except MissingExtra as exc:  # without the extra: said, not a time-out
    print("skipped:", exc)
    sys.exit(0)
box = Toolbox(servers=[server])
print("catalog:", box.catalog.names())

model = ScriptedModel(
    [
        call("search_tools", query="weather forecast"),
        call("call_tool", name="get_forecast", arguments={"city": "Oslo", "days": 2}),
        call("submit", answer="Sunny for two days."),
    ]
)
run = Agent(model, tools=box).run_sync("What is the weather in Oslo?")
for step in run.trajectory:
    print(f"{step.tool}: {step.observation.splitlines()[0]}")
print("answer:", run.outputs.answer)
server.close()
