"""`warmloop run --agent MODULE:ATTR`: a user's own agent, imported from the current
directory and shown as the CLI's own, the built-in agent's flags it refuses, and the check
that a stored session was made with its tools and outputs."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

from rich.console import Console

from warmloop.agent.agent import DEFAULT_MAX_STEPS, Agent
from warmloop.agent.events import Event
from warmloop.cli.session_view import calls_made, session_calls
from warmloop.cli.view import LiveView, maintenance_line
from warmloop.cli.waiting import Waits
from warmloop.errors import ConfigurationError, SessionError
from warmloop.keywords import suggestion
from warmloop.sessions.session import SessionInfo
from warmloop.sessions.store import SessionStore

FORM = "--agent takes MODULE:ATTR (a module in the current directory, e.g. my_agent:agent)"


class AgentNotLoaded(ConfigurationError):
    """`--agent MODULE:ATTR` names no agent: the module is missing or fails to import, the
    attribute is missing, or it is neither an Agent nor a function returning one."""


def load_agent(spec: str) -> Agent:
    """The Agent `spec` (`MODULE:ATTR`) names: the attribute itself, or what calling it
    with no arguments returns. The module is imported from the current directory first."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise AgentNotLoaded(f"{FORM}, got {spec!r}")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name or module_name.startswith(f"{exc.name}."):
            raise AgentNotLoaded(
                f"no module {module_name!r} in the current directory ({here}) or on the path; "
                f"run warmloop where {module_name.replace('.', '/')}.py is"
            ) from exc
        raise AgentNotLoaded(f"importing {module_name!r} failed: {exc}") from exc
    except SystemExit as exc:  # its script part ran (sys.exit): nothing was made to run
        raise AgentNotLoaded(
            f"importing {module_name!r} exited (SystemExit({exc.code!r})) before an agent "
            f'could be run; keep what runs as a script under `if __name__ == "__main__":`'
        ) from exc
    except Exception as exc:  # the user's module raised: say so, with its own words
        raise AgentNotLoaded(
            f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not hasattr(module, attribute):
        names = [name for name in vars(module) if not name.startswith("_")]
        meant = suggestion(attribute, names)
        hint = f" (did you mean {module_name}:{meant}?)" if meant is not None else ""
        raise AgentNotLoaded(f"module {module_name!r} has no attribute {attribute!r}{hint}")
    found: object = getattr(module, attribute)
    if isinstance(found, Agent):
        return found
    if not callable(found):
        raise AgentNotLoaded(
            f"{spec} is of type {type(found).__name__}, not an Agent or a function returning one"
        )
    try:
        made = found()
    except (Exception, SystemExit) as exc:  # an exit is no agent either
        raise AgentNotLoaded(f"{spec}() failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, Agent):
        kind = type(made).__name__
        raise AgentNotLoaded(f"{spec}() returned a value of type {kind}, not an Agent")
    return made


def check_session_tools(
    name: str, info: SessionInfo | None, agent: Agent, spec: str, store: SessionStore
) -> None:
    """A SessionError when stored session `name` was made with other tools or outputs than
    `agent` (its stored tools fingerprint differs), naming the difference: the tools and
    outputs the session used that the agent lacks, and both fingerprints."""
    stored = info.meta.tools_fingerprint if info is not None else ""
    if not stored or stored == agent.fingerprint:
        return
    session = store.load(name)
    called, gave = session_calls(session)
    tools = [tool.name for tool in agent.tool_specs[:-1]]
    outputs = list(agent.outputs.model.model_fields)
    lacking = [t for t in called if t not in tools] + [o for o in gave if o not in outputs]
    difference = (
        f"; {spec} lacks {', '.join(lacking)}"
        if lacking
        else "; the tools' names agree, so a description, schema or output differs"
    )
    raise SessionError(
        f"session {name!r} was made with other tools or outputs (tools fingerprint {stored}"
        f"{calls_made(session)}) than agent {spec} (tools {', '.join(tools) or 'none'}; "
        f"outputs {', '.join(outputs)}: fingerprint {agent.fingerprint}){difference}; "
        "resume it with the agent that made it"
    )


def built_in_flags(
    model_spec: str | None,
    base_url: str | None,
    options: tuple[str, ...],
    n_ctx: int | None,
    context_window: int | None,
    workspace: Path,
    max_steps: int,
) -> list[str]:
    """The flags given that shape the built-in agent (an --agent brings its own)."""
    given = {
        "--model": model_spec is not None,
        "--base-url": base_url is not None,
        "--option": bool(options),
        "--n-ctx": n_ctx is not None,
        "--context-window": context_window is not None,
        "--workspace": workspace != Path("."),
        "--max-steps": max_steps != DEFAULT_MAX_STEPS,
    }
    return [flag for flag, was_given in given.items() if was_given]


def shown_agent(agent: Agent, waits: Waits, console: Console) -> Agent:
    """The user's agent, showing its steps, waits and maintenance as the CLI's own agent
    does (`Waits.events`), before the agent's own `on_event` (its `on_message` and
    `on_maintenance` are views of the same events, so they still see everything)."""
    own = agent.on_event
    show = waits.events(
        LiveView(console), lambda event: console.print(maintenance_line(event), soft_wrap=True)
    )

    def on_event(event: Event) -> None:
        show(event)
        if own is not None:
            own(event)

    agent.on_event = on_event
    return agent
