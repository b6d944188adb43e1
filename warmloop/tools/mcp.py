"""MCP servers whose tools join a toolbox's catalog, through the official `mcp` SDK (stdio
and streamable HTTP; `pip install 'warmloop[mcp]'`).

Each server's connection lives on one background event loop shared by all servers (an MCP
client session is bound to the task that opened it, while agents run each task on a loop of
their own), and every call is handed to it. Tools join the catalog under their names (made
identifiers, with an optional prefix), and the catalog keeps them sorted, so a reconnect
that lists them in another order changes nothing the model sees. A server that fails to
start, or dies mid-session, is reported (`problem`, a warning in the log, and a clear error
for each call to its tools) and the session goes on without its tools.

What a server lists is untrusted: a tool whose schema cannot be used, or whose name clashes
(`submit` included), is skipped with a warning, and arguments are checked by
`remote_schema` (linear-time patterns, bounded work, no remote `$ref` fetched). A result is
shown as it comes: the SDK's own check of structured results against the tool's output
schema is off, since it matches the server's patterns with Python's backtracking `re` on
this process's shared loop (one pattern could stall every agent) and ends the whole
connection when a result does not match.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import json
import logging
import re
import tempfile
import threading
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from typing import IO, TYPE_CHECKING, TypeAlias, TypeVar

from warmloop.errors import ConfigurationError, ToolFailed, require_extra
from warmloop.messages import JsonData
from warmloop.tools.catalog import Catalog, RemoteTool
from warmloop.tools.invoke import describe_exception
from warmloop.tools.schema import ToolSpec

if TYPE_CHECKING:  # the SDK is an extra: imported where a server is started
    from mcp.client import Transport
    from mcp.client.session import ClientSession
    from mcp.types import CallToolResult
    from mcp.types import Tool as McpTool

    _Call: TypeAlias = tuple[str, dict[str, object], asyncio.Future[CallToolResult]]
    """One queued call: the tool's name on the server, its arguments, where its result goes."""
    _Inbox: TypeAlias = asyncio.Queue[_Call | None]
    """The calls for a connection, in order; None asks it to close."""

T = TypeVar("T")

logger = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 30.0
_NOT_IDENTIFIER = re.compile(r"\W")


