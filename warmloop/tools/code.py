"""Code mode: `run_code` runs model-written Python in the pydantic-monty sandbox, with the
toolbox's tools as functions.

Monty runs a subset of Python in worker subprocesses it can kill, with no filesystem, no
environment, no subprocesses and no network of its own: the only ways out are the tools it
is handed as functions and the directories it is granted (read-only mounts). Each
`run_code` call gets a fresh session (no state carried between calls: a resumed
conversation behaves as the unstopped one would) under a CPU-time limit, a heap limit and a
cap on sleeping, and the pool's watchdog kills a worker that stops answering. Every way the
code can fail (syntax, an exception, a tool's error, a limit, a dead worker) comes back as
text for a tool error; nothing escapes into the loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from warmloop.errors import CodeFailed, ConfigurationError, ToolFailed, require_extra
from warmloop.tools.catalog import Entry, call_entry, failure_text, validated
from warmloop.tools.invoke import describe_exception, stringify

DEFAULT_TIME_LIMIT = 10.0
DEFAULT_MEMORY_LIMIT = 64 * 1024 * 1024
WATCHDOG_GRACE = 5.0
"""Seconds past the time limit after which the pool kills a worker that stopped answering."""

HostFunction = Callable[..., Awaitable[object]]
"""A tool as the sandbox calls it: keyword (or positional) arguments, a value back; it
raises with a message the code (and then the model) sees."""
PLAIN = (str, int, float, bool, type(None), list, dict, tuple)
"""Values a tool's result keeps inside run_code."""


def host_function(entry: Entry, default_limit: float | None) -> HostFunction:
    """`entry` as code calls it: arguments by keyword or in schema order, checked against
    its schema, run within its time limit (or `default_limit`); plain data back as is."""
    order = list(entry.spec.parameters.get("properties", {}))

    async def call(*args: object, **kwargs: object) -> object:
        if len(args) > len(order):
            raise TypeError(f"{entry.name} takes at most {len(order)} arguments")
        kwargs.update(zip(order, args, strict=False))
        try:
            checked = validated(entry, kwargs)
        except ValueError as exc:
            raise TypeError(f"invalid arguments for {entry.name}: {exc}") from None
        except ToolFailed as exc:
            raise RuntimeError(f"{entry.name} cannot be called: {exc}") from None
        outcome = await call_entry(entry, checked, default_limit)
        if outcome.timed_out or outcome.error is not None:
            raise RuntimeError(failure_text(entry.name, outcome))
        value = outcome.value
        # Plain data crosses into the sandbox as is; anything else as the text the model
        # would have seen (a pydantic model, a dataclass, ...).
        return value if isinstance(value, PLAIN) else stringify(value)

    return call


