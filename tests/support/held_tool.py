"""A tool that runs until the test releases it, and the keep-alives seen meanwhile: the pause
the keep-alive tests need, waited on by events, never by time."""

from __future__ import annotations

import asyncio

from warmloop import Tool, tool
from warmloop.maintenance.maintainer import MaintenanceEvent


class HeldTool:
    """`tool` (named `run_tests`) sets `started` when called and returns when `release` is
    set; `seen`, an `on_maintenance` hook, sets `pinged` on each keep-alive."""

    def __init__(self) -> None:
        self.started, self.release, self.pinged = asyncio.Event(), asyncio.Event(), asyncio.Event()

        @tool
        async def run_tests() -> str:
            """Run the test suite."""
            self.started.set()
            await self.release.wait()
            return "2 failed"

        self.tool: Tool = run_tests

    def seen(self, event: MaintenanceEvent) -> None:
        if event.kind == "keepalive":
            self.pinged.set()
