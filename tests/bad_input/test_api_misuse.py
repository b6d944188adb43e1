"""Misuse of the API: duplicate tool names, `max_steps=0` and friends, tasks and histories of
the wrong type, unsafe ids, options that contradict each other, one agent run twice at
once, a history from another agent, a callback that raises. Each is a ConfigurationError
saying what to change (before any request), or works with every transcript intact."""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bad_input.harness import check_outcome, exercise, expect
from warmloop import (
    Agent,
    ConfigurationError,
    RunContext,
    ScriptedModel,
    Tool,
    Transcript,
    WarmloopError,
    call,
    resolve_model,
    tool,
)
from warmloop.cli.model_options import model_options
from warmloop.fleet.tasks import Task, read_batch
from warmloop.providers.local.model import LocalModel
from warmloop.providers.local.openings import OpeningCache
from warmloop.providers.openai.chat import OpenAICompatibleModel


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


def submit_only() -> ScriptedModel:
    return ScriptedModel([call("submit", answer="x")])


def agent(**options: Any) -> Callable[[], object]:
    return lambda: Agent(submit_only(), tools=options.pop("tools", [lookup]), **options)


def run(task: Any = "Go.", **options: Any) -> Callable[[], Awaitable[object]]:
    return lambda: Agent(submit_only(), tools=[lookup]).run(task, **options)


def submit_tool() -> str:
    """Pretends to submit."""
    return "x"


def undocumented(key: str) -> str:
    return key


def copy_of_lookup(key: str) -> str:
    """Another lookup.

    Args:
        key: The key.
    """
    return key


CASES: dict[str, tuple[Callable[[], object], str]] = {
    # Building an agent.
    "duplicate-tool-names": (
        agent(tools=[lookup, Tool.from_function(copy_of_lookup, name="lookup")]),
        "two tools are named 'lookup'",
    ),
    "tool-named-submit": (
        agent(tools=[Tool.from_function(submit_tool, name="submit")]),
        "reserved",
    ),
    "tool-not-callable": (agent(tools=[42]), "tools must be functions or Tool objects"),
    "tool-without-docstring": (agent(tools=[undocumented]), "needs a docstring"),
    "tool-timeout-zero": (lambda: tool(timeout=0), "positive number of seconds"),
    "max-steps-zero": (agent(max_steps=0), "max_steps must be an integer >= 1"),
    "max-steps-string": (agent(max_steps="3"), "max_steps must be an integer >= 1"),
    "max-steps-negative": (agent(max_steps=-1), "max_steps"),
    "max-steps-float": (agent(max_steps=2.5), "max_steps"),
    "max-syntax-errors-zero": (agent(max_syntax_errors=0), "max_syntax_errors"),
    "max-tool-retries-negative": (agent(max_tool_retries=-1), "max_tool_retries"),
    "max-result-chars-zero": (agent(max_result_chars=0), "at least 100"),
    "max-result-chars-negative": (agent(max_result_chars=-5), "max_result_chars"),
    "max-result-chars-string": (agent(max_result_chars="big"), "max_result_chars"),
    "model-none": (lambda: Agent(None), "model must be a warmloop Model"),  # type: ignore[arg-type]
    # A selection string resolves as resolve_model does (issue 32); one it does not know is
    # refused as it refuses it.
    "model-an-unknown-string": (lambda: Agent("gpt-5"), "unknown model 'gpt-5'; use one of"),
    "instructions-none": (agent(instructions=None), "instructions must be a string"),
    "callback-not-callable": (agent(on_message=5), "on_message must be a function"),
    "output-named-private": (agent(outputs={"_x": str}), "cannot be used as a name"),
    "output-named-model-config": (agent(outputs={"model_config": str}), "cannot be used"),
    # Running it.
    "task-empty-mapping": (run({}), "the task is empty"),
    "task-blank": (run(" \n"), "the task is empty"),
    "task-none": (run(None), "must be a string or a mapping"),
    "task-number": (run(42), "must be a string or a mapping"),
    "history-a-list": (run(history=[]), "history must be a Transcript"),
    "history-a-string": (run(history="{}"), "history must be a Transcript"),
    "conversation-id-a-path": (run(conversation_id="../x"), "is not allowed"),
    "session-id-a-path": (run(session="../../etc/passwd"), "is not allowed"),
    "session-and-history": (run(session="s", history=Transcript()), "not both"),
    "store-without-session": (run(store="sessions.db"), "pass session= too"),
    "store-another-database-url": (
        run(session="s", store="mysql://user@db.test/agents"),
        "'mysql' URLs are not supported",
    ),
    # Round four (issue 45): a server URL with an unclosed IPv6 bracket was a ValueError.
    "server-url-open-ipv6-bracket": (
        lambda: Agent("openai-compatible:http://[::1/v1#m"),
        "an IPv6 address in brackets",
    ),
    "server-url-credentials-and-open-bracket": (
        lambda: Agent("openai-compatible:http://u:secret@[::1/v1#m"),
        "cannot be read",
    ),
    "server-url-port-not-a-number": (
        lambda: Agent("openai-compatible:http://127.0.0.1:eighty/v1#m"),
        "its port (a number)",
    ),
}


