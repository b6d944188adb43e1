"""The live view of every wait (issue 32): in a terminal, a spinner with the elapsed
seconds while a model request or a tool call runs, cleared when it ends; nothing when
stderr is not a terminal, nor with --json. Waits are observed on events the test
controls, never timed."""

from __future__ import annotations

import asyncio
import io
import threading

from click.testing import CliRunner
from rich.console import Console

from tests.cli.test_cli import EXAMPLE, TASK, exploring_model
from warmloop.agent.agent import Agent
from warmloop.agent.result import Run
from warmloop.cli.main import main
from warmloop.cli.shared import CliContext
from warmloop.cli.waiting import REQUEST_LABEL, Waits
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.messages import Message
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.scripted import ScriptedModel, call


def terminal() -> tuple[Console, io.StringIO]:
    screen = io.StringIO()
    return Console(file=screen, force_terminal=True, width=100), screen


def ignore(message: Message) -> None:
    del message


def no_line(event: MaintenanceEvent) -> None:
    del event


class Gate:
    """An Event the code under test sets when it starts waiting, and one it waits on."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def hold(self) -> None:
        self.entered.set()
        self.release.wait()


def run_in_thread(agent: Agent) -> tuple[threading.Thread, list[Run]]:
    results: list[Run] = []
    thread = threading.Thread(target=lambda: results.append(agent.run_sync("Go.")))
    thread.start()
    return thread, results


def test_a_tool_call_shows_its_name_while_it_runs_and_is_cleared_after() -> None:
    gate = Gate()

    def fetch_report(name: str) -> str:
        """Fetch a report (blocks until the test releases it)."""
        gate.hold()
        return f"report {name}"

    console, screen = terminal()
    waits = Waits(console)
    model = ScriptedModel([call("fetch_report", name="q3"), call("submit", answer="done")])
    agent = Agent(model, [fetch_report], on_event=waits.events(ignore, no_line))
    thread, results = run_in_thread(agent)
    assert gate.entered.wait(60)
    try:
        assert "running fetch_report" in screen.getvalue()
        assert waits.live is not None
    finally:
        gate.release.set()
        thread.join()
    assert results
    assert results[0].outputs.model_dump() == {"answer": "done"}
    assert waits.live is None  # cleared when the wait ended


class HeldModel(ScriptedModel):
    """A scripted model whose first request waits until the test releases it."""

    def __init__(self, gate: Gate) -> None:
        super().__init__([call("submit", answer="done")])
        self.gate = gate

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        if not self.gate.entered.is_set():
            await asyncio.to_thread(self.gate.hold)
        return await super().send(rendered, session_id=session_id)


def test_a_model_request_shows_a_spinner_while_it_waits() -> None:
    gate = Gate()
    console, screen = terminal()
    waits = Waits(console)
    agent = Agent(HeldModel(gate), on_event=waits.events(ignore, no_line))
    thread, _ = run_in_thread(agent)
    assert gate.entered.wait(60)
    try:
        assert REQUEST_LABEL in screen.getvalue()
    finally:
        gate.release.set()
        thread.join()
    assert waits.live is None


def test_nothing_is_shown_when_not_a_terminal() -> None:
    screen = io.StringIO()
    waits = Waits(Console(file=screen))
    model = ScriptedModel([call("submit", answer="done")])
    Agent(model, on_event=waits.events(ignore, no_line)).run_sync("Go.")
    assert screen.getvalue() == ""


def cli(*args: str) -> tuple[int, str, str]:
    """Run the CLI with stderr taken for a terminal (FORCE_COLOR)."""
    scripted = exploring_model()
    obj = CliContext(model_factory=lambda spec: scripted)
    env = {"COLUMNS": "200", "FORCE_COLOR": "1"}
    result = CliRunner().invoke(main, list(args), obj=obj, env=env)
    return result.exit_code, result.stdout, result.stderr


def test_the_cli_shows_each_wait_on_stderr_in_a_terminal() -> None:
    code, _, stderr = cli("run", TASK, "--workspace", str(EXAMPLE))
    assert code == 0
    assert REQUEST_LABEL in stderr
    assert "running list_files" in stderr
    assert "running search" in stderr


def test_the_cli_shows_no_wait_with_json() -> None:
    code, stdout, stderr = cli("run", TASK, "--workspace", str(EXAMPLE), "--json")
    assert code == 0
    assert REQUEST_LABEL not in stderr + stdout
    assert "running list_files" not in stderr + stdout


def test_a_line_printed_during_a_wait_keeps_the_wait_shown() -> None:
    console, screen = terminal()
    waits = Waits(console)
    waits.start("running fetch_report")
    waits.quiet(lambda: console.print("maintenance: keep-alive"))
    live = waits.live
    assert live is not None
    assert live.is_started  # shown again below the line
    assert "maintenance: keep-alive" in screen.getvalue()
    waits.stop()
    assert not live.is_started
