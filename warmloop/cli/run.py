"""`warmloop run` and `warmloop resume`: run an agent over a workspace (or the user's own,
`--agent MODULE:ATTR`), or continue a stored session with a follow-up, showing each step as
it happens.

Every WarmloopError ends the command with a one-line red message and the exit code of its
kind (`cli.exit_codes`), never a traceback; a failed run still saves its transcript when
`--save` was given (`cli.run_end`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from warmloop.agent.agent import DEFAULT_INSTRUCTIONS, Agent
from warmloop.agent.limits import UsageLimits
from warmloop.agent.result import Run
from warmloop.cli.console import console as safe_console
from warmloop.cli.exit_codes import BAD_USAGE, LIMIT_REACHED, RUN_FAILED, Failure
from warmloop.cli.interrupt import terminate_as_interrupt
from warmloop.cli.model_options import model_help, model_option_flags, model_options
from warmloop.cli.run_end import RunEnd
from warmloop.cli.run_json import print_json, run_object
from warmloop.cli.save import check_writable, write_transcript
from warmloop.cli.session_view import calls_made, resume_line, session_calls
from warmloop.cli.shared import (
    CliContext,
    command_store,
    fail,
    load_session,
    max_steps_option,
    store_option,
    workspace_option,
)
from warmloop.cli.user_agent import built_in_flags, check_session_tools, load_agent, shown_agent
from warmloop.cli.view import LiveView, maintenance_line, report
from warmloop.cli.waiting import Waits
from warmloop.errors import SessionError, WarmloopError
from warmloop.outputs import OutputCheck
from warmloop.providers.base import Model
from warmloop.providers.redact import MASK, redact_spec
from warmloop.providers.registry import provider_of
from warmloop.providers.select import examples
from warmloop.sessions.session import SessionInfo
from warmloop.sessions.store import SessionStore
from warmloop.workspace import WORKSPACE_INSTRUCTIONS, workspace_instructions, workspace_tools
from warmloop.workspace.grounding import unread_answer
from warmloop.workspace.map_build import map_budget
from warmloop.workspace.map_cache import MapCache

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object when the run ends (outputs, session, requests with usage and "
    "cache figures, cost, error) and nothing else on stdout; the exit code is unchanged.",
)
agent_option = click.option(
    "--agent",
    "agent_spec",
    metavar="MODULE:ATTR",
    help="Run your own agent: ATTR of MODULE (imported from the current directory), an Agent "
    "or a function returning one; its model, tools and outputs replace the workspace's.",
)
DEFAULT_MODEL = "local"


max_cost_option = click.option(
    "--max-cost",
    type=click.FloatRange(min=0, min_open=True),
    metavar="DOLLARS",
    help="Stop before a request that would take the run's cost past DOLLARS (at the model's "
    f"prices, cache reads and writes included); it is never sent (exit code {LIMIT_REACHED}).",
)


@click.command()
@click.argument("task")
@click.option(
    "--model",
    "model_spec",
    metavar="SPEC",
    help=f"Which model to use, e.g. {examples()}. {model_help()} [default: {DEFAULT_MODEL}]",
)
@agent_option
@workspace_option
@max_steps_option
@click.option(
    "--save",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the transcript (JSON) here, also when the run fails.",
)
@model_option_flags
@click.option(
    "--session",
    metavar="NAME",
    help="Store the run as session NAME step by step, or continue NAME if it exists.",
)
@store_option
@max_cost_option
@json_option
@click.pass_obj
def run(
    context: CliContext,
    task: str,
    model_spec: str | None,
    workspace: Path,
    max_steps: int,
    save: Path | None,
    agent_spec: str | None = None,
    session: str | None = None,
    store: str | None = None,
    base_url: str | None = None,
    options: tuple[str, ...] = (),
    n_ctx: int | None = None,
    context_window: int | None = None,
    as_json: bool = False,
    max_cost: float | None = None,
) -> None:
    """Run TASK with read-only tools over a workspace, or with your own agent (--agent), and
    show each step as it happens (with --json: print one JSON object when it ends)."""
    flags = built_in_flags(
        model_spec, base_url, options, n_ctx, context_window, workspace, max_steps
    )
    if agent_spec is not None and flags:
        fail(
            f"--agent runs your agent as its module makes it (its own model, tools and "
            f"max_steps), so {', '.join(flags)} cannot be used with it; set it in your module",
            BAD_USAGE,
        )
    model_spec = model_spec or DEFAULT_MODEL
    if save is not None:
        check_writable(save)
    console = safe_console()
    console.quiet = as_json  # --json: the JSON object is all that reaches stdout
    waits = Waits(safe_console(stderr=True))
    waits.enabled = waits.enabled and not as_json
    shown = redact_spec(model_spec) if agent_spec is None else None
    end = RunEnd(console, as_json, session, save, shown)
    if agent_spec is None:
        console.print(Text(f"model {shown}, workspace {workspace}", style="dim"))
    limits = UsageLimits(cost_limit=max_cost) if max_cost is not None else None
    try:
        opened = command_store(store) if session is not None else None
        info = opened.info(session) if opened is not None and session is not None else None
        if agent_spec is not None:
            agent = shown_agent(load_agent(agent_spec), waits, console)
            end.model = redact_spec(agent.model.name)
            console.print(Text(f"agent {agent_spec}, model {end.model}", style="dim"))
        else:
            built = BuiltIn(model_spec, options, base_url, n_ctx, context_window, max_steps)
            # A session that goes on keeps the instructions (and map) it opened with.
            resumed = info is not None and info.length > 0
            agent = built.agent(context, workspace, waits, console, resumed=resumed)
        if opened is not None and session is not None:
            check_session(session, info, agent, agent_spec, opened, console)
        with terminate_as_interrupt():
            try:
                result = agent.run_sync(task, session=session, store=opened, usage_limits=limits)
            finally:
                waits.stop()
    except KeyboardInterrupt as exc:
        end.stopped(exc)
    except WarmloopError as exc:  # a run's error, a missing key, an --agent that names none
        end.failed(exc)
    finished(console, result, end, opened)


@dataclass(frozen=True)
class BuiltIn:
    """The CLI's own agent: the flags that make its model, and its step budget."""

    model_spec: str
    options: tuple[str, ...]
    base_url: str | None
    n_ctx: int | None
    context_window: int | None
    max_steps: int

    def agent(
        self, context: CliContext, workspace: Path, waits: Waits, console: Console, *, resumed: bool
    ) -> Agent:
        """The workspace's read-only tools on the model the flags name, shown live; a
        session that goes on (`resumed`) keeps the instructions (and map) it opened with."""
        tools = workspace_tools(workspace)
        chosen = model_options(
            self.model_spec,
            self.options,
            base_url=self.base_url,
            n_ctx=self.n_ctx,
            context_window=self.context_window,
        )
        model = context.model_factory(self.model_spec, **chosen)
        instructions = (
            WORKSPACE_INSTRUCTIONS if resumed else mapped_instructions(model, workspace, console)
        )
        return Agent(
            model,
            tools,
            instructions=f"{DEFAULT_INSTRUCTIONS} {instructions}",
            max_steps=self.max_steps,
            check_outputs=answer_check(model),
            on_event=waits.events(
                LiveView(console),
                lambda event: console.print(maintenance_line(event), soft_wrap=True),
            ),
        )


