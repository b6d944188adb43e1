"""Every way a run can end keeps its transcript: errors end as a RunError carrying it, and
Ctrl-C or cancellation closes the step in progress and re-raises with it attached."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from warmloop import (
    Agent,
    ConfigurationError,
    RequestFailed,
    RunAborted,
    RunError,
    ScriptedModel,
    Transcript,
    call,
    check_pairing,
    tool,
)
from warmloop.messages import AssistantTurn, Message, ToolResult
from warmloop.providers.base import Rendered
from warmloop.tools.invoke import Execution
from warmloop.tools.toolbox import Toolbox

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


@tool
def lookup(key: str) -> str:
    """Look up a key."""
    return f"value:{key}"


class Boom(Exception):
    """The injected fault."""


def replies() -> list[Any]:
    return [call("lookup", key="a"), call("lookup", key="b"), call("submit", answer="x")]


def failing_render(model: ScriptedModel) -> Agent:
    original = model.render

    def render(transcript: Transcript, tools: Any) -> Rendered:
        if model.requests:
            raise Boom("render")
        return original(transcript, tools)

    model.render = render  # type: ignore[method-assign]
    return Agent(model, [lookup])


def failing_send(model: ScriptedModel) -> Agent:
    def explode(rendered: Rendered) -> str:
        raise Boom("send")

    model._queue.insert(1, explode)
    return Agent(model, [lookup])


def failing_toolbox(model: ScriptedModel) -> Agent:
    agent = Agent(model, [lookup])

    async def run(self: Toolbox, call: Any, **limits: Any) -> Execution:
        raise Boom("tool")

    agent.toolbox.run = run.__get__(agent.toolbox)  # type: ignore[method-assign]
    return agent


def failing_callback(model: ScriptedModel) -> Agent:
    def on_message(message: Message) -> None:
        if isinstance(message, ToolResult):
            raise Boom("on_message")

    return Agent(model, [lookup], on_message=on_message)


@pytest.mark.parametrize(
    "inject",
    [failing_render, failing_send, failing_toolbox, failing_callback],
    ids=["render", "send", "tool", "on_message"],
)
def test_any_exception_ends_as_a_run_error_with_the_transcript(
    inject: Callable[[ScriptedModel], Agent],
) -> None:
    agent = inject(ScriptedModel(replies()))
    with pytest.raises(RunAborted) as info:
        agent.run_sync("task")
    error = info.value
    assert isinstance(error, RunError)
    assert isinstance(error.__cause__, Boom)
    assert f"unexpected Boom: {error.__cause__}" in str(error)
    messages = error.transcript.messages
    assert [m.kind for m in messages[:3]] == ["system", "user", "assistant"]
    check_pairing(messages)  # a step cut short is closed with error results
    assert error.transcript.pending_calls() == ()  # no call is left without its result


def test_a_warmloop_error_mid_run_is_told_as_itself_not_as_unexpected() -> None:
    """A WarmloopError already says what was wrong and what to do (a missing extra, a
    refused option): the run's end repeats it, never as "an unexpected ConfigurationError"."""
    model = ScriptedModel(replies())

    def refuse(rendered: Rendered) -> str:
        raise ConfigurationError("the engine needs X; install it with: pip install 'x'")

    model._queue.insert(1, refuse)
    with pytest.raises(RunAborted) as info:
        Agent(model, [lookup]).run_sync("task")
    assert str(info.value).startswith("the run stopped: the engine needs X; install it")
    assert "unexpected" not in str(info.value)
    assert isinstance(info.value.__cause__, ConfigurationError)


def test_a_provider_failure_still_ends_as_request_failed() -> None:
    with pytest.raises(RequestFailed, match="no reply left") as info:
        Agent(ScriptedModel([call("lookup", key="a")]), [lookup]).run_sync("task")
    # The record of the request that was answered comes with the failure.
    assert len(info.value.requests) == 1