async def refused(build: Callable[[], object], expected: str) -> None:
    """`build()` (awaited when it is a coroutine) raises a ConfigurationError saying
    `expected`, in words, never a traceback."""

    async def attempt() -> None:
        made = build()
        if asyncio.iscoroutine(made):
            await made

    with pytest.raises(ConfigurationError) as caught:
        await attempt()
    assert expected in str(caught.value)
    assert "Traceback" not in str(caught.value)


@pytest.mark.parametrize("name", list(CASES))
async def test_misuse_is_a_configuration_error(name: str) -> None:
    await refused(*CASES[name])


async def test_run_sync_inside_a_running_loop() -> None:
    with pytest.raises(ConfigurationError, match=r"await run\(\)"):
        Agent(submit_only()).run_sync("Go.")


async def test_one_agent_run_concurrently_keeps_both_runs_whole() -> None:
    model = ScriptedModel(
        [call("lookup", key="a"), call("lookup", key="b")] + [call("submit", answer="x")] * 2
    )
    shared = Agent(model, tools=[lookup])
    first, second = await asyncio.gather(exercise(shared, "One."), exercise(shared, "Two."))
    for outcome in (first, second):
        check_outcome(outcome)
        expect(outcome, "ok")
    turns = [len(o.results) for o in (first, second)]
    assert sum(turns) == 4
    assert first.transcript is not None
    assert second.transcript is not None
    assert first.transcript.id != second.transcript.id


@pytest.mark.moves_cache_prefix(reason="another agent continues the history with other tools")
async def test_a_history_from_another_agent_continues_on_a_new_branch() -> None:
    earlier = await exercise(Agent(submit_only(), tools=[lookup]), "First.")
    assert earlier.transcript is not None
    model = submit_only()
    later = await exercise(
        Agent(model, instructions="Other rules."), "Second.", history=earlier.transcript
    )
    check_outcome(later, model=model, history_turns=1)
    expect(later, "ok")
    assert later.transcript is not None
    assert later.transcript.meta.parent == earlier.transcript.id
    assert later.transcript.messages[: len(earlier.transcript)] == earlier.transcript.messages


async def test_a_callback_that_raises_ends_the_run_with_the_transcript() -> None:
    def explode(message: object) -> None:
        if getattr(message, "kind", "") == "tool_result":
            raise RuntimeError("callback bug")

    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="x")])
    outcome = await exercise(Agent(model, tools=[lookup], on_message=explode))
    expect(outcome, "RunAborted:callback bug")
    check_outcome(outcome, model=model)
    assert isinstance(outcome.error, WarmloopError)


# Round three (issue 30): the fleet's CLI. Each case runs `python -m warmloop` in a child
# process (its memory capped, so a read without bound fails instead of filling the machine)
# and expects one line saying what was wrong, exit code 1, no traceback, no password.

FLEET_PASSWORD = "fleet-PASSWORD-5b2e"
DOWN_DB = f"postgresql://fleet:{FLEET_PASSWORD}@127.0.0.1:1/fleet"
"""A fleet database nothing listens on (port 1 refuses at once)."""
CHILD_MEMORY = 2 * 2**30
CHILD_LIVENESS_SECONDS = 120.0
"""A guard against a hang (a FIFO opened for reading), far above what a case needs."""