def check_session(
    session: str,
    info: SessionInfo | None,
    agent: Agent,
    agent_spec: str | None,
    opened: SessionStore,
    console: Console,
) -> None:
    """Session `session`'s tools checked against `agent`'s (the user's agent: exactly, or
    refused; the built-in one: a change told), and how long it was idle said."""
    if agent_spec is not None:
        check_session_tools(session, info, agent, agent_spec, opened)
    elif (changed := same_tools(session, info, agent, opened)) is not None:
        console.print(Text(changed), style="yellow", soft_wrap=True)
    console.print(resume_line(session, info, time.time()))


def finished(console: Console, result: Run, end: RunEnd, opened: SessionStore | None) -> None:
    """A run that succeeded: saved before anything else can fail, then shown."""
    save = end.save
    problem = write_transcript(result.transcript, save) if save is not None else None
    if save is not None and problem is None:
        console.print(Text(f"transcript saved to {save}", style="dim"))
    if end.as_json:
        unsaved = None if problem is None else Failure("run_failed", RUN_FAILED, problem)
        print_json(
            run_object(
                model=result.model or end.model,
                session=end.session,
                requests=result.requests,
                result=result,
                error=None if unsaved is None else unsaved.as_json(),
                saved=save if problem is None else None,
            )
        )
    else:
        show_report(console, result)
    if opened is not None:
        console.print(Text(f"session {end.session} stored in {opened.location}", style="dim"))
    if problem is not None:
        fail(problem)


