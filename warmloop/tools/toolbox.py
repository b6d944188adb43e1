"""The toolbox: the tools an agent can call, and one conversation's view of them.

A plain list is the simplest toolbox: `Toolbox([read_file, search])` puts every tool in the
tool block. A large one keeps a few core tools there and the rest in a catalog (Python
tools, MCP servers' tools) found with `search_tools`, taught once by an announcement and
called through `call_tool` (or from `run_code` in code mode), so the tool block stays
byte-identical for the whole session. With `native=True` the catalog is sent instead as the
provider's deferred tools (Anthropic tool search, OpenAI Responses tool search), which the
provider discloses itself; the gateway and announcements are then not used.

A toolbox holds configuration, never the state of a run: what a conversation has been
taught, what it discovers and the calls it left running live in that conversation's
`Disclosure` (`Toolbox.conversation`), read back from its own transcript. So one toolbox
serves many agents and runs at once, and a resumed session, a follow-up and a fresh process
each see exactly what their own transcript taught them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pydantic import BaseModel

from warmloop.errors import CodeFailed, ConfigurationError
from warmloop.messages import JsonData, JsonObject, Notice, ToolCall, ToolResult
from warmloop.tools.announce import Taught, announcement
from warmloop.tools.catalog import Catalog, RemoteTool, run_entry
from warmloop.tools.code import CodeMode, HostFunction, host_function
from warmloop.tools.gateway import (
    CODE_ARGS,
    CODE_SPEC,
    GATEWAY,
    GATEWAY_ARGS,
    GATEWAY_SPEC,
    RESERVED,
    RUN_CODE,
    SEARCH,
    SEARCH_ARGS,
    SEARCH_SPEC,
    SUBMIT,
    listed_in,
    not_listed,
    search_answer,
)
from warmloop.tools.invoke import (
    DEFAULT_TOOL_TIMEOUT,
    Execution,
    StuckCall,
    check_result_cap,
    check_timeout,
    describe_exception,
    executed,
    failure_told,
    invoke,
    stringify,
    timed_out,
)
from warmloop.tools.schema import ToolSpec
from warmloop.tools.tool import Tool, ToolFunction, describe_invalid, parse_arguments
from warmloop.transcript import Transcript

if TYPE_CHECKING:
    from warmloop.tools.mcp import McpServer


class _OwnCap:
    """The default of a per-call cap: the toolbox's own `max_result_chars`."""

    def __repr__(self) -> str:
        return "OWN_CAP"


OWN_CAP = _OwnCap()
Cap = int | None | _OwnCap


def _cap(box: Toolbox, cap: Cap) -> int | None:
    return box.max_result_chars if isinstance(cap, _OwnCap) else check_result_cap(cap)