def test_ctrl_c_in_a_tool_closes_the_step_and_reraises_with_the_transcript() -> None:
    @tool
    def slow(key: str) -> str:
        """A tool the user interrupts."""
        raise KeyboardInterrupt

    model = ScriptedModel([call("lookup", key="a"), call("slow", key="b")])
    with pytest.raises(KeyboardInterrupt) as info:
        Agent(model, [lookup, slow]).run_sync("task")
    transcript = info.value.transcript  # type: ignore[attr-defined]
    assert isinstance(transcript, Transcript)
    check_pairing(transcript.messages)
    last = transcript[-1]
    assert isinstance(last, ToolResult)
    assert last.is_error
    assert "interrupted" in last.content
    assert sum(isinstance(m, AssistantTurn) for m in transcript) == 2


async def test_a_cancelled_run_keeps_its_transcript_on_the_cancellation() -> None:
    started = asyncio.Event()

    @tool
    async def wait(key: str) -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.sleep(3600)
        return key

    model = ScriptedModel([call("wait", key="a")])
    task = asyncio.create_task(Agent(model, [wait]).run("task"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    transcript = info.value.transcript  # type: ignore[attr-defined]
    check_pairing(transcript.messages)
    assert "interrupted" in transcript[-1].content


HANG_GUARD = 900
"""Seconds after which the CLI counts as hung: a guard, never a speed check. Both waits were
60 s, which a CLI starting and shutting down on two cores shared with other work can
outlast (it took up to 24 s with four CPU hogs on its core); the server also gave up on the
held request after 60 s, so a slow client saw a dropped connection and retried instead of
being interrupted."""


class Hanging(BaseHTTPRequestHandler):
    """A Chat Completions server: a tool call first, then it never answers."""

    requests: ClassVar[list[dict[str, Any]]] = []
    second = threading.Event()
    release = threading.Event()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.startswith("/v1/chat/completions"):  # what discovery asks
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        type(self).requests.append(body)
        if len(type(self).requests) > 1:
            type(self).second.set()
            type(self).release.wait()  # until the test ends: the client must not outwait it
            return
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "list_files", "arguments": "{}"},
                }
            ],
        }
        reply = {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def hanging_server() -> Iterator[str]:
    Hanging.requests, Hanging.second, Hanging.release = [], threading.Event(), threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hanging)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        Hanging.release.set()
        server.shutdown()


def interruptible() -> None:
    """In the child before it starts: Ctrl-C back to its default. A test suite run as a
    background job (`nohup ... &`, a CI step) inherits SIGINT ignored, as POSIX shells start
    background commands; Python then installs no Ctrl-C handler, the CLI rightly ignores
    Ctrl-C as a background job should, and this test waited for an exit that never came."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow  # a real `warmloop run`, interrupted: the slow tier
@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_or_sigterm_during_warmloop_run_saves_a_loadable_transcript(
    hanging_server: str, tmp_path: Path, sent: signal.Signals, code: int, said: str
) -> None:
    saved = tmp_path / "run.json"
    saved.write_text("an older file that must be replaced whole")
    command = [
        str(Path(sys.executable).with_name("warmloop")),
        "run",
        "Which files are there?",
        "--model",
        f"openai-compatible:{hanging_server}",
        "--workspace",
        str(EXAMPLE),
        "--save",
        str(saved),
    ]
    env = {**os.environ, "OPENAI_COMPATIBLE_API_KEY": "", "COLUMNS": "120"}
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=interruptible,
    )
    try:
        assert Hanging.second.wait(HANG_GUARD), "the second request never arrived"
        process.send_signal(sent)
        stdout, stderr = process.communicate(timeout=HANG_GUARD)
    finally:
        process.kill()
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"{said}; transcript saved to {saved}" in stdout
    transcript = Transcript.load(saved.read_text(encoding="utf-8"))
    check_pairing(transcript.messages)
    assert [m.kind for m in transcript] == ["system", "user", "assistant", "tool_result"]
    assert len(Hanging.requests) == 2


def test_a_ctrl_c_delivered_to_another_thread_still_interrupts_the_run() -> None:
    # The kernel may hand a process's SIGINT to any thread; Python handles it in the main
    # thread, which was asleep in the selector and stayed there (the CLI test that hung
    # under load). The signal now wakes the loop from whichever thread receives it.
    script = Path(__file__).resolve().parents[1] / "support" / "thread_signal.py"
    root = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env={**os.environ, "PYTHONPATH": root},
        check=False,
    )
    assert result.stdout.strip() == "interrupted", result.stderr
