"""Request logs: the JSONL the recorder writes, and the logs people already have.

One line is one request. The recorder writes objects with `at` (epoch seconds), `path`,
`status`, `body` (the request body as sent), `usage` (the provider's usage object from the
response, as it was), `diagnostics` (the provider's cache diagnostics when present:
Anthropic's `diagnostics`, OpenAI's `prompt_cache_diagnostics`) and `response_id`; a line may add
`answered_at` (epoch seconds, when the answer came: a later request sent before it finds
a write not yet landed).
`read_log` also takes lines that are a raw request body, optionally with `usage` and a
timestamp beside the body's own keys, and wrappers that keep the body under `request` or
`payload`. A line that is not JSON (a half-written last line) is reported, never fatal.

`LogWriter` appends one line per `write` call in a single `os.write` on an `O_APPEND`
descriptor and never truncates: when the file does not end in a newline (a writer died
mid-line, or it is someone else's file), its first line starts on a new one, so no record is
glued to what was there and nothing that was there is lost.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from warmloop.errors import ConfigurationError
from warmloop.providers.registry import wire_formats
from warmloop.regular import open_regular

BODY_KEYS = ("body", "request", "payload", "request_body")
TIME_KEYS = ("at", "timestamp", "ts", "time", "created_at")


def conversation_keys() -> frozenset[str]:
    """The body keys that hold a conversation in any registered wire format (`messages`,
    `input`, `contents`, and a third party's)."""
    return frozenset((fmt.logged_layout or fmt.layout).conversation[0] for fmt in wire_formats())


RECORD_KEYS = frozenset(
    {"usage", "diagnostics", "prompt_cache_diagnostics", "response_id", "answered_at"}
)
"""Keys beside a raw body that are the recorder's (or the response's), never a request's."""
BODY_FACTS = ("model", "diagnostics", "prompt_cache_options", "prompt_cache_retention")
"""What the audit reads of a body once its canonical stream is taken: the model, and the
earlier response it asked the provider to compare with, and the retention it asked for."""
MILLISECONDS = 1e11
"""Epoch numbers above this are milliseconds (1e11 seconds is the year 5138)."""
EARLIEST, LATEST = -62_135_596_800.0, 253_402_300_799.0
"""The first second of the year 1 and the last of 9999: a time outside is damage, read as
none."""


@dataclass(frozen=True)
class LoggedRequest:
    """One logged request: its body and what is known about it (line numbers from 1)."""

    line: int
    body: Mapping[str, object]
    at: float | None = None
    path: str = ""
    usage: Mapping[str, object] | None = None
    diagnostics: Mapping[str, object] | None = None
    status: int | None = None
    response_id: str | None = None
    """The id of the response (the recorder logs it), which a later request's diagnostics
    may name as the one it was compared with."""
    answered_at: float | None = None
    """When its answer came, where the log says (`answered_at`)."""


@dataclass(frozen=True)
class LogContents:
    """The requests of a log and, per skipped line, why it was skipped."""

    requests: tuple[LoggedRequest, ...]
    skipped: tuple[str, ...]


def slim(record: LoggedRequest) -> LoggedRequest:
    """`record` with only the `BODY_FACTS` of its body: a whole body (every message, every
    tool, any field a framework adds) is what made an audit's memory grow with the log."""
    return replace(
        record,
        body={k: record.body[k] for k in BODY_FACTS if k in record.body},
        usage=_interned_object(record.usage),
        diagnostics=_interned_object(record.diagnostics),
    )


def _interned_object(value: Mapping[str, object] | None) -> Mapping[str, object] | None:
    """A usage or diagnostics object with its keys interned (`_interned`)."""
    interned = _interned(value)
    return interned if isinstance(interned, Mapping) else None


def _interned(value: object) -> object:
    """`value` with every key one shared string: a decoded line's keys are its own copies,
    and every request's usage repeats the same few."""
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: _interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interned(v) for v in value]
    return value


def parse_time(value: object) -> float | None:
    """Epoch seconds from a number (seconds or milliseconds) or an ISO 8601 string; None
    for anything else, and for a time that is not finite or not within years 1 to 9999."""
    if isinstance(value, bool):
        return None
    seconds: float | None = None
    if isinstance(value, int | float):
        try:  # an integer of 400 digits is no float: a forged line, read as no time
            seconds = float(value) / 1000 if value > MILLISECONDS else float(value)
        except OverflowError:
            return None
    elif isinstance(value, str):
        try:
            seconds = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    if seconds is None or not EARLIEST <= seconds <= LATEST:
        return None  # NaN, Infinity (JSON as Python reads them) or outside years 1 to 9999
    return seconds


def _mapping(value: object) -> Mapping[str, object] | None:
    return value if isinstance(value, dict) else None


