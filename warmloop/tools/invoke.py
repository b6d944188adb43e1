"""Running one tool function: time limits, workers that cannot be stopped, turning whatever
comes back into text a transcript can always hold, and the `Execution` that says what
happened on the way (a cut, a timeout, a worker left running).

Sync tools run in daemon threads, not asyncio's default executor: that executor's shutdown
waits for every thread at `asyncio.run` exit, so one hung tool would hang the program.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

from warmloop.errors import ConfigurationError, ModelRetry, ToolFailed, ToolRaised
from warmloop.messages import JsonData, JsonObject, ToolCall, ToolResult

logger = logging.getLogger(__name__)

DEFAULT_TOOL_TIMEOUT = 120.0
"""Seconds a tool may run: long enough for a build or a test run, short enough that a hung
tool costs minutes, not the session (Claude Code's shell tool uses the same default)."""
CANCEL_GRACE = 1.0
"""Seconds a timed-out async tool gets to finish its cancellation before it counts as stuck."""
MIN_RESULT_CHARS = 100
"""The smallest cap: room for the truncation notice and a little of the result."""
WINDOW_SHARE = 4
"""`default_result_cap` gives one result a quarter of the window (see there)."""


def default_result_cap(context_window_tokens: int) -> int:
    """The default `max_result_chars` for a model: a quarter of its window, in characters.

    Byte-level tokenizers (tiktoken, SentencePiece with byte fallback) spend at most one
    token per UTF-8 byte, so a capped result costs at most a quarter of the window for
    ASCII text such as code, JSON and logs (about a sixteenth at the usual ~4 characters a
    token), leaving room for instructions, the tool block and the rest of the conversation;
    even text made only of 4-byte characters cannot exceed the window.
    """
    if (
        isinstance(context_window_tokens, bool)
        or not isinstance(context_window_tokens, int)
        or context_window_tokens < MIN_RESULT_CHARS * WINDOW_SHARE
    ):
        raise ConfigurationError(
            f"the context window must be an int of at least {MIN_RESULT_CHARS * WINDOW_SHARE} "
            f"tokens, got {context_window_tokens!r}"
        )
    return context_window_tokens // WINDOW_SHARE


def check_result_cap(value: object) -> int | None:
    """A valid `max_result_chars` (None: no cap), or a ConfigurationError saying why not."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_RESULT_CHARS:
        raise ConfigurationError(
            f"max_result_chars must be None (no cap) or an int of at least {MIN_RESULT_CHARS}, "
            f"got {value!r}"
        )
    return value


def check_timeout(value: object, what: str) -> float | None:
    """A valid timeout in seconds (None and math.inf: no limit), or a ConfigurationError."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or value <= 0
    ):
        raise ConfigurationError(
            f"{what} timeout must be a positive number of seconds, got {value!r}"
        )
    return None if math.isinf(value) else float(value)


def encodable(text: str) -> str:
    """`text` as valid Unicode: split surrogate pairs joined, lone surrogates made U+FFFD.

    A lone surrogate (from `\\ud800` in JSON or an undecodable file name) cannot be encoded
    as UTF-8, so one in a transcript would make every later save fail.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def encodable_json(value: JsonData) -> JsonData:
    """A decoded JSON value with every string (keys too) made `encodable`."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, list):
        return [encodable_json(v) for v in value]
    if isinstance(value, dict):
        return encodable_object(value)
    return value


def encodable_object(value: Mapping[str, JsonData]) -> JsonObject:
    """A decoded JSON object with every string (keys too) made `encodable`."""
    return {encodable(k): encodable_json(v) for k, v in value.items()}