@dataclass(frozen=True)
class CodeMode:
    """Limits for `run_code`: seconds of execution (time spent in tools not counted; each
    tool has its own limit), heap bytes, and host directories granted read-only, by the
    absolute path the code sees them at (`{"/data": Path("reports")}`). Without
    pydantic-monty it is refused here (MissingExtra), not when the model first calls it."""

    time_limit: float = DEFAULT_TIME_LIMIT
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    mounts: Mapping[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_extra("pydantic_monty", what="code mode", package="pydantic-monty", extra="code")
        if not (isinstance(self.time_limit, int | float) and 0 < self.time_limit < 3600):
            raise ConfigurationError(
                f"code mode time_limit must be 0 < seconds < 3600, got {self.time_limit!r}"
            )
        if not (isinstance(self.memory_limit, int) and self.memory_limit >= 1024 * 1024):
            raise ConfigurationError(
                f"code mode memory_limit must be at least 1 MiB, got {self.memory_limit!r}"
            )
        for virtual, host in self.mounts.items():
            if not str(virtual).startswith("/") or not Path(host).is_dir():
                raise ConfigurationError(
                    f"code mode mount {virtual!r} -> {host!s}: give an absolute sandbox path "
                    "and an existing host directory"
                )

    async def run(self, code: str, functions: Mapping[str, HostFunction]) -> str:
        """Run `code` with `functions`; its output and last value as text, or CodeFailed."""
        _require_monty()
        loop = asyncio.get_running_loop()

        def bridge(name: str, function: HostFunction) -> Callable[..., object]:
            def call(*args: object, **kwargs: object) -> object:
                async def once() -> object:
                    return await function(*args, **kwargs)

                return asyncio.run_coroutine_threadsafe(once(), loop).result()

            call.__name__ = name
            return call

        lookup = {name: bridge(name, f) for name, f in functions.items()}
        return await asyncio.to_thread(self._feed, code, lookup)

    def _feed(self, code: str, lookup: dict[str, Callable[..., object]]) -> str:
        import pydantic_monty as monty

        limits: monty.ResourceLimits = {
            "max_feed_duration_secs": self.time_limit,
            "max_memory": self.memory_limit,
            "max_total_sleep_secs": self.time_limit,
        }
        # No per-call cap (a capped sleep returns early, silently): the total is what counts.
        policy: monty.OSPolicy = {"sleep": "system", "sleep_system_max": float("inf")}
        output = monty.CollectString(max_bytes=1024 * 1024)
        mounts = [
            monty.MountDir(host_path=Path(host), virtual_path=virtual, mode="read-only")
            for virtual, host in sorted(self.mounts.items())
        ]
        try:
            with (
                monty.Monty(
                    min_processes=1,
                    max_processes=1,
                    request_timeout=self.time_limit + WATCHDOG_GRACE,
                ) as pool,
                pool.checkout(script_name="run_code.py", limits=limits, os_policy=policy) as box,
            ):
                value = box.feed_run(
                    code, external_lookup=lookup, print_callback=output, mount=mounts or None
                )
        except monty.MontySyntaxError as exc:
            raise CodeFailed(f"SyntaxError: {exc.display('msg')}") from None
        except monty.MontyCrashedError as exc:
            why = "it ran past its time limit" if exc.timed_out else str(exc)
            raise CodeFailed(f"the sandbox stopped the code ({why})") from None
        except monty.MontyRuntimeError as exc:
            raise CodeFailed(self._explain(exc.display(), output.output)) from None
        except monty.MontyError as exc:
            raise CodeFailed(describe_exception(exc)) from None
        finally:
            for mount in mounts:
                mount.close()
        return shown(output.output, value)

    def _explain(self, traceback: str, printed: str) -> str:
        last = traceback.strip().splitlines()[-1] if traceback.strip() else ""
        if last.startswith("TimeoutError"):
            traceback += f"\n(the code ran past its {self.time_limit:g} s limit and was stopped)"
        elif last.startswith("MemoryError"):
            limit = self.memory_limit / (1024 * 1024)
            traceback += f"\n(the code used more than its {limit:g} MiB of memory and was stopped)"
        elif last.startswith(("PermissionError", "FileNotFoundError")):
            traceback += "\n(no files are reachable from run_code unless a directory is granted)"
        elif last.startswith("ModuleNotFoundError"):
            traceback += "\n(only a few standard modules exist in the sandbox; no network)"
        return f"{printed}{traceback}" if printed else traceback


def shown(printed: str, value: object) -> str:
    """What a finished snippet reports: its printed output, then its last value if any."""
    parts = [printed.rstrip("\n")] if printed else []
    if value is not None:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = stringify(value)
        parts.append(f"=> {text}")
    return "\n".join(parts) if parts else "(no output)"


def _require_monty() -> None:
    """CodeFailed, saying how to install it, where pydantic-monty is missing."""
    try:
        import pydantic_monty  # noqa: F401
    except ImportError as exc:
        raise CodeFailed(
            "code mode needs pydantic-monty; install it with: pip install 'warmloop[code]'"
        ) from exc