def same_tools(
    name: str, info: SessionInfo | None, agent: Agent, store: SessionStore
) -> str | None:
    """A SessionError when stored session `name` was made with other tools or outputs than
    `agent` (the CLI's workspace tools and `answer`): its fingerprint, stored with its first
    request, differs. Running it on would send tools it was not made with (the cache prefix
    lost, calls to tools that are gone), so it is refused, never run silently. A session
    whose every call names one of the CLI's tools and outputs (made by the CLI of another
    warmloop version, whose tool descriptions differ) goes on, with the warning returned."""
    stored = info.meta.tools_fingerprint if info is not None else ""
    if not stored or stored == agent.fingerprint:
        return None
    names = [spec.name for spec in agent.tool_specs[:-1]]
    outputs = list(agent.outputs.model.model_fields)
    session = store.load(name)
    called, gave = session_calls(session)
    if set(called) <= set(names) and set(gave) <= set(outputs):
        return (
            f"warning: session {name!r} was made with other descriptions of the CLI's tools "
            f"(fingerprint {stored}, another warmloop version's): it goes on, and its next "
            "request re-writes the cache"
        )
    raise SessionError(
        f"session {name!r} was made with other tools or outputs (tools fingerprint {stored}"
        f"{calls_made(session)}) "
        f"than the CLI runs ({', '.join(names)}; outputs {', '.join(outputs)}: fingerprint "
        f"{agent.fingerprint}); continue it with the agent that made it: "
        f"--agent MODULE:ATTR, or agent.run_sync(task, session={name!r}, store=...) in Python"
    )


def show_report(console: Console, result: Run) -> None:
    """`report`, never failing the command: the run is over and saved by now."""
    try:
        report(console, result)
    except Exception as exc:  # a report bug must not turn a finished run into an error
        console.print(
            Text(f"warning: the report could not be shown ({type(exc).__name__}: {exc})"),
            style="yellow",
            soft_wrap=True,
        )


def resumable_spec(model: str) -> str:
    """The --model string that selects a stored session's model again (`local:gemma-...`
    is the embedded model, selected as `local`)."""
    return "local" if model.startswith("local:") else model


@click.command()
@click.argument("name")
@click.argument("task")
@click.option("--model", "model_spec", metavar="SPEC", help="Model [default: the session's].")
@agent_option
@workspace_option
@max_steps_option
@click.option("--save", type=click.Path(dir_okay=False, path_type=Path), help="Also save here.")
@model_option_flags
@store_option
@max_cost_option
@json_option
@click.pass_context
def resume(
    ctx: click.Context,
    name: str,
    task: str,
    model_spec: str | None,
    workspace: Path,
    max_steps: int,
    save: Path | None,
    store: str | None,
    agent_spec: str | None = None,
    base_url: str | None = None,
    options: tuple[str, ...] = (),
    n_ctx: int | None = None,
    context_window: int | None = None,
    as_json: bool = False,
    max_cost: float | None = None,
) -> None:
    """Continue stored session NAME with the follow-up TASK (its cache is reused if warm);
    with --agent, with the agent that made it (its tools checked against the session's)."""
    stored = load_session(command_store(store), name)
    if agent_spec is not None:
        spec = model_spec
    elif stored.transcript is None and model_spec is None:
        fail(f"session {name!r} has no step stored yet; pass --model to run it")
    else:
        spec = model_spec or resumable_spec(stored.info.meta.model)
    if spec is not None and model_spec is None and MASK in spec:
        fail(
            f"session {name!r} ran on {spec}, whose credentials are never stored; "
            "pass --model with the full server URL"
        )
    ctx.invoke(
        run,
        task=task,
        model_spec=spec,
        workspace=workspace,
        max_steps=max_steps,
        save=save,
        agent_spec=agent_spec,
        session=name,
        store=store,
        base_url=base_url,
        options=options,
        n_ctx=n_ctx,
        context_window=context_window,
        as_json=as_json,
        max_cost=max_cost,
    )


def mapped_instructions(model: Model, workspace: Path, console: Console) -> str:
    """The workspace instructions with the workspace's map, in a budget of the model's
    window (`map_budget`), kept in the user's cache directory between runs; the map's size
    and what building it cost are shown (a changed workspace is a new opening)."""
    try:
        window: int | None = model.facts.context_window
    except WarmloopError:  # a model whose window is not known yet: the default budget
        window = None
    instructions, build = workspace_instructions(
        workspace, budget_tokens=map_budget(window), cache=MapCache()
    )
    console.print(Text(build.describe(), style="dim"), soft_wrap=True)
    return instructions


def answer_check(model: Model) -> OutputCheck | None:
    """The check of a short answer against what the run has read (`unread_answer`), for the
    embedded model only: that is where it measured a gain (held-out 21/33 to 24/33,
    docs/benchmarks.md), while on a paid API a refused answer that was right (a count, a
    computed value) costs a whole request. A library user opts in for any model with
    `Agent(check_outputs=...)`."""
    record = provider_of(model.name)
    return unread_answer if record is not None and record.checks_answers else None