def _warmloop_cli(*args: str) -> tuple[int, str]:
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    root = Path(__file__).parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("WARMLOOP_FLEET_DB", None)
    done = subprocess.run(
        [sys.executable, "-m", "warmloop", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        preexec_fn=capped,
        timeout=CHILD_LIVENESS_SECONDS,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _one_line_error(code: int, output: str, says: str) -> None:
    assert code == 1, output
    assert "Traceback" not in output, output
    assert FLEET_PASSWORD not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, output
    assert says in errors[0], output


BATCH_FILES: dict[str, tuple[bytes, str]] = {
    "not-utf-8": (b'{"agent": "a", "task": "caf\xe9"}\n', "line 1: not UTF-8"),
    "nested-100000-levels": (
        b'{"agent": "a", "inputs": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}\n",
        "line 1: nested too deeply",
    ),
    "a-5000-digit-integer": (
        b'{"agent": "a", "inputs": {"n": ' + b"7" * 5000 + b"}}\n",
        "line 1: not a task's JSON",
    ),
}


@pytest.mark.slow  # a real `warmloop` process: the slow tier
@pytest.mark.parametrize("row", list(BATCH_FILES))
def test_a_batch_file_no_task_can_be_read_from_is_one_line(row: str, tmp_path: Any) -> None:
    data, says = BATCH_FILES[row]
    batch = tmp_path / "tasks.jsonl"
    batch.write_bytes(data)
    _one_line_error(*_warmloop_cli("batch", "submit", str(batch), "--db", DOWN_DB), says)


@pytest.mark.slow  # a real `warmloop` process: the slow tier
def test_batch_submit_refuses_a_fifo_and_an_endless_device(tmp_path: Any) -> None:
    import os

    fifo = tmp_path / "tasks.jsonl"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        code, output = _warmloop_cli("batch", "submit", path, "--db", DOWN_DB)
        _one_line_error(code, output, "not a regular file")


@pytest.mark.slow  # a real `warmloop` process: the slow tier
@pytest.mark.parametrize("command", ["submit", "status", "worker"])
def test_the_fleet_commands_say_a_database_that_is_down_in_one_line(
    command: str, tmp_path: Any
) -> None:
    batch = tmp_path / "tasks.jsonl"
    batch.write_text('{"agent": "a", "task": "x"}\n', encoding="utf-8")
    args = {
        "submit": ("batch", "submit", str(batch)),
        "status": ("batch", "status", "b1"),
        "worker": ("worker", "--agents", "tests.fleet.agents:registry", "--name", "w1"),
    }[command]
    _one_line_error(*_warmloop_cli(*args, "--db", DOWN_DB), "reach")


@pytest.mark.slow  # a real `warmloop` process: the slow tier
def test_a_fleet_url_that_is_not_postgresql_is_shown_without_its_password(tmp_path: Any) -> None:
    batch = tmp_path / "tasks.jsonl"
    batch.write_text('{"agent": "a", "task": "x"}\n', encoding="utf-8")
    url = f"mysql://fleet:{FLEET_PASSWORD}@db/fleet"
    code, output = _warmloop_cli("batch", "submit", str(batch), "--db", url)
    _one_line_error(code, output, "mysql://***@db/fleet")


def test_an_agent_factory_that_raises_is_a_configuration_error_naming_it() -> None:
    import os

    from warmloop.fleet.agent_registry import AgentRegistry

    def needs_a_variable() -> Agent:
        return Agent(ScriptedModel(), instructions=os.environ["WARMLOOP_NO_SUCH_VARIABLE"])

    registry = AgentRegistry({"triage": needs_a_variable})
    with pytest.raises(ConfigurationError, match=r"agent 'triage': its factory failed.*KeyError"):
        registry.build("triage")


# Round three (issue 30): inputs, routing headers, saved openings.
#
# A task's named inputs become the first user message: NaN or infinity there is no value a
# model can use (and no JSON a fleet can store). A hop-by-hop header never reaches the
# router. `openings=` and its limit are checked when given, not at the first request.


def batch_line(line: str) -> Callable[[], object]:
    return lambda: read_batch([line])


ROUND_THREE_CASES: dict[str, tuple[Callable[[], object], str]] = {
    "input-nan": (run({"x": math.nan}), "input 'x' holds nan"),
    "input-infinity-nested": (run({"x": {"y": [1, -math.inf]}}), "input 'x' holds -inf"),
    "batch-input-nan": (batch_line('{"agent": "a", "inputs": {"x": NaN}}'), "NaN is not a JSON"),
    "batch-input-infinity": (batch_line('{"agent": "a", "inputs": {"x": Infinity}}'), "not JSON"),
    "batch-nested-deeply": (batch_line("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    "fleet-task-nan": (lambda: Task("a", {"x": math.nan}), "input 'x' holds nan"),
    "session-header-upgrade": (
        lambda: OpenAICompatibleModel("http://127.0.0.1:8080/v1#m", session_header="Upgrade"),
        "hop-by-hop",
    ),
    "session-header-te": (
        lambda: OpenAICompatibleModel("http://127.0.0.1:8080/v1#m", session_header="TE"),
        "hop-by-hop",
    ),
    "openings-a-string": (lambda: LocalModel(openings="~/kv"), "OpeningCache"),  # type: ignore[arg-type]
    "openings-an-int": (lambda: LocalModel(openings=5), "OpeningCache"),  # type: ignore[arg-type]
    "openings-limit-nan": (
        lambda: OpeningCache(Path("/nonexistent"), limit_bytes=math.nan),  # type: ignore[arg-type]
        "whole number of bytes",
    ),
    "openings-limit-a-string": (
        lambda: OpeningCache(Path("/nonexistent"), limit_bytes="2GB"),  # type: ignore[arg-type]
        "whole number of bytes",
    ),
}


@pytest.mark.parametrize("name", list(ROUND_THREE_CASES))
async def test_round_three_misuse_is_a_configuration_error_before_any_request(name: str) -> None:
    await refused(*ROUND_THREE_CASES[name])


# Round three (issue 38): mutants. An answer's max_tokens that leaves no room for a prompt.


@pytest.mark.parametrize("window", [4_096, 8_192])
def test_max_tokens_filling_the_stated_window_are_refused(window: int) -> None:
    import anthropic

    from warmloop.providers.anthropic.model import AnthropicModel

    offline = anthropic.AsyncAnthropic(api_key="offline")
    with pytest.raises(ConfigurationError, match=r"max_tokens \(8192\) leaves no room"):
        AnthropicModel("claude-sonnet-4-6", client=offline, context_window=window, max_tokens=8192)


# Round three (issue 32): extras. Each object that needs an optional dependency, made
# without it, is refused at once naming its pip extra: never a time-out, an error told to
# the model, or an "unexpected" error at the first request.


def _mcp_server() -> object:
    from warmloop.tools.mcp import McpServer

    return McpServer("files", command="mcp-files")


def _code_toolbox() -> object:
    from warmloop.tools.toolbox import Toolbox

    return Toolbox([], code=True)


def _local_model() -> object:
    from warmloop.providers.select import resolve_model

    return resolve_model("local")


MISSING_EXTRA_CASES: dict[str, tuple[str, Callable[[], object], str]] = {
    "mcp-server-without-mcp": ("mcp", _mcp_server, "mcp"),
    "code-mode-without-monty": ("pydantic_monty", _code_toolbox, "code"),
    "local-model-without-llama-cpp": ("llama_cpp", _local_model, "local"),
}


@pytest.mark.parametrize("name", list(MISSING_EXTRA_CASES))
def test_a_missing_extra_is_named_where_the_object_is_made(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    module, build, extra = MISSING_EXTRA_CASES[name]
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ConfigurationError) as caught:
        build()
    assert f"pip install 'warmloop[{extra}]'" in str(caught.value)
    assert "unexpected" not in str(caught.value)


# Round three (issue 32): the fleet's CLI exits. A submit that names an agent the workers'
# registry lacks is refused before the database is touched (DOWN_DB would say so first);
# a worker with neither --db nor $WARMLOOP_FLEET_DB is told both ways, not "Missing option".


@pytest.mark.slow  # a real `warmloop` process: the slow tier
def test_batch_submit_refuses_an_unknown_agent_before_submitting(tmp_path: Any) -> None:
    batch = tmp_path / "tasks.jsonl"
    batch.write_text('{"agent": "nobody", "task": "x"}\n', encoding="utf-8")
    agents = "tests.fleet.agents:registry"
    code, output = _warmloop_cli("batch", "submit", str(batch), "--db", DOWN_DB, "--agents", agents)
    _one_line_error(code, output, "no agent 'nobody' in tests.fleet.agents:registry; it knows")


@pytest.mark.slow  # a real `warmloop` process: the slow tier
def test_a_worker_without_a_database_names_the_option_and_the_variable() -> None:
    code, output = _warmloop_cli("worker", "--agents", "tests.fleet.agents:registry")
    _one_line_error(code, output, "pass --db URL or set $WARMLOOP_FLEET_DB")
    code, output = _warmloop_cli("worker", "--help")
    db_line = next(line for line in output.splitlines() if "--db" in line)
    assert "required" not in db_line, output


# Round three (issue 32): a missing API key is told in the asker's terms: Python's
# `api_key=` to a library user, the variable and `--option api_key=KEY` on the command line.


def test_a_missing_key_is_told_as_the_cli_passes_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from warmloop import resolve_model
    from warmloop.cli.main import main
    from warmloop.errors import MissingApiKey

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingApiKey, match="pass api_key= or client="):
        resolve_model("anthropic:claude-sonnet-4-5")
    result = CliRunner().invoke(main, ["run", "Hi.", "--model", "anthropic:claude-sonnet-4-5"])
    assert result.exit_code == 5, result.output  # not set up
    assert "set the environment variable ANTHROPIC_API_KEY" in result.output, result.output
    assert "--option api_key=KEY" in result.output, result.output
    assert "api_key=" not in result.output.replace("--option api_key=KEY", ""), result.output


# Round three (issue 32): api. Names other agent libraries use, and misspellings, are a
# ConfigurationError naming ours, never a bare TypeError.

KEYWORD_CASES: dict[str, tuple[Callable[[], object], str]] = {
    "agent-system_prompt": (agent(system_prompt="Be brief."), "did you mean instructions=?"),
    "agent-output_type": (agent(output_type=int), "did you mean outputs=?"),
    "agent-retries": (agent(retries=2), "did you mean max_tool_retries=?"),
    "agent-max_turns": (agent(max_turns=5), "did you mean max_steps=?"),
    "agent-misspelt": (agent(max_step=5), "did you mean max_steps=?"),
    "agent-no-equivalent": (agent(usage_limits={}), "takes no keyword argument 'usage_limi"),
    "run-message_history": (run(message_history=[]), "did you mean history=?"),
    "run-misspelt": (run(conversaton_id="c"), "did you mean conversation_id=?"),
    "run_sync-user_prompt": (
        lambda: Agent(submit_only()).run_sync(user_prompt="Go."),  # type: ignore[call-arg]
        "did you mean task=?",
    ),
    "resolve_model-misspelt": (
        lambda: resolve_model("anthropic:claude-sonnet-4-6", cache_tll="1h"),
        "did you mean cache_ttl=?",
    ),
    "resolve_model-n_ctx": (
        lambda: resolve_model("anthropic:claude-sonnet-4-6", n_ctx=8192),
        "did you mean context_window=?",
    ),
}


@pytest.mark.parametrize("name", list(KEYWORD_CASES))
async def test_an_unknown_keyword_names_the_closest_valid_one(name: str) -> None:
    build, expected = KEYWORD_CASES[name]

    async def attempt() -> None:
        made = build()
        if asyncio.iscoroutine(made):
            await made

    with pytest.raises(ConfigurationError) as caught:
        await attempt()
    assert expected in str(caught.value)


# Round three (issue 32): resume. `warmloop resume` on a session made in Python with its own
# tools and outputs is refused, naming the fingerprint the session stored; nothing is run.
def test_cli_resume_refuses_a_session_made_with_other_tools(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from warmloop.cli.main import main
    from warmloop.cli.shared import CliContext
    from warmloop.sessions.sqlite import SQLiteStore

    db = str(tmp_path / "sessions.db")
    made = Agent(ScriptedModel([call("submit", count=2)]), [lookup], outputs={"count": int})
    store = SQLiteStore(db)
    made.run_sync("Count.", session="mine", store=store)
    before = store.info("mine")
    store.close()
    cli = ScriptedModel([call("submit", answer="ran anyway")])
    result = CliRunner().invoke(
        main,
        ["resume", "mine", "And now?", "--store", db],
        obj=CliContext(lambda spec: cli),
    )
    assert result.exit_code == 1, result.output
    assert f"tools fingerprint {made.fingerprint}" in result.output
    after = SQLiteStore(db).info("mine")
    assert before is not None
    assert after is not None
    assert after.length == before.length  # nothing was run or stored


# Issue 32: run --agent. An --agent that names no agent is one line saying what was wrong,
# exit code 1, before any request: the form, a module that is missing or raises, an
# attribute that is missing (with the closest name), a value or a factory's result that is
# not an Agent.
AGENT_MODULE = """
from warmloop import Agent, ScriptedModel
agent = Agent(ScriptedModel([]))
def build():
    return 42
def broken():
    raise RuntimeError("no key")
answer = 42
"""
AGENT_CASES = [
    ("mine", "--agent takes MODULE:ATTR"),
    ("mine:", "--agent takes MODULE:ATTR"),
    ("nowhere:agent", "no module 'nowhere' in the current directory"),
    ("raising:agent", "importing 'raising' failed: ValueError: bad config"),
    ("needs_dep:agent", "importing 'needs_dep' failed: No module named 'not_installed_dep'"),
    ("mine:agnet", "module 'mine' has no attribute 'agnet' (did you mean mine:agent?)"),
    ("mine:answer", "mine:answer is of type int, not an Agent or a function returning one"),
    ("mine:build", "mine:build() returned a value of type int, not an Agent"),
    ("mine:broken", "mine:broken() failed: RuntimeError: no key"),
]


@pytest.mark.parametrize(("spec", "expected"), AGENT_CASES)
def test_run_agent_that_names_no_agent_is_one_line(
    spec: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from warmloop.cli.main import main

    # Module names unique to this test's directory, so no other test's import is reused.
    (tmp_path / "mine.py").write_text(AGENT_MODULE, encoding="utf-8")
    (tmp_path / "raising.py").write_text("raise ValueError('bad config')\n", encoding="utf-8")
    (tmp_path / "needs_dep.py").write_text("import not_installed_dep\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("mine", "raising", "needs_dep"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    result = CliRunner().invoke(main, ["run", "Hi.", "--agent", spec], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output  # bad usage
    assert expected in result.output
    assert "Traceback" not in result.output


# Issue 32: model settings. Each setting is checked for its type and range where it is
# given (an agent's when it is made, a run's as the run starts, before any request); an
# unknown one is named with the closest setting; a scripted model named after a real one
# takes what that provider takes; `--option` of a setting's name is checked the same way.
def standing_in_for(name: str, **options: Any) -> Callable[[], object]:
    return lambda: Agent(ScriptedModel([call("submit", answer="x")], name=name), **options)


MODEL_SETTINGS_CASES: dict[str, tuple[Callable[[], object], str]] = {
    "not-a-dict": (agent(model_settings=0.2), "must be a dict of model settings"),
    "temperature-text": (agent(model_settings={"temperature": "hot"}), "must be a number"),
    "temperature-flag": (agent(model_settings={"temperature": True}), "must be a number"),
    "temperature-nan": (
        agent(model_settings={"temperature": math.nan}),
        "temperature must be a finite number from 0 to 2, got nan",
    ),
    "temperature-inf": (agent(model_settings={"temperature": math.inf}), "finite number"),
    "top_p-above-one": (agent(model_settings={"top_p": 1.5}), "top_p must be a finite"),
    "max_tokens-negative": (
        agent(model_settings={"max_tokens": -5}),
        "max_tokens must be >= 1, got -5",
    ),
    "max_tokens-zero": (agent(model_settings={"max_tokens": 0}), "max_tokens must be >= 1"),
    "max_tokens-float": (agent(model_settings={"max_tokens": 10.5}), "must be an integer"),
    "max_tokens-over-window": (
        lambda: Agent(ScriptedModel(context_window=4096), model_settings={"max_tokens": 4096}),
        "must be below scripted's context window (4096)",
    ),
    "seed-text": (agent(model_settings={"seed": "7"}), "seed must be an integer"),
    "stop-empty": (agent(model_settings={"stop": []}), "non-empty list of strings"),
    "stop-number": (agent(model_settings={"stop": [1]}), "stop must hold non-empty strings"),
    "effort-unknown": (
        agent(model_settings={"reasoning_effort": "extreme"}),
        "reasoning_effort must be one of none, minimal, low, medium, high, xhigh",
    ),
    "thinking-negative": (agent(model_settings={"thinking_budget": -1}), "must be >= 0"),
    "parallel-text": (agent(model_settings={"parallel_tool_calls": "yes"}), "true or false"),
    "unknown-misspelt": (
        agent(model_settings={"temprature": 0.2}),
        "no setting 'temprature' (did you mean temperature=?)",
    ),
    "unknown-other-name": (
        agent(model_settings={"max_output_tokens": 100}),
        "(did you mean max_tokens=?)",
    ),
    "run-nan": (run(model_settings={"top_p": math.nan}), "top_p must be a finite number"),
    "run-unknown": (run(model_settings={"sed": 1}), "(did you mean seed=?)"),
    "provider-refuses": (
        standing_in_for("openai:gpt-5", model_settings={"seed": 1}),
        "provider OpenAI (openai:) does not take the model setting seed",
    ),
    "provider-refuses-value": (
        standing_in_for("anthropic:claude-sonnet-4-5", model_settings={"reasoning_effort": "none"}),
        "takes reasoning_effort low, medium, high, xhigh, not 'none'",
    ),
    "thinking-over-answer": (
        lambda: Agent(
            resolve_model("anthropic:claude-sonnet-4-5", api_key="sk-test"),
            model_settings={"thinking_budget": 4096},
        ),
        "thinking_budget (4096) must be below the answer's limit (4096, max_tokens)",
    ),
    "thinking-over-run-answer": (
        run(model_settings={"thinking_budget": 2048, "max_tokens": 1024}),
        "thinking_budget (2048) must be below the answer's limit (1024, max_tokens)",
    ),
    "resolve_model-option": (
        lambda: resolve_model("openai:gpt-5", api_key="k", temperature=0.2),
        "temperature for model 'openai' is a model setting, not an option: "
        "pass model_settings={'temperature': 0.2}",
    ),
    "cli-option-text": (
        lambda: resolve_model(
            "deepseek:deepseek-chat",
            api_key="k",
            **model_options("deepseek:deepseek-chat", ("temperature=hot",)),
        ),
        "model setting temperature must be a number, got 'hot'",
    ),
}


@pytest.mark.parametrize("name", list(MODEL_SETTINGS_CASES))
async def test_a_bad_model_setting_is_refused_naming_it(name: str) -> None:
    await refused(*MODEL_SETTINGS_CASES[name])


# Issue 32: typed outputs and context. An output type submit cannot carry as JSON and give
# back as itself is refused naming what it takes; a RunContext parameter must come first;
# deps= of another class than the tools' (or the agent's deps_type) is refused before any
# request is sent.
class NotAModel:
    count: int


class Ledger:
    pass


class Basket:
    pass


def ctx_second(key: str, ctx: RunContext[Ledger]) -> str:
    """Reads the ledger."""
    return key


def ctx_ledger(ctx: RunContext[Ledger], key: str) -> str:
    """Reads the ledger."""
    return key


def typed_agent(**options: Any) -> Callable[[], object]:
    return lambda: Agent(submit_only(), **options)


TYPED_CASES: dict[str, tuple[Callable[[], object], str]] = {
    "outputs-set-of-lambdas": (typed_agent(outputs={lambda: 1}), "not a type submit can carry"),
    "outputs-int-keys": (typed_agent(outputs=dict[int, str]), "not a type submit can carry"),
    "outputs-plain-class": (typed_agent(outputs=NotAModel), "a pydantic model, a dataclass"),
    "outputs-set": (typed_agent(outputs=set[str]), "not a type submit can carry"),
    "outputs-list-of-plain": (typed_agent(outputs=list[NotAModel]), "a TypedDict"),
    "ctx-not-first": (typed_agent(tools=[ctx_second]), "must be the first parameter"),
    "deps_type-not-a-class": (typed_agent(deps_type="Ledger"), "deps_type must be a class"),
    "deps_type-other-than-tools": (
        typed_agent(tools=[ctx_ledger], deps_type=Basket),
        "takes RunContext[Ledger], but the agent's deps_type is Basket",
    ),
    "deps-other-than-tools": (
        lambda: Agent(submit_only(), [ctx_ledger]).run("Go.", deps=Basket()),  # type: ignore[arg-type]
        "takes RunContext[Ledger], but this run's deps=",
    ),
    "deps-missing-for-tools": (
        lambda: Agent(submit_only(), [ctx_ledger]).run("Go."),
        "pass deps=Ledger(...)",
    ),
    "deps-other-than-deps_type": (
        lambda: Agent(submit_only(), deps_type=Ledger).run("Go.", deps=Basket()),  # type: ignore[arg-type]
        "the agent's deps_type is Ledger",
    ),
}


@pytest.mark.parametrize("name", list(TYPED_CASES))
async def test_typed_outputs_and_context_misuse_is_refused(name: str) -> None:
    await refused(*TYPED_CASES[name])


# Issue 35: fleet. A worker's periods that are no positive number of seconds are refused
# in one line before the database is touched; `fleet workers` and `worker --recover` say a
# database that is down in one line, without its password; a deadline of no time is a
# usage error.
FLEET_PERIODS: dict[str, tuple[tuple[str, ...], str]] = {
    "heartbeat-zero": (("--heartbeat", "0"), "heartbeat period must be a positive number"),
    "heartbeat-nan": (("--heartbeat", "nan"), "heartbeat period must be a positive number"),
    "lease-negative": (("--lease", "-5"), "lease period must be a positive number"),
    "lease-infinite": (("--lease", "inf"), "lease period must be a positive number"),
}


@pytest.mark.slow  # a real `warmloop` process: the slow tier
@pytest.mark.parametrize("row", list(FLEET_PERIODS))
def test_a_workers_periods_must_be_positive_seconds(row: str) -> None:
    options, says = FLEET_PERIODS[row]
    worker = ("worker", "--agents", "tests.fleet.agents:registry", "--db", DOWN_DB)
    _one_line_error(*_warmloop_cli(*worker, *options), says)


@pytest.mark.slow  # a real `warmloop` process: the slow tier
@pytest.mark.parametrize(
    "args",
    [
        ("fleet", "workers"),
        ("worker", "--agents", "tests.fleet.agents:registry", "--recover", "gone"),
    ],
)
def test_fleet_workers_and_recover_say_a_database_that_is_down_in_one_line(
    args: tuple[str, ...],
) -> None:
    _one_line_error(*_warmloop_cli(*args, "--db", DOWN_DB), "reach")


@pytest.mark.slow  # a real `warmloop` process: the slow tier
def test_a_deadline_of_no_time_is_a_usage_error() -> None:
    code, output = _warmloop_cli("batch", "status", "b1", "--wait", "--deadline", "0")
    assert code == 2, output
    assert "--deadline" in output
    assert "Traceback" not in output


@pytest.mark.slow  # a real `warmloop` process: the slow tier
def test_a_worker_on_a_url_that_is_not_postgresql_is_told_without_its_password() -> None:
    url = f"mysql://fleet:{FLEET_PASSWORD}@db/fleet"
    worker = ("worker", "--agents", "tests.fleet.agents:registry", "--db", url)
    _one_line_error(*_warmloop_cli(*worker), "mysql://***@db/fleet")


# Issue 32: local settings. The embedded model takes temperature, top_p, max_tokens, stop
# and seed (to its sampler); what it cannot honour (it has no reasoning, and calls one tool a
# step) is refused naming the provider and what it takes, from an agent and from a run,
# before the engine is loaded; its max_tokens must leave room in the engine's window.
def local_agent(**options: Any) -> Callable[[], object]:
    return lambda: Agent(LocalModel("gemma-3-270m", n_ctx=1024), **options)


def local_run(**options: Any) -> Callable[[], Awaitable[object]]:
    return lambda: Agent(LocalModel("gemma-3-270m", n_ctx=1024)).run("Go.", **options)


LOCAL_TAKES = "the settings it takes: temperature, top_p, max_tokens, stop, seed"
LOCAL_SETTINGS_CASES: dict[str, tuple[Callable[[], object], str]] = {
    "reasoning-effort": (
        local_agent(model_settings={"reasoning_effort": "low"}),
        "provider local (local:) does not take the model setting reasoning_effort",
    ),
    "thinking-budget": (local_agent(model_settings={"thinking_budget": 0}), LOCAL_TAKES),
    "parallel-tool-calls": (
        local_agent(model_settings={"parallel_tool_calls": False}),
        "does not take the model setting parallel_tool_calls",
    ),
    "run-reasoning-effort": (
        local_run(model_settings={"reasoning_effort": "high"}),
        "provider local (local:) does not take the model setting reasoning_effort",
    ),
    "max-tokens-fills-window": (
        local_agent(model_settings={"max_tokens": 1024}),
        "max_tokens (1024) must be below local:gemma-3-270m's context window (1024)",
    ),
    "temperature-nan": (
        local_agent(model_settings={"temperature": math.nan}),
        "temperature must be a finite number from 0 to 2, got nan",
    ),
    "stop-empty-string": (local_agent(model_settings={"stop": ""}), "non-empty strings"),
}


@pytest.mark.parametrize("name", list(LOCAL_SETTINGS_CASES))
async def test_a_setting_the_local_model_cannot_honour_is_refused(name: str) -> None:
    await refused(*LOCAL_SETTINGS_CASES[name])
