"""One Toolbox: `from warmloop import Toolbox` takes a plain list as well as core tools and a
catalog, no other class in the package has its name, and a run leaves it as it found it
(what a run learns and leaves running is that run's, not the toolbox's)."""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from warmloop import Agent, ScriptedModel, Toolbox, call, tool

PACKAGE = Path(__file__).resolve().parents[2] / "warmloop"


@tool
def read_file(path: str) -> str:
    """Read a text file of the project."""
    return f"contents of {path}"


@tool
def get_invoice(number: str) -> str:
    """Return an invoice by its number."""
    return f"invoice {number}: 120.00 EUR"


def test_the_toolbox_from_warmloop_takes_core_tools_and_a_catalog() -> None:
    box = Toolbox(core=[read_file], catalog=[get_invoice])
    assert [s.name for s in box.specs()] == ["read_file", "search_tools", "call_tool"]
    assert box.catalog.names() == ["get_invoice"]
    plain = Toolbox([read_file, get_invoice])
    assert [s.name for s in plain.specs()] == ["read_file", "get_invoice"]
    assert len(plain.catalog) == 0


def _toolboxes(path: Path) -> Iterator[str]:
    """Where `path` defines or imports a name `Toolbox`, one line per place."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name == "Toolbox":
            yield f"class Toolbox in {path.relative_to(PACKAGE.parent)}"
        if isinstance(node, ast.ImportFrom) and any(
            (alias.asname or alias.name) == "Toolbox" for alias in node.names
        ):
            yield f"import from {node.module}"
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "Toolbox" for t in targets):
                yield f"Toolbox assigned in {path.relative_to(PACKAGE.parent)}"


def test_the_package_has_exactly_one_class_named_toolbox() -> None:
    places = [place for path in sorted(PACKAGE.rglob("*.py")) for place in _toolboxes(path)]
    assert [p for p in places if not p.startswith("import")] == [
        "class Toolbox in warmloop/tools/toolbox.py"
    ]
    assert {p for p in places if p.startswith("import")} == {"import from warmloop.tools.toolbox"}
    assert Toolbox.__module__ == "warmloop.tools.toolbox"


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event hung tools wait on; set at the end (or by a safety timer) so no test hangs."""
    event = threading.Event()
    safety = threading.Timer(30, event.set)
    safety.daemon = True
    safety.start()
    yield event
    event.set()
    safety.cancel()


def hung_toolbox(release: threading.Event) -> Toolbox:
    """A core tool and a catalog tool that both outlive their time limit."""

    @tool(timeout=0.05)
    def hang() -> str:
        """Waits until released."""
        release.wait()
        return "released"

    @tool(timeout=0.05)
    def slow_report() -> str:
        """Builds the slow report, waiting until released."""
        release.wait()
        return "report"

    return Toolbox(core=[hang], catalog=[slow_report], timeout=0.05)


def state(value: object) -> object:
    """What `value` holds, as plain data: warmloop objects by their attributes, containers
    by their items, anything else by its repr."""
    if isinstance(value, list | tuple):
        return [state(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(repr(state(v)) for v in value)
    if isinstance(value, dict):
        return {repr(k): state(v) for k, v in value.items()}
    if type(value).__module__.startswith("warmloop.") and hasattr(value, "__dict__"):
        return {name: state(v) for name, v in vars(value).items()}
    return repr(value)


def test_a_run_leaves_its_toolbox_as_it_found_it(release: threading.Event) -> None:
    box = hung_toolbox(release)
    box.catalog.search("report", 1)  # the catalog's index is built once, on first use
    before = state(box)
    model = ScriptedModel(
        [
            call("search_tools", query="slow report"),
            call("call_tool", name="slow_report"),
            call("hang"),
            call("submit", answer="gave up waiting"),
        ]
    )
    run = Agent(model, box).run_sync("Get the slow report.")
    assert [(s.call.name, s.running) for s in run.stuck] == [
        ("call_tool", True),
        ("hang", True),
    ]
    assert box.stuck == ()
    assert state(box) == before


def test_each_run_reports_only_the_calls_it_left_running(release: threading.Event) -> None:
    model = ScriptedModel(
        [call("hang"), call("submit", answer="gave up"), call("submit", answer="done")]
    )
    agent = Agent(model, hung_toolbox(release))
    first = agent.run_sync("Try the hanging tool.")
    second = agent.run_sync("Now without it.")
    assert [s.call.name for s in first.stuck] == ["hang"]
    assert first.stuck[0].running  # still running while the second run ends
    assert second.stuck == []
