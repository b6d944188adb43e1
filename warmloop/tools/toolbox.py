"""A toolbox with a catalog: core tools in the tool block, everything else found with
`search_tools`, taught once by an announcement and called through `call_tool` (or from
`run_code`), so the tool block stays byte-identical for the whole session.

`Toolbox` holds the tools; `Disclosure` is one conversation's view of it for one step,
built from that conversation's transcript (what it has been taught), so an agent shared by
many conversations, a resumed session and a follow-up each see exactly what their own
transcript taught them. With `native=True` the catalog is sent instead as the provider's
deferred tools (Anthropic tool search, OpenAI Responses tool search), which the provider
discloses itself; the gateway and announcements are then not used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from warmloop.errors import CodeFailed, ConfigurationError, ToolFailed
from warmloop.messages import Notice, ToolCall
from warmloop.tools.announce import Taught, announcement, untagged
from warmloop.tools.catalog import Catalog, Entry, RemoteTool, call_entry, failure_text, validated
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
    not_listed,
    search_answer,
)
from warmloop.tools.invoke import DEFAULT_TOOL_TIMEOUT, stringify
from warmloop.tools.schema import ToolSpec
from warmloop.tools.tool import (
    OWN_CAP,
    Cap,
    Execution,
    Tool,
    ToolFunction,
    describe_invalid,
    parse_arguments,
)
from warmloop.tools.tool import Toolbox as BaseToolbox
from warmloop.transcript import Transcript

if TYPE_CHECKING:
    from warmloop.tools.mcp import McpServer


class Toolbox(BaseToolbox):
    """Core tools (always in the tool block) plus a searchable catalog.

    `catalog`: tools disclosed on demand (`Tool`s, functions, or `RemoteTool`s);
    `servers`: MCP servers whose tools join the catalog (see `warmloop.tools.mcp`);
    `code`: a `CodeMode` (or True for the default limits) adds `run_code`;
    `native`: send the catalog as provider-native deferred tools instead of the gateway.
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
        super().__init__(core, max_result_chars=max_result_chars, timeout=timeout)
        clash = sorted(set(self.names) & RESERVED)
        if clash:
            raise ConfigurationError(f"tool names {clash} are the toolbox's own; rename them")
        self.catalog = Catalog(
            (
                item if isinstance(item, Tool | RemoteTool) else Tool.from_function(item)
                for item in catalog
            ),
            reserved=frozenset(self.names) | RESERVED | {SUBMIT},
        )
        self.code = CodeMode() if code is True else (code or None)
        self.native = native
        self.servers = list(servers)
        # A server tool that clashes (`submit` included) or has an unusable schema is
        # skipped, with a warning.
        for server in self.servers:
            server.join(self.catalog)
        self.taught = Taught()

    @property
    def gateway(self) -> bool:
        """Whether the catalog is disclosed through search_tools and call_tool."""
        return not self.native and bool(len(self.catalog) or self.servers)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The tool block: the same bytes for the whole session whatever is discovered."""
        block = list(super().specs())
        if self.gateway:
            block += [SEARCH_SPEC, GATEWAY_SPEC]
        elif self.native:
            block += [replace(s, defer_loading=True) for s in self.catalog.specs()]
        if self.code is not None:
            block.append(CODE_SPEC)
        return tuple(block)

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or any(s.name == name for s in self.specs())

    def conversation(
        self, transcript: Transcript, *, max_result_chars: Cap = OWN_CAP
    ) -> Disclosure:
        """This conversation's view for one step, results capped at `max_result_chars`
        (default: the toolbox's own; see `Disclosure`)."""
        return Disclosure(self, transcript, self._cap(max_result_chars))

    def close(self) -> None:
        """Stop every MCP server this toolbox started."""
        for server in self.servers:
            server.close()


class Disclosure:
    """One conversation's view of a toolbox for one step: runs its calls, and afterwards
    hands over the announcement of the tools this step discovered (once per tool)."""

    def __init__(self, box: Toolbox, transcript: Transcript, cap: int | None = None) -> None:
        self.box = box
        self.cap = cap
        self.known = set(box.taught(transcript))
        self.found: list[str] = []

    @property
    def discovered(self) -> set[str]:
        return self.known | set(self.found)

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
            return self._error(call, not_listed(call.name, call.name in self.discovered))
        return await BaseToolbox.run(box, call, max_result_chars=self.cap)

    def _error(self, call: ToolCall, text: str) -> Execution:
        return Execution(self.box.error(call, text, self.cap))

    def _shown(self, call: ToolCall, text: str) -> Execution:
        return self.box._result(call, text, is_error=False, cap=self.cap)

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
        self.found += [e.name for e in matches if e.name not in discovered]
        return self._shown(call, search_answer(query, [e.spec for e in matches], discovered))

    async def _gateway(self, call: ToolCall) -> Execution:
        args = self._arguments(call, GATEWAY_ARGS)
        if isinstance(args, Execution):
            return args
        name: str = getattr(args, "name")  # noqa: B009
        arguments: dict[str, Any] = getattr(args, "arguments")  # noqa: B009
        if name in self.box.names:  # a core tool through the gateway: allowed, same rules
            inner = ToolCall(call.id, name, stringify(arguments))
            execution = await BaseToolbox.run(self.box, inner, max_result_chars=self.cap)
            return replace(execution, result=replace(execution.result, name=call.name))
        if name not in self.box.catalog:
            return self._error(call, f"No tool is named {name!r}. Find tools with {SEARCH} first.")
        if name not in self.discovered:
            return self._error(call, not_listed(name, False))
        return await self._catalog_call(call, name, arguments)

    async def _catalog_call(self, call: ToolCall, name: str, arguments: Any) -> Execution:
        entry = self.box.catalog.get(name)
        assert entry is not None
        if not isinstance(arguments, dict):
            return self._error(call, f"Invalid arguments for {name}: {arguments}")
        try:
            kwargs = validated(entry, arguments)
        except ValueError as exc:
            expected = untagged(entry.spec.compact())
            text = f"Invalid arguments for {name}:\n{exc}\nExpected: {expected}"
            return self._error(call, text)
        except ToolFailed as exc:  # its schema cannot check them (see remote_schema)
            return self._error(call, f"{name} cannot be called: {exc}")
        outcome = await call_entry(entry, kwargs, self.box.timeout)
        if outcome.timed_out:
            timed = self.box._timed_out(call, self.box.timeout, outcome.left_running, self.cap)
            text = failure_text(name, outcome)
            return replace(timed, result=replace(timed.result, content=text))
        if outcome.error is not None:
            return self._error(call, failure_text(name, outcome))
        try:
            text = stringify(outcome.value)
        except Exception as exc:
            return self._error(call, f"{name} returned a value that cannot be shown: {exc}")
        return self._shown(call, text)

    def functions(self) -> dict[str, HostFunction]:
        """The tools code can call: core tools and discovered catalog tools."""
        entries: list[Entry] = [t for n in self.box.names if (t := self.box.get(n))]
        # Natively the provider discloses the catalog: the toolbox cannot see what it taught.
        names = self.box.catalog.names() if self.box.native else sorted(self.discovered)
        entries += [e for n in names if (e := self.box.catalog.get(n))]
        return {entry.name: host_function(entry, self.box.timeout) for entry in entries}

    async def _code(self, call: ToolCall) -> Execution:
        args = self._arguments(call, CODE_ARGS)
        if isinstance(args, Execution):
            return args
        assert self.box.code is not None
        try:
            text = await self.box.code.run(getattr(args, "code"), self.functions())  # noqa: B009
        except CodeFailed as exc:
            return self._error(call, f"{RUN_CODE} failed:\n{exc}")
        return self._shown(call, text)
