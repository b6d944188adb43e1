"""The `warmloop` command: run an agent over a workspace, show a saved transcript.

Every WarmloopError ends the command with a one-line red message and exit code 1, never a
traceback; a failed run still saves its transcript when `--save` was given.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.text import Text

from warmloop.cache.pricing import cost_report
from warmloop.cli_view import (
    LiveView,
    bust_lines,
    one_line,
    outputs_view,
    requests_table,
    totals_line,
    transcript_view,
)
from warmloop.errors import RunError, TranscriptError, WarmloopError
from warmloop.loop import DEFAULT_INSTRUCTIONS, Agent, RequestRecord, Run
from warmloop.providers.base import Model
from warmloop.providers.local import DEFAULT_N_CTX
from warmloop.providers.local_models import DEFAULT_MODEL, MODELS
from warmloop.providers.select import EXAMPLES, resolve_model
from warmloop.transcript import Transcript
from warmloop.workspace import WORKSPACE_INSTRUCTIONS, workspace_tools

ERROR_CHARS = 500
LOCAL_HELP = (
    f"`local` is the embedded {MODELS[DEFAULT_MODEL].title}; other embedded models: "
    + ", ".join(f"local:{name}" for name in MODELS if name != DEFAULT_MODEL)
    + "."
)
INTERRUPTED_EXIT = 130
"""The shell's code for a command ended by Ctrl-C (128 + SIGINT)."""


@dataclass
class CliContext:
    """What the commands build on; tests pass one whose factory returns a scripted model."""

    model_factory: Callable[[str], Model] = resolve_model


def _stdout() -> Console:
    # Created per command, not at import: the console must write to the sys.stdout of the
    # moment (click's test runner swaps it).
    return Console(highlight=False)


def fail(message: str) -> NoReturn:
    """Print `message` as one red line on stderr and exit with code 1."""
    Console(stderr=True, highlight=False).print(
        Text(f"error: {one_line(message, ERROR_CHARS)}", style="red"), soft_wrap=True
    )
    raise click.exceptions.Exit(1)


def check_writable(path: Path) -> None:
    """Fail now, before any model work, if `path` cannot take the transcript: a file is
    created and removed beside it, as `save_transcript` will."""
    if path.is_dir():
        fail(f"--save {path} is a directory; pass a file path")
    probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as exc:
        fail(
            f"could not save the transcript to {path} ({exc.strerror}); "
            "pass a --save path in a writable directory"
        )


def save_transcript(transcript: Transcript, path: Path) -> None:
    """Write the transcript's JSON to `path` atomically (a temporary file in the same
    directory, then a rename), so an existing file is never left half written; failing to
    save is an error, not a traceback."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temp.open("w", encoding="utf-8") as out:
            out.write(transcript.dump())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        fail(
            f"could not save the transcript to {path} ({exc.strerror}); "
            "pass a --save path in a writable directory"
        )


@click.group()
@click.version_option(package_name="warmloop")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Tool-using LLM agents that keep the provider's prompt cache warm."""
    ctx.ensure_object(CliContext)


@main.command()
@click.argument("task")
@click.option(
    "--model",
    "model_spec",
    default="local",
    show_default=True,
    metavar="SPEC",
    help=f"Which model to use, e.g. {EXAMPLES}. {LOCAL_HELP}",
)
@click.option(
    "--workspace",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory the agent may read (list_files, read_file, search).",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=20, show_default=True, help="Step budget."
)
@click.option(
    "--save",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the transcript (JSON) here, also when the run fails.",
)
@click.option(
    "--n-ctx",
    type=click.IntRange(min=512),
    help=f"Context window of a local model, in tokens [default: {DEFAULT_N_CTX}].",
)
@click.pass_obj
def run(
    context: CliContext,
    task: str,
    model_spec: str,
    workspace: Path,
    max_steps: int,
    save: Path | None,
    n_ctx: int | None,
) -> None:
    """Run TASK with read-only tools over a workspace and show each step as it happens."""
    if save is not None:
        check_writable(save)
    console = _stdout()
    console.print(Text(f"model {model_spec}, workspace {workspace}", style="dim"))
    try:
        tools = workspace_tools(workspace)
        model = context.model_factory(model_spec)
        if n_ctx is not None:
            resize = getattr(model, "resize", None)
            if resize is None:
                fail(f"--n-ctx applies to local models only, not {model_spec!r}")
            resize(n_ctx)
        agent = Agent(
            model,
            tools,
            instructions=f"{DEFAULT_INSTRUCTIONS} {WORKSPACE_INSTRUCTIONS}",
            max_steps=max_steps,
            on_message=LiveView(console),
        )
        result = agent.run_sync(task)
    except KeyboardInterrupt as exc:
        transcript = getattr(exc, "transcript", None)
        if save is not None and isinstance(transcript, Transcript):
            save_transcript(transcript, save)
            console.print(Text(f"interrupted; transcript saved to {save}", style="dim"))
        raise click.exceptions.Exit(INTERRUPTED_EXIT) from None
    except RunError as exc:
        if exc.requests:
            console.print()
            requests_report(console, exc.requests, model_name(exc.transcript))
        if save is not None:
            save_transcript(exc.transcript, save)
            console.print(Text(f"transcript saved to {save}", style="dim"))
        fail(str(exc))
    except WarmloopError as exc:
        fail(str(exc))
    report(console, result)
    if save is not None:
        save_transcript(result.transcript, save)
        console.print(Text(f"transcript saved to {save}", style="dim"))


def report(console: Console, result: Run) -> None:
    """The run's outputs, then per-request cache reuse and the totals."""
    console.print()
    console.print(outputs_view(result.outputs, extracted=result.extracted))
    console.print()
    requests_report(console, result.requests, result.model)


def model_name(transcript: Transcript) -> str:
    """The model a transcript's requests went to (for pricing a failed run)."""
    return transcript.meta.model or ""


def requests_report(console: Console, requests: Sequence[RequestRecord], model: str) -> None:
    """Per-request cache reuse, the totals, the cost and any cache bust: for a finished
    run and for one that failed after some requests."""
    cost = cost_report(model, (r.usage for r in requests))
    per_request = cost.per_request
    costs = None if per_request is None else [c.total for c in per_request]
    console.print(requests_table(requests, costs))
    console.print(totals_line(requests), soft_wrap=True)
    console.print(Text(cost.describe(), style="dim"), soft_wrap=True)
    for line in bust_lines(requests):
        console.print(line, soft_wrap=True)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def show(file: Path) -> None:
    """Pretty-print a transcript saved with `warmloop run --save FILE`."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        fail(f"cannot read {file} ({reason}); pass a file written by warmloop run --save")
    try:
        transcript = Transcript.load(text)
    except TranscriptError as exc:
        fail(
            f"{file} is not a readable warmloop transcript ({exc}); "
            "pass a file written by warmloop run --save"
        )
    console = _stdout()
    for part in transcript_view(transcript):
        console.print(part, soft_wrap=True)