class Toolbox:
    """The tools an agent can call: `core` tools, always in the tool block (a plain list
    of tools is the simplest toolbox), plus, for large sets, a catalog disclosed on demand.

    `catalog`: tools found with `search_tools` (`Tool`s, functions, or `RemoteTool`s);
    `servers`: MCP servers whose tools join the catalog (see `warmloop.tools.mcp`);
    `code`: a `CodeMode` (or True for the default limits) adds `run_code`;
    `native`: send the catalog as provider-native deferred tools instead of the gateway.
    `max_result_chars`: the cap on a result when the caller passes none (None, the default,
    never cuts; an int caps every result, errors and the notice included); an agent passes
    the smaller of it and its own per run. `timeout`: seconds any tool without its own may
    run (None: no limit).
    """

    def __init__(
        self,
        core: Iterable[Tool | ToolFunction] = (),
        catalog: Iterable[Tool | ToolFunction | RemoteTool] = (),
        *,
        servers: Sequence[McpServer] = (),
        code: CodeMode | bool = False,
        native: bool = False,
        max_result_chars: int | None = None,
        timeout: float | None = DEFAULT_TOOL_TIMEOUT,
    ) -> None:
        self.max_result_chars = max_result_chars
        self.timeout = check_timeout(timeout, "the toolbox")
        self._tools: dict[str, Tool] = {}
        self._stuck: list[StuckCall] = []
        self.catalog = Catalog(reserved=RESERVED | {SUBMIT})
        for item in core:
            if not isinstance(item, Tool) and not callable(item):
                raise ConfigurationError(f"tools must be functions or Tool objects, got {item!r}")
            self.add(item if isinstance(item, Tool) else Tool.from_function(item))
        for entry in catalog:
            self.catalog.add(
                entry if isinstance(entry, Tool | RemoteTool) else Tool.from_function(entry)
            )
        self.code = CodeMode() if code is True else (code or None)
        self.native = native
        self.servers = list(servers)
        # A server tool that clashes (`submit` included) or has an unusable schema is
        # skipped, with a warning.
        for server in self.servers:
            server.join(self.catalog)

    @property
    def max_result_chars(self) -> int | None:
        return self._max_result_chars

    @max_result_chars.setter
    def max_result_chars(self, value: int | None) -> None:
        self._max_result_chars = check_result_cap(value)

    def add(self, item: Tool) -> None:
        """Add a core tool; a name already in use, or one of the toolbox's own tools, is a
        configuration error."""
        if item.name in RESERVED:
            own = ", ".join(sorted(RESERVED))
            raise ConfigurationError(f"{item.name!r} is one of the toolbox's own tools ({own})")
        if item.name in self._tools:
            raise ConfigurationError(f"two tools are named {item.name!r}; names must be unique")
        self.catalog.reserve(item.name)
        self._tools[item.name] = item

    @property
    def names(self) -> list[str]:
        """The core tools' names, in the order they were added."""
        return list(self._tools)

    def get(self, name: str) -> Tool | None:
        """The core tool named `name`, if any."""
        return self._tools.get(name)

    @property
    def gateway(self) -> bool:
        """Whether the catalog is disclosed through search_tools and call_tool."""
        return not self.native and bool(len(self.catalog) or self.servers)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tool block: the same bytes for the whole session whatever is discovered."""
        block = [t.spec for t in self._tools.values()]
        if self.gateway:
            block += [SEARCH_SPEC, GATEWAY_SPEC]
        elif self.native:
            block += [replace(s, defer_loading=True) for s in self.catalog.specs()]
        if self.code is not None:
            block.append(CODE_SPEC)
        return tuple(block)

    def __contains__(self, name: object) -> bool:
        return name in self._tools or any(s.name == name for s in self.specs())

    def conversation(self) -> Disclosure:
        """A new conversation's view of this toolbox (an agent's run takes one); all it
        learns and leaves running is kept there, not here."""
        return Disclosure(self)

    @property
    def stuck(self) -> tuple[StuckCall, ...]:
        """Timed-out calls made on this toolbox directly (`run`, `execute`) whose worker is
        still running (finished ones drop out); a run reports its own in `Run.stuck`."""
        self._stuck = [s for s in self._stuck if s.running]
        return tuple(self._stuck)

    def error(self, call: ToolCall, message: str, cap: Cap = OWN_CAP) -> ToolResult:
        """An error result for `call`, made encodable and capped like every result."""
        return executed(call, message, is_error=True, cap=_cap(self, cap)).result

    def validate(self, call: ToolCall) -> tuple[Tool, BaseModel] | ToolResult:
        """The core tool and its validated arguments, or the error result to send back."""
        checked = self._check(call, self.max_result_chars)
        return checked.result if isinstance(checked, Execution) else checked

    def _check(self, call: ToolCall, cap: int | None) -> tuple[Tool, BaseModel] | Execution:
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(self._tools) or "(none)"
            text = f"Unknown tool {call.name!r}. Available tools: {known}."
            return executed(call, text, is_error=True, cap=cap)
        try:
            args = found.args_model.model_validate(parse_arguments(call.arguments))
        except Exception as exc:  # validators may raise anything; the model must hear why
            return executed(
                call,
                f"Invalid arguments for {call.name}:\n{describe_invalid(exc)}\n"
                f"Expected: {found.spec.compact()}",
                is_error=True,
                cap=cap,
            )
        return found, args

    async def execute(self, call: ToolCall) -> ToolResult:
        """Run one core tool's call: what the model did (bad arguments, an unknown tool) and
        a `ModelRetry` are the result; another exception the tool raises is `ToolRaised`
        unless the tool sends its errors to the model (see `run`)."""
        return (await self.run(call)).result

    async def run(
        self,
        call: ToolCall,
        *,
        max_result_chars: Cap = OWN_CAP,
        stuck: list[StuckCall] | None = None,
        errors_to_model: bool = False,
    ) -> Execution:
        """Run one core tool's call and say what happened: cut (at `max_result_chars`,
        default the toolbox's own), timed out, left running. A call left running is added
        to `stuck` (a conversation's own list; by default this toolbox's `stuck`). An
        exception the tool raises is its error result where it is a `ModelRetry` or the
        tool (else `errors_to_model`, the agent's) sends errors to the model; otherwise
        `ToolRaised` (`invoke.failure_told`)."""
        cap = _cap(self, max_result_chars)
        checked = self._check(call, cap)
        if isinstance(checked, Execution):
            return checked
        found, args = checked
        kwargs = {name: getattr(args, name) for name in type(args).model_fields}
        limit = self.timeout if found.timeout is None else found.timeout
        limit = None if limit is None or math.isinf(limit) else limit
        outcome = await invoke(found.function, found.keywords(kwargs), limit, call.name)
        if outcome.timed_out:
            left = self._stuck if stuck is None else stuck
            return timed_out(call, limit, outcome.left_running, cap, left)
        if outcome.error is not None:
            own = found.errors_to_model
            to_model = errors_to_model if own is None else own
            text = failure_told(call.name, outcome.error, to_model=to_model)
            return executed(call, text, is_error=True, cap=cap)
        try:
            text = stringify(outcome.value)
        except Exception as exc:  # tuple keys, cycles, a __str__ that raises, ...
            return executed(
                call,
                f"{call.name} returned a value that cannot be shown as text: "
                f"{describe_exception(exc)}",
                is_error=True,
                cap=cap,
            )
        return executed(call, text, is_error=False, cap=cap)

    def close(self) -> None:
        """Stop every MCP server this toolbox started."""
        for server in self.servers:
            server.close()


class Disclosure:
    """One conversation's view of a toolbox for the length of a run: what its transcript
    has taught, what each step discovers (announced once, after that step's results), and
    the calls it left running. Internal: a run takes one from `Toolbox.conversation` and
    begins each step with `step`."""

    def __init__(self, box: Toolbox) -> None:
        self.box = box
        self.cap = box.max_result_chars
        self.known: set[str] = set()
        self.found: list[str] = []
        self.listed: set[str] = set()
        self.left_running: list[StuckCall] = []
        self.errors_to_model = False
        """The agent's `tool_errors_to_model`, for tools that do not say (see `Tool`)."""
        self._taught = Taught()
        self._listed = Taught(listed_in)

    def step(
        self,
        transcript: Transcript,
        *,
        max_result_chars: Cap = OWN_CAP,
        errors_to_model: bool = False,
    ) -> Disclosure:
        """Begin a step over `transcript` as it is now (what it taught so far), results
        capped at `max_result_chars` (default: the toolbox's own), a tool's exception sent
        to the model where `errors_to_model` (unless the tool says); returns this view."""
        self.cap = _cap(self.box, max_result_chars)
        self.errors_to_model = errors_to_model
        self.known = set(self._taught(transcript))
        self.listed = set(self._listed(transcript))
        self.found = []
        return self

    @property
    def stuck(self) -> tuple[StuckCall, ...]:
        """Timed-out calls of this conversation whose worker is still running."""
        return tuple(s for s in self.left_running if s.running)

    @property
    def discovered(self) -> set[str]:
        """The catalog tools taught in full, or to be after this step."""
        return self.known | set(self.found)

    @property
    def callable(self) -> set[str]:
        """The catalog tools the model may call: those its searches listed (the best of each
        taught in full, the others by their signature) and those taught."""
        return self.discovered | self.listed

    def announcements(self) -> tuple[Notice, ...]:
        """The notice teaching what this step discovered (none if nothing new)."""
        if not self.found:
            return ()
        specs = [entry.spec for n in self.found if (entry := self.box.catalog.get(n))]
        self.known.update(self.found)
        self.found = []
        code = RUN_CODE if self.box.code is not None else ""
        return (announcement(specs, GATEWAY, code),)

    async def run(self, call: ToolCall) -> Execution:
        """Run one call; never raises for anything the tool or the model did."""
        box = self.box
        if box.gateway and call.name == SEARCH:
            return self._search(call)
        if box.gateway and call.name == GATEWAY:
            return await self._gateway(call)
        if box.code is not None and call.name == RUN_CODE:
            return await self._code(call)
        if call.name in box.catalog and call.name not in box.names:
            if box.native:  # the provider disclosed it: it is called by its own name
                try:
                    arguments = parse_arguments(call.arguments)
                except ValueError as exc:
                    return self._error(call, f"Invalid arguments for {call.name}: {exc}")
                return await self._catalog_call(call, call.name, arguments)
            return self._error(call, not_listed(call.name, call.name in self.callable))
        return await box.run(
            call,
            max_result_chars=self.cap,
            stuck=self.left_running,
            errors_to_model=self.errors_to_model,
        )

    def _error(self, call: ToolCall, text: str) -> Execution:
        return Execution(executed(call, text, is_error=True, cap=self.cap).result)

    def _arguments(self, call: ToolCall, model: type[BaseModel]) -> BaseModel | Execution:
        try:
            return model.model_validate(parse_arguments(call.arguments))
        except Exception as exc:
            return self._error(call, f"Invalid arguments for {call.name}:\n{describe_invalid(exc)}")

    def _search(self, call: ToolCall) -> Execution:
        args = self._arguments(call, SEARCH_ARGS)
        if isinstance(args, Execution):
            return args
        query, limit = getattr(args, "query"), getattr(args, "limit")  # noqa: B009
        matches = self.box.catalog.search(query, limit)
        if not matches:
            return self._error(call, f"No tool matches {query!r}. Try other words.")
        discovered = self.discovered
        # Only the best match is taught in full (if new): the rest stay a listing, so a
        # search adds one description to every later request, not `limit` of them.
        best = matches[0].name
        self.found += [] if best in discovered else [best]
        self.listed.update(e.name for e in matches)
        text = search_answer(query, [e.spec for e in matches], discovered)
        return executed(call, text, is_error=False, cap=self.cap)

    async def _gateway(self, call: ToolCall) -> Execution:
        args = self._arguments(call, GATEWAY_ARGS)
        if isinstance(args, Execution):
            return args
        name: str = getattr(args, "name")  # noqa: B009
        arguments: JsonObject = getattr(args, "arguments")  # noqa: B009
        if name in self.box.names:  # a core tool through the gateway: allowed, same rules
            inner = ToolCall(call.id, name, stringify(arguments))
            execution = await self.box.run(
                inner,
                max_result_chars=self.cap,
                stuck=self.left_running,
                errors_to_model=self.errors_to_model,
            )
            return replace(execution, result=replace(execution.result, name=call.name))
        if name not in self.box.catalog:
            return self._error(call, f"No tool is named {name!r}. Find tools with {SEARCH} first.")
        if name not in self.callable:
            return self._error(call, not_listed(name, False))
        return await self._catalog_call(call, name, arguments)

    async def _catalog_call(self, call: ToolCall, name: str, arguments: JsonData) -> Execution:
        entry = self.box.catalog.get(name)
        assert entry is not None
        timeout, cap = self.box.timeout, self.cap
        return await run_entry(
            call, entry, arguments, timeout, cap, self.left_running, self.errors_to_model
        )

    def functions(self) -> dict[str, HostFunction]:
        """The tools code can call: core tools and the catalog tools searches listed."""
        box = self.box
        entries: list[Tool | RemoteTool] = [t for n in box.names if (t := box.get(n))]
        # Natively the provider discloses the catalog: the toolbox cannot see what it taught.
        names = box.catalog.names() if box.native else sorted(self.callable)
        entries += [e for n in names if (e := box.catalog.get(n))]
        return {entry.name: host_function(entry, box.timeout) for entry in entries}

    async def _code(self, call: ToolCall) -> Execution:
        args = self._arguments(call, CODE_ARGS)
        if isinstance(args, Execution):
            return args
        assert self.box.code is not None
        try:
            text = await self.box.code.run(getattr(args, "code"), self.functions())  # noqa: B009
        except CodeFailed as exc:
            return self._error(call, f"{RUN_CODE} failed:\n{exc}")
        return executed(call, text, is_error=False, cap=self.cap)