class _Hub:
    """The background event loop MCP connections live on (a daemon thread)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self.loop.run_forever, name="warmloop-mcp", daemon=True)
        thread.start()

    def submit(self, coroutine: Coroutine[object, object, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)


_hub: _Hub | None = None
_hub_lock = threading.Lock()
_open: set[McpServer] = set()


def hub() -> _Hub:
    """The shared background loop, started on first use."""
    global _hub
    with _hub_lock:
        if _hub is None:
            _hub = _Hub()
        return _hub


@atexit.register
def _close_all() -> None:
    for server in list(_open):
        server.close()


@functools.cache
def _session_class() -> type[ClientSession]:
    """The SDK's client session, with structured results taken as they come (see the
    module docstring for why their output schema is not checked)."""
    from mcp.client.session import ClientSession

    class Session(ClientSession):
        async def validate_tool_result(self, name: str, result: CallToolResult) -> None:
            return None

    return Session


class _StartFailed(Exception):
    """The server did not come up; the message says why."""


def tool_name(name: str, prefix: str) -> str:
    """An MCP tool's name in the catalog: the prefix, then the name with every character
    that cannot be in a Python identifier made `_` (code mode calls it as a function)."""
    cleaned = _NOT_IDENTIFIER.sub("_", prefix + name)
    return cleaned if cleaned.isidentifier() else "_" + cleaned


def result_value(result: CallToolResult) -> JsonData:
    """A CallToolResult as a value: its structured content, else its text; an error result
    raises ToolFailed with its text."""
    texts = []
    for block in result.content:
        text = getattr(block, "text", None)
        texts.append(text if isinstance(text, str) else f"[{block.type} content]")
    joined = "\n".join(texts)
    if result.is_error:
        raise ToolFailed(joined or "the server reported an error")
    structured = result.structured_content  # a JSON object or None (the SDK's model says)
    if isinstance(structured, dict) and not joined:
        return structured
    return joined


class McpServer:
    """One MCP server: `command` (+ `args`, `env`, `cwd`) runs it over stdio, `url` reaches
    it over streamable HTTP. `timeout` bounds starting it and each call, in seconds.
    Without the `mcp` SDK it is refused here (MissingExtra), not when it is started."""

    def __init__(
        self,
        name: str,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        url: str | None = None,
        prefix: str = "",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if (command is None) == (url is None):
            raise ConfigurationError(f"MCP server {name!r}: give either command= or url=")
        require_extra("mcp", what=f"MCP server {name!r}", package="the mcp SDK", extra="mcp")
        self.name = name
        self.command, self.args, self.env, self.cwd = command, list(args), env, cwd
        self.url, self.prefix, self.timeout = url, prefix, timeout
        self.problem = ""
        """Why this server's tools cannot run ("" while it is up)."""
        self.tools: list[str] = []
        self._catalog: Catalog | None = None
        self._inbox: _Inbox | None = None
        self._task: asyncio.Task[None] | None = None
        self._stderr: IO[str] | None = None

    def join(self, catalog: Catalog) -> None:
        """Start the server and add its tools to `catalog`; a failure is recorded, not raised."""
        self._catalog = catalog
        self._start()

    def reconnect(self) -> None:
        """Stop the server (if it runs), start it again and take its listing afresh."""
        self.close()
        self._start()

    def _start(self) -> None:
        assert self._catalog is not None
        try:
            listed = hub().submit(self._open()).result(self.timeout + 5)
        except Exception as exc:
            why = str(exc) if isinstance(exc, _StartFailed) else describe_exception(exc)
            self._fail(f"it could not be started ({why})")
            listed = []
        entries = []
        for tool in listed:
            spec = ToolSpec(
                tool_name(tool.name, self.prefix), tool.description or "", tool.input_schema
            )
            entries.append(self._remote(spec, tool.name))
        old, self.tools = self.tools, []
        self._catalog.replace(old, [])
        for entry in sorted(entries, key=lambda e: e.name):
            try:
                self._catalog.add(entry)
            except ConfigurationError as exc:
                logger.warning("MCP server %r: tool %r skipped: %s", self.name, entry.name, exc)
                continue
            self.tools.append(entry.name)

    def _remote(self, spec: ToolSpec, remote_name: str) -> RemoteTool:
        async def call(arguments: dict[str, object]) -> JsonData:
            if self.problem:
                raise ToolFailed(self.problem)
            future = hub().submit(self._request(remote_name, arguments))
            return result_value(await asyncio.wrap_future(future))

        return RemoteTool(spec, call, self.timeout + 5, lambda: self.problem)

    def _fail(self, why: str) -> None:
        self.problem = f"MCP server {self.name!r} is not running: {why}; its tools are unavailable"
        logger.warning("%s", self.problem)

    def _why(self, exc: BaseException, *, starting: bool) -> str:
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        text = describe_exception(exc)
        if starting and self._stderr is not None:  # later output is the server's own logging
            with contextlib.suppress(Exception):
                self._stderr.seek(0)
                lines = [line for line in self._stderr.read().splitlines() if line.strip()]
                if lines:
                    text += f"; its last error output: {lines[-1][:300]}"
        return text

    async def _open(self) -> list[McpTool]:
        """On the hub: start the connection task and wait for its tool listing."""
        self.problem = ""
        self._inbox = asyncio.Queue()
        ready: asyncio.Future[list[McpTool]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready, self._inbox))
        _open.add(self)
        try:
            return await asyncio.wait_for(asyncio.shield(ready), self.timeout)
        except TimeoutError:
            self._task.cancel()  # a server that never answered is not left half-started
            raise _StartFailed(f"it did not answer within {self.timeout:g} s") from None

    async def _serve(self, ready: asyncio.Future[list[McpTool]], inbox: _Inbox) -> None:
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, PaginatedRequestParams

        pending: _Call | None = None
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(_session_class()(read, write))
                await session.initialize()
                tools: list[McpTool] = []
                cursor: str | None = None
                while True:
                    params = PaginatedRequestParams(cursor=cursor) if cursor else None
                    page = await session.list_tools(params=params)
                    tools += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        break
                ready.set_result(tools)
                while (pending := await inbox.get()) is not None:
                    name, arguments, answer = pending
                    try:
                        result = await session.call_tool(name, arguments, self.timeout)
                    except MCPError as exc:
                        if exc.code == CONNECTION_CLOSED:
                            raise
                        answer.set_exception(ToolFailed(exc.error.message))  # server still up
                    else:
                        answer.set_result(result)
                    pending = None
        except BaseException as exc:
            why = self._why(exc, starting=not ready.done())
            if not ready.done():
                ready.set_exception(_StartFailed(why))
            else:
                self._fail(f"it stopped ({why})")
            if pending is not None and not pending[2].done():
                pending[2].set_exception(ToolFailed(self.problem))
            if isinstance(exc, asyncio.CancelledError):
                raise

    def _transport(self) -> Transport:
        if self.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(self.url)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        # Kept open while the server runs (its error output, quoted if it fails to start).
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        assert self.command is not None
        params = StdioServerParameters(
            command=self.command, args=self.args, env=dict(self.env or {}), cwd=self.cwd
        )
        return stdio_client(params, errlog=self._stderr)

    async def _request(self, name: str, arguments: dict[str, object]) -> CallToolResult:
        """On the hub: queue one call for the connection and wait for its answer."""
        if self._inbox is None or self._task is None or self._task.done():
            raise ToolFailed(self.problem or f"MCP server {self.name!r} is not connected")
        answer: asyncio.Future[CallToolResult] = asyncio.get_running_loop().create_future()
        await self._inbox.put((name, arguments, answer))
        return await answer

    def close(self) -> None:
        """Stop the connection (and a stdio server's process); its tools stay listed but
        cannot run until `reconnect`."""
        _open.discard(self)
        task, inbox = self._task, self._inbox
        self._task = self._inbox = None
        if task is not None and inbox is not None and not task.done():
            self._stop(task, inbox)
        if self._stderr is not None:
            with contextlib.suppress(Exception):
                self._stderr.close()
            self._stderr = None
        if not self.problem:
            self.problem = f"MCP server {self.name!r} was closed; its tools are unavailable"

    def _stop(self, task: asyncio.Task[None], inbox: _Inbox) -> None:
        """Ask the connection task to finish (closing the session and the process) and wait."""

        async def stop() -> None:
            await inbox.put(None)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(task, self.timeout)

        with contextlib.suppress(Exception):
            hub().submit(stop()).result(self.timeout + 5)

    def __repr__(self) -> str:
        where = self.url or " ".join([self.command or "", *self.args])
        return f"McpServer({self.name!r}, {json.dumps(where)})"