def stringify(value: object) -> str:
    """A tool's return value as the text the model sees; raises if it has none."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if value is None:
        return "(no output)"
    return json.dumps(value, ensure_ascii=False, default=str)


def describe_exception(exc: BaseException) -> str:
    """`Type: message`, even for an exception whose `__str__` itself raises."""
    message = message_of(exc)
    if message is None:
        return f"{type(exc).__name__} (its message cannot be shown)"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def message_of(exc: BaseException) -> str | None:
    """The exception's message; None when its `__str__` itself raises."""
    try:
        return str(exc)
    except Exception:
        return None


def failure_told(name: str, error: BaseException, *, to_model: bool) -> str:
    """What the model is told of `error`, raised by tool `name`: a `ModelRetry`'s own
    message, or a `ToolFailed` (a tool reporting it failed: a remote tool, a server);
    anything else only where the tool or agent sends errors to the model (`to_model`).
    Otherwise `ToolRaised`: the run ends, as a pydantic-ai user expects."""
    if isinstance(error, ModelRetry):
        return message_of(error) or f"{name} asks you to try again."
    if isinstance(error, ToolFailed):
        return f"{name} failed: {message_of(error)}"
    if to_model or not isinstance(error, Exception):  # a tool that cancelled itself is told
        return f"{name} failed: {describe_exception(error)}"
    raise ToolRaised(name, error) from error


def cap_text(text: str, limit: int | None) -> tuple[str, int | None]:
    """`text` cut to at most `limit` characters, notice included, and the length it had
    when it was cut (None when it fits)."""
    if limit is None or len(text) <= limit:
        return text, None
    total = len(text)
    kept = limit
    while True:  # the notice's own length depends on how many characters it reports
        notice = f"\n[truncated: showing {kept} of {total} characters; ask for a smaller part]"
        if kept + len(notice) <= limit or kept == 0:
            return text[:kept] + notice, total
        kept = max(0, limit - len(notice))


CUT_NOTICE = re.compile(
    r"\n\[truncated: showing (\d+) of (\d+) characters; ask for a smaller part\]\Z"
)


def cut_sizes(text: str) -> tuple[int, int] | None:
    """(characters kept, characters the result had) when `text` ends with `cap_text`'s
    notice; None for a result that was not cut."""
    found = CUT_NOTICE.search(text)
    return (int(found[1]), int(found[2])) if found else None


Worker = threading.Thread | asyncio.Task[object]
"""What runs a call: a sync tool's daemon thread, or an async tool's task."""


@dataclass(frozen=True)
class Execution:
    """One executed call: the result the model sees, and what happened on the way.

    `truncated_from` is the result's full length in characters when it was cut to
    `max_result_chars` (None: not cut); `timed_out` marks a call stopped by its time limit,
    and `stuck` one whose worker could not be stopped and is still running.
    """

    result: ToolResult
    truncated_from: int | None = None
    timed_out: bool = False
    stuck: bool = False


@dataclass(frozen=True)
class StuckCall:
    """A timed-out call whose worker (a thread, or a task that ignored cancellation) is
    still running; it holds whatever the tool holds until it returns."""

    call: ToolCall
    timeout: float
    since: float  # time.time() when it was given up on
    worker: Worker = field(repr=False)

    @property
    def running(self) -> bool:
        """Whether the worker is still running."""
        if isinstance(self.worker, threading.Thread):
            return self.worker.is_alive()
        return not self.worker.done()


def executed(call: ToolCall, text: str, *, is_error: bool, cap: int | None) -> Execution:
    """`text` as `call`'s result: made encodable, cut to `cap` characters (None: not cut)."""
    shown, cut_from = cap_text(encodable(text), cap)
    return Execution(ToolResult(call.id, call.name, shown, is_error), cut_from)


