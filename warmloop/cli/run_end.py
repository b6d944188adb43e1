"""How `warmloop run` and `resume` end when the run does not finish: the transcript saved
(`--save`), the requests it sent shown, `--json`'s object with the error's kind and
message, one red line on stderr, and the exit code of that kind (`cli.exit_codes`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.text import Text

from warmloop.agent.result import RunError
from warmloop.cli.exit_codes import INTERRUPTED, TERMINATED, Failure, failure
from warmloop.cli.interrupt import Terminated
from warmloop.cli.run_json import print_json, run_object
from warmloop.cli.save import save_transcript
from warmloop.cli.shared import fail
from warmloop.cli.view import requests_report
from warmloop.errors import MissingApiKey, WarmloopError
from warmloop.providers.clients import key_names
from warmloop.transcript import Transcript
from warmloop.wire.request_record import RequestRecord


@dataclass
class RunEnd:
    """What a failing run command reports, and where: `model` is the model shown (the
    user's agent's once it is loaded; None while no agent is)."""

    console: Console
    as_json: bool
    session: str | None
    save: Path | None
    model: str | None

    def failed(self, error: WarmloopError) -> NoReturn:
        """A run or the command failed: saved, shown, answered, exited by its kind."""
        if isinstance(error, RunError):
            self.run_failed(error)
        message = str(error)
        if isinstance(error, MissingApiKey):  # the library says Python's api_key=: the CLI's
            message = (
                f"no API key for {self.model}: set the environment variable "
                f"{key_names(*error.variables)}, or pass --option api_key=KEY"
            )
        self.exit(failure(error, message), error)

    def run_failed(self, error: RunError) -> NoReturn:
        """A run that ended without outputs: its transcript saved, its requests shown."""
        if error.requests:
            self.console.print()
            requests_report(self.console, error.requests, error.transcript.meta.model)
        if self.save is not None:
            save_transcript(error.transcript, self.save)
            self.console.print(Text(f"transcript saved to {self.save}", style="dim"))
        self.model = error.transcript.meta.model or self.model
        if isinstance(error.__cause__, MissingApiKey):
            self.failed(error.__cause__)
        self.exit(failure(error), error, error.requests, error.cost().total)

    def stopped(self, stop: KeyboardInterrupt) -> NoReturn:
        """Ctrl-C or SIGTERM: the transcript so far saved, the exit code of an interrupt."""
        transcript = getattr(stop, "transcript", None)
        terminated = isinstance(stop, Terminated)
        how = "terminated" if terminated else "interrupted"
        code = TERMINATED if terminated else INTERRUPTED
        self.answer(Failure(how, code, how), None, getattr(stop, "requests", None) or [])
        if self.save is not None and isinstance(transcript, Transcript):
            save_transcript(transcript, self.save)
            self.console.print(Text(f"{how}; transcript saved to {self.save}", style="dim"))
        raise click.exceptions.Exit(code) from None

    def exit(
        self,
        ended: Failure,
        error: BaseException,
        requests: Sequence[RequestRecord] = (),
        cost: float | None = None,
    ) -> NoReturn:
        self.answer(ended, error, requests, cost)
        fail(ended.message, ended.code)

    def answer(
        self,
        ended: Failure,
        error: BaseException | None,
        requests: Sequence[RequestRecord],
        cost: float | None = None,
    ) -> None:
        """`--json`'s object for a run that did not finish (nothing without `--json`)."""
        if self.as_json:
            data = run_object(
                model=self.model,
                session=self.session,
                requests=requests,
                error=ended.as_json(error),
            )
            if cost is not None:
                data["cost"] = cost  # the run's own pricing, its keep-alives and folds included
            print_json(data)
