"""The live view of every wait: in a terminal, a spinner with the elapsed seconds on stderr
while a model request or a tool call runs, cleared when the wait ends.

`Waits` is built on the run's events (`Waits.events`, the agent's `on_event`): a request
waits from `RequestSent` to `RequestAnswered`, a tool call from `ToolStarted` to
`ToolFinished`; each message appended and each maintenance line is printed between waits.
Nothing is shown when stderr is not a terminal: piped output and `--json` stay exactly as
they were.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from warmloop.agent.events import (
    Event,
    KeptAlive,
    Maintained,
    MessageAppended,
    RequestAnswered,
    RequestSent,
    ToolFinished,
    ToolStarted,
)
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.messages import Message

REQUEST_LABEL = "waiting for the model"


class Elapsed:
    """A spinner, a label and the whole seconds since the wait began, rendered anew at
    each refresh."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.began = time.monotonic()
        self.spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        seconds = int(time.monotonic() - self.began)
        self.spinner.update(text=Text(f"{self.label} {seconds} s", style="dim"))
        yield self.spinner


class Waits:
    """The spinner of one command; inert (every method a no-op) when `console` is not a
    terminal."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.enabled = console.is_terminal
        self.live: Live | None = None

    def start(self, label: str) -> None:
        """Show `label` with a spinner and its elapsed seconds (replacing any wait shown)."""
        self.stop()
        if not self.enabled:
            return
        self.live = Live(
            Elapsed(label),
            console=self.console,
            transient=True,
            refresh_per_second=8,
            redirect_stdout=False,  # the live lines are printed between waits, never in one
            redirect_stderr=False,
        )
        self.live.start(refresh=True)

    def stop(self) -> None:
        """Clear the wait shown, if any."""
        if self.live is not None:
            live, self.live = self.live, None
            live.stop()

    def events(
        self, show: Callable[[Message], None], line: Callable[[MaintenanceEvent], None]
    ) -> Callable[[Event], None]:
        """An `on_event` hook: a wait shown during each request and each tool call, `show`
        for each message appended and `line` for each maintenance event, printed without
        tearing a wait's line."""

        def hook(event: Event) -> None:
            match event:
                case RequestSent():
                    self.start(REQUEST_LABEL)
                case ToolStarted(call=call):
                    self.start(f"running {call.name}")
                case RequestAnswered() | ToolFinished():
                    self.stop()
                case MessageAppended(message=message):
                    self.quiet(lambda: show(message))
                case Maintained(event=done) | KeptAlive(event=done):
                    self.quiet(lambda: line(done))
                case _:
                    pass

        return hook

    def quiet(self, show: Callable[[], None]) -> None:
        """Print something while a wait is shown without tearing its line: the wait is
        cleared, `show` runs, and it is shown again (with its own elapsed time)."""
        live = self.live
        if live is None:
            show()
            return
        live.stop()
        show()
        live.start(refresh=True)