def timed_out(
    call: ToolCall,
    limit: float | None,
    worker: Worker | None,
    cap: int | None,
    stuck: list[StuckCall],
) -> Execution:
    """The error result of a call stopped by its time limit; a worker that is still running
    is logged and added to `stuck` (the caller's record of what it left running)."""
    seconds = f"{limit:g}" if limit is not None else "?"
    text = (
        f"{call.name} timed out after {seconds} s and was stopped. Try a smaller request "
        "or another way."
    )
    if worker is not None:
        stuck.append(StuckCall(call, limit or 0.0, time.time(), worker))
        logger.warning(
            "tool %r (call %s) is still running after its %s s timeout and cannot be "
            "stopped; it is reported in Run.stuck (Toolbox.stuck for a direct call)",
            call.name,
            call.id,
            seconds,
        )
        text = (
            f"{call.name} timed out after {seconds} s and is still running in the "
            "background; its result will not arrive. Try a smaller request or another way."
        )
    execution = executed(call, text, is_error=True, cap=cap)
    return Execution(execution.result, execution.truncated_from, True, worker is not None)


@dataclass(frozen=True)
class Outcome:
    """How one invocation ended: a value, an exception, or a timeout (maybe still running)."""

    value: object = None
    error: BaseException | None = None
    timed_out: bool = False
    left_running: Worker | None = None


@dataclass(frozen=True)
class _Raised:
    """A KeyboardInterrupt or SystemExit from a tool, carried out of the worker task so it
    is re-raised in the caller's task (where the loop can still save the transcript)."""

    exc: BaseException


async def invoke(
    function: Callable[..., object], kwargs: Mapping[str, object], limit: float | None, name: str
) -> Outcome:
    """Call `function(**kwargs)` within `limit` seconds (None: no limit): a sync function
    in a daemon thread, and an awaitable it returns is awaited within the same limit."""
    threads: list[threading.Thread] = []
    task = asyncio.ensure_future(_call(function, kwargs, name, threads))
    try:
        done, _ = await asyncio.wait({task}, timeout=limit)
        if not done:
            task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_GRACE)
    except asyncio.CancelledError:
        task.cancel()  # the run itself was cancelled: take the tool down with it
        raise
    if not done:
        alive = next((t for t in threads if t.is_alive()), None)
        return Outcome(timed_out=True, left_running=alive or (None if task.done() else task))
    if task.cancelled():
        return Outcome(error=asyncio.CancelledError("the tool cancelled itself"))
    error = task.exception()
    if error is not None:
        if not isinstance(error, Exception):
            raise error
        return Outcome(error=error)
    value = task.result()
    if isinstance(value, _Raised):
        raise value.exc
    return Outcome(value=value)


async def _call(
    function: Callable[..., object],
    kwargs: Mapping[str, object],
    name: str,
    threads: list[threading.Thread],
) -> object:
    try:
        if inspect.iscoroutinefunction(function):
            value = await function(**kwargs)
        else:
            value = await in_daemon_thread(function, kwargs, name, threads)
        if inspect.isawaitable(value):  # a sync wrapper that hands back a coroutine
            value = await value
        if inspect.isawaitable(value):
            raise TypeError("it returned an awaitable that resolved to another awaitable")
        return value
    except (KeyboardInterrupt, SystemExit) as exc:
        return _Raised(exc)


async def in_daemon_thread(
    function: Callable[..., object],
    kwargs: Mapping[str, object],
    name: str,
    threads: list[threading.Thread],
) -> object:
    """Run `function(**kwargs)` in a new daemon thread (with the caller's context vars)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: object, error: BaseException | None) -> None:
        if future.done():  # timed out and cancelled meanwhile: nobody wants the value
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def work() -> None:
        value: object = None
        error: BaseException | None = None
        try:
            value = context.run(function, **kwargs)
        except StopIteration as exc:  # a Future refuses StopIteration: the run would hang
            error = RuntimeError(f"the tool raised StopIteration({exc})")
        except BaseException as exc:
            error = exc
        # RuntimeError: the event loop is closed, the run is over and nobody waits any more
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, value, error)

    thread = threading.Thread(target=work, name=f"warmloop-tool-{name}", daemon=True)
    threads.append(thread)
    thread.start()
    return await future