def parse_line(number: int, data: object) -> LoggedRequest | str:
    """A record from one decoded line, or why it is not one."""
    if not isinstance(data, dict):
        return f"line {number}: not a JSON object"
    keys = conversation_keys()
    body = next((data[k] for k in BODY_KEYS if isinstance(data.get(k), dict)), None)
    if body is None:
        if not keys & data.keys():
            return f"line {number}: no request body (messages, input or contents)"
        # A raw body: our metadata keys are no request parameter of any of the APIs.
        body = {k: v for k, v in data.items() if k not in {*RECORD_KEYS, *TIME_KEYS}}
    if not keys & body.keys():
        return f"line {number}: the body has no messages, input or contents"
    for key in sorted(keys & body.keys()):
        value = body[key]
        if key == "input" and isinstance(value, str):  # Responses' one-message shorthand
            body = {**body, "input": [{"role": "user", "content": value}]}
        elif not isinstance(value, list):
            return f"line {number}: {key!r} is not a list (it is {type(value).__name__})"
    response = _mapping(data.get("response")) or {}
    usage = (
        _mapping(data.get("usage"))
        or _mapping(response.get("usage"))
        or _mapping(response.get("usageMetadata"))
    )
    at = next((parse_time(data[k]) for k in TIME_KEYS if k in data), None)
    status = data.get("status")
    return LoggedRequest(
        line=number,
        body=body,
        at=at,
        answered_at=parse_time(data["answered_at"]) if "answered_at" in data else None,
        path=str(data.get("path") or ""),
        usage=usage,
        diagnostics=next(
            (
                found
                for where in (data, response)
                for key in ("diagnostics", "prompt_cache_diagnostics")
                if (found := _mapping(where.get(key)))
            ),
            None,
        ),
        status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        response_id=next(
            (
                found
                for found in (data.get("response_id"), response.get("id"))
                if isinstance(found, str)
            ),
            None,
        ),
    )


def read_log(path: Path) -> LogContents:
    """Every request of a JSONL log, in file order; unreadable lines are listed, not fatal."""
    requests: list[LoggedRequest] = []
    skipped: list[str] = []
    for found in iter_log(path):
        if isinstance(found, str):
            skipped.append(found)
        else:
            requests.append(found)
    return LogContents(tuple(requests), tuple(skipped))


def iter_log(path: Path) -> Iterator[LoggedRequest | str]:
    """The requests of a JSONL log one at a time, in file order, each unreadable line as
    the sentence saying why it was skipped: a log is never held whole, so a caller that
    keeps only what it needs of each request reads any size of log in bounded memory.
    The file is opened (and a bad path refused) on the first `next`."""
    try:  # a FIFO or a device is refused, not waited on
        fd = open_regular(path, os.O_RDONLY)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read {path} ({exc.strerror}); pass a JSONL file of requests"
        ) from exc
    handle = open(fd, encoding="utf-8", errors="replace")  # noqa: SIM115 (closed below)
    with handle:
        for number, line in _lines(handle):
            try:
                data = json.loads(line)
            except RecursionError:
                yield f"line {number}: nested too deeply to be a request"
                continue
            except ValueError:
                yield f"line {number}: not JSON (a half-written line?)"
                continue
            if deeper_than(data, MAX_DEPTH):
                yield f"line {number}: nested more than {MAX_DEPTH} levels deep"
                continue
            yield parse_line(number, data)


MAX_DEPTH = 100
"""Levels of nesting a logged line may have: request bodies nest a few dozen at most, and
everything that reads one (the canonical stream, the audit's blocks) walks it recursively."""


def deeper_than(value: object, limit: int) -> bool:
    """Whether `value` nests more than `limit` arrays and objects deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _lines(handle: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(handle, start=1):
        if line.strip():
            yield number, line


class LogWriter:
    """Appends one JSON line per record; safe across threads and against a crash mid-line,
    and never cuts what the file held."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:  # a FIFO would block `record` until a reader came, and a device is no log
            self._fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            raise ConfigurationError(
                f"cannot write the log {path} ({exc.strerror}); pass --out a regular file "
                "in a writable place"
            ) from exc
        self._new_line = _ends_mid_line(path, os.fstat(self._fd).st_size)

    def write(self, record: Mapping[str, object]) -> None:
        """Append `record` as one line (compact JSON, UTF-8)."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._new_line:  # the file ended mid-line: keep that line, start a new one
                data = b"\n" + data
                self._new_line = False
            view = memoryview(data)
            while view:  # a regular file takes it whole; loop for the rare short write
                view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def _ends_mid_line(path: Path, size: int) -> bool:
    """Whether the file holds bytes and the last is no newline."""
    if size == 0:
        return False
    try:
        with path.open("rb") as handle:
            handle.seek(size - 1)
            return handle.read(1) != b"\n"
    except OSError:
        return True  # unreadable: a blank line costs nothing, a record glued to a line would
