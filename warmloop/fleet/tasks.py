"""A fleet task and its result as plain JSON values (what DBOS stores as a workflow's input
and output), and a batch read from a JSONL file, one task a line.

A line is `{"agent": NAME, "task": TEXT}` or `{"agent": NAME, "inputs": {...}}`, with an
optional `"session"` (the stored session to create or continue), `"conversation_id"` (the
provider's routing key) and `"id"` (the task's name in the batch, for reading results).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from warmloop.agent.task import check_input
from warmloop.errors import ConfigurationError
from warmloop.messages import JsonObject, validate_id
from warmloop.regular import NOT_REGULAR, open_regular

KEYS = frozenset({"agent", "task", "inputs", "session", "conversation_id", "id"})
MAX_BATCH_BYTES = 256 * 2**20
"""The largest batch file `load_batch` reads (a million tasks of 256 bytes)."""
Status = Literal["done", "failed"]


class TaskJson(TypedDict):
    """A task as DBOS stores it (a workflow's input): `task` or `inputs`, never both."""

    agent: str
    task: NotRequired[str]
    inputs: NotRequired[dict[str, object]]
    session: NotRequired[str]
    conversation_id: NotRequired[str]
    id: NotRequired[str]


class TaskResultJson(TypedDict):
    """A task's result as DBOS stores it (a workflow's output)."""

    status: Status
    session: str
    outputs: JsonObject | None
    error: str
    requests: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost_usd: float | None
    worker: str


@dataclass(frozen=True)
class Task:
    """One agent task: the agent's name (a worker knows it), the task text or named inputs,
    and optionally the session it continues and the conversation's routing key."""

    agent: str
    task: str | dict[str, object]
    session: str | None = None
    conversation_id: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        validate_id(self.agent, "agent name")
        if isinstance(self.task, str):
            if not self.task.strip():
                raise ConfigurationError("the task is empty")
        elif not isinstance(self.task, dict) or not self.task:
            raise ConfigurationError(
                f"a task is a text or a non-empty object of named inputs, got {self.task!r}"
            )
        else:
            for name, value in self.task.items():
                check_input(name, value)
        for name, value in (
            ("session", self.session),
            ("conversation id", self.conversation_id),
            ("task id", self.id),
        ):
            if value is not None:
                validate_id(value, name)

    def to_json(self) -> TaskJson:
        data: TaskJson = {"agent": self.agent}
        if isinstance(self.task, str):
            data["task"] = self.task
        else:
            data["inputs"] = self.task
        if self.session is not None:
            data["session"] = self.session
        if self.conversation_id is not None:
            data["conversation_id"] = self.conversation_id
        if self.id is not None:
            data["id"] = self.id
        return data

    @classmethod
    def from_json(cls, data: object, where: str = "the task") -> Task:
        """A task from its JSON object; ConfigurationError naming `where` if it is wrong."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{where}: a task is a JSON object, got {data!r}")
        unknown = sorted(set(data) - KEYS)
        if unknown:
            raise ConfigurationError(f"{where}: unknown keys {unknown}; a task has {sorted(KEYS)}")
        if ("task" in data) == ("inputs" in data):
            raise ConfigurationError(f"{where}: give exactly one of 'task' (text) or 'inputs'")
        if "agent" not in data:
            raise ConfigurationError(f"{where}: 'agent' names the agent that runs the task")
        body = data["task"] if "task" in data else data["inputs"]
        if "task" in data and not isinstance(body, str):
            raise ConfigurationError(f"{where}: 'task' is a text; use 'inputs' for an object")
        if "inputs" in data and not isinstance(body, dict):
            raise ConfigurationError(f"{where}: 'inputs' is an object of named inputs")
        try:
            return cls(
                data["agent"],
                body,
                data.get("session"),
                data.get("conversation_id"),
                data.get("id"),
            )
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None


def not_json(constant: str) -> object:
    """`NaN`, `Infinity` and `-Infinity`, which Python's json reads and JSON has not."""
    raise json.JSONDecodeError(f"{constant} is not a JSON value", constant, 0)


def read_batch(lines: Iterable[str], source: str = "the batch") -> list[Task]:
    """The tasks of a JSONL batch (blank lines skipped); each error names its line."""
    tasks = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        try:
            data = json.loads(line, parse_constant=not_json)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{where}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise ConfigurationError(f"{where}: nested too deeply to be a task") from None
        except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
            raise ConfigurationError(f"{where}: not a task's JSON ({exc})") from None
        tasks.append(Task.from_json(data, where))
    if not tasks:
        raise ConfigurationError(f"{source} holds no task")
    ids = [t.id for t in tasks if t.id is not None]
    if len(ids) != len(set(ids)):
        raise ConfigurationError(f"{source}: task ids repeat; each 'id' names one task")
    return tasks


def load_batch(path: Path) -> list[Task]:
    """The tasks of the JSONL batch file at `path`, refusing (ConfigurationError) what no
    batch is: not a regular file (a FIFO would block, /dev/zero never ends), larger than
    MAX_BATCH_BYTES, or not UTF-8."""
    try:
        fd = open_regular(path, os.O_RDONLY)
    except OSError as exc:
        if exc.strerror == NOT_REGULAR:
            raise ConfigurationError(
                f"cannot read {path}: not a regular file; pass a JSONL file of tasks"
            ) from None
        raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None
    with open(fd, "rb") as handle:
        data = handle.read(MAX_BATCH_BYTES + 1)
    if len(data) > MAX_BATCH_BYTES:
        raise ConfigurationError(
            f"{path} is larger than the {MAX_BATCH_BYTES // 2**20} MiB a batch file may have; "
            "split it into several batches"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigurationError(
            f"{path}, line {line}: not UTF-8 text (byte {exc.start})"
        ) from None
    return read_batch(text.split("\n"), str(path))  # not splitlines: JSON text may hold U+2028


@dataclass(frozen=True)
class TaskResult:
    """What a finished task left: its outputs or why it failed, and what its requests cost
    (all of them, those of a worker killed on the way included)."""

    status: Status
    session: str
    outputs: JsonObject | None = None
    error: str = ""
    requests: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    worker: str = ""

    def to_json(self) -> TaskResultJson:
        return {
            "status": self.status,
            "session": self.session,
            "outputs": self.outputs,
            "error": self.error,
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "worker": self.worker,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskResult:
        """The result a worker stored (`to_json`), read back as written: Any, since a stored
        row's fields are taken as the worker wrote them (a missing one is a KeyError the
        reader reports)."""
        return cls(
            data["status"],
            data["session"],
            data.get("outputs"),
            data.get("error", ""),
            data.get("requests", 0),
            data.get("input_tokens", 0),
            data.get("cached_tokens", 0),
            data.get("output_tokens", 0),
            data.get("cost_usd"),
            data.get("worker", ""),
        )
