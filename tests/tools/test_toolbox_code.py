"""Code mode: run_code runs Python in the pydantic-monty sandbox with the tools as
functions; code that reads a file, opens a socket, loops forever or allocates without bound
is stopped with a clear tool error by its limit, every other failure is a tool error too,
and the loop goes on."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call, tool
from warmloop.errors import MissingExtra
from warmloop.messages import ToolResult
from warmloop.tools.code import CodeMode
from warmloop.tools.toolbox import Toolbox


class Profile(BaseModel):
    name: str
    age: int


LIMITS = CodeMode(time_limit=1.0, memory_limit=32 * 1024 * 1024)


@tool
def double(n: int) -> int:
    """Double a number."""
    return 2 * n


@tool
def broken(n: int) -> int:
    """Always fails."""
    raise RuntimeError(f"broken on {n}")


def run_code(code: str, mode: CodeMode = LIMITS) -> ToolResult:
    model = ScriptedModel([call("run_code", code=code), call("submit", answer="done")])
    run = Agent(model, tools=Toolbox([double, broken], code=mode)).run_sync("Run it.")
    assert run.outputs.model_dump() == {"answer": "done"}  # the loop went on
    result = run.transcript[3]
    assert isinstance(result, ToolResult)
    assert result.name == "run_code"
    return result


def test_code_calls_tools_as_functions_and_reports_prints_and_its_value() -> None:
    result = run_code("x = double(n=4)\nprint('x is', x)\n[x, double(5)]")
    assert not result.is_error
    assert result.content == "x is 8\n=> [8, 10]"


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("open('/etc/hostname').read()", "PermissionError"),
        ("from pathlib import Path\nPath('/etc/passwd').read_text()", "no files are reachable"),
        ("import socket\nsocket.create_connection(('127.0.0.1', 80))", "no network"),
        ("while True:\n    pass", "ran past its 1 s limit"),
        ("x = []\nwhile True:\n    x.append('a' * 100000)", "more than its 32 MiB of memory"),
        ("import time\ntime.sleep(30)", "TimeoutError"),
    ],
    ids=["read-file", "pathlib", "socket", "loop-forever", "allocate", "sleep"],
)
def test_escapes_and_runaway_code_are_stopped_with_a_clear_tool_error(code: str, says: str) -> None:
    result = run_code(code)
    assert result.is_error
    assert result.content.startswith("run_code failed:")
    assert says in result.content


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("def (", "SyntaxError"),
        ("1 / 0", "ZeroDivisionError"),
        ("broken(n=3)", "broken failed: RuntimeError: broken on 3"),
        ("double(n='many')", "invalid arguments for double"),
        ("undiscovered_tool(1)", "NameError"),
    ],
    ids=["syntax", "exception", "tool-error", "bad-arguments", "unknown-function"],
)
def test_every_failure_in_the_code_is_a_tool_error(code: str, says: str) -> None:
    result = run_code(code)
    assert result.is_error
    assert says in result.content


def test_a_granted_directory_is_readable_and_only_that(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello from the host")
    mode = CodeMode(time_limit=1.0, mounts={"/data": tmp_path})
    assert run_code("open('/data/notes.txt').read()", mode).content == '=> "hello from the host"'
    denied = run_code("open('/data/new.txt', 'w').write('x')", mode)
    assert denied.is_error
    assert not (tmp_path / "new.txt").exists()


@tool
def profile(name: str) -> Profile:
    """A user's profile."""
    return Profile(name=name, age=41)


def test_a_tool_returning_an_object_gives_the_code_its_text() -> None:
    model = ScriptedModel(
        [call("run_code", code="profile(name='ana')"), call("submit", answer="x")]
    )
    run = Agent(model, tools=Toolbox([profile], code=LIMITS)).run_sync("Run it.")
    result = run.transcript[3]
    assert isinstance(result, ToolResult)
    assert result.content == '=> "{\\"name\\":\\"ana\\",\\"age\\":41}"'


@pytest.mark.parametrize(
    "make",
    [lambda: CodeMode(), lambda: Toolbox([double], code=True)],
    ids=["CodeMode", "Toolbox(code=True)"],
)
def test_code_mode_without_pydantic_monty_is_refused_where_it_is_made(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[], object]
) -> None:
    """Refused for the user at construction, not told to the model at its first run_code."""
    monkeypatch.setitem(sys.modules, "pydantic_monty", None)
    with pytest.raises(MissingExtra, match=re.escape("pip install 'warmloop[code]'")):
        make()
