"""The live view of every wait: in a terminal, a spinner with the elapsed seconds on stderr
while a model request or a tool call runs, cleared when the wait ends.

`Waits` learns of a request from the model it wraps (`Waits.model`: every `send`) and of a
tool call from the messages the loop appends (`Waits.around`: a turn's calls start, each
result ends one). Nothing is shown when stderr is not a terminal: piped output and
`--json` stay exactly as they were.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from warmloop.messages import AssistantTurn, Message, ToolResult
from warmloop.providers.base import Model, ModelResponse, Rendered, WrappedModel
from warmloop.tools.gateway import SUBMIT

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
        self.pending: list[tuple[str, str]] = []  # (call id, tool name) not yet answered

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

    @contextmanager
    def request(self) -> Iterator[None]:
        """A model request: shown unless a tool's wait is (a keep-alive beside the tools)."""
        if self.live is not None:
            yield
            return
        self.start(REQUEST_LABEL)
        try:
            yield
        finally:
            self.stop()

    def model(self, model: Model) -> Model:
        """`model`, showing a wait during each request when there is a terminal."""
        return WaitingModel(model, self) if self.enabled else model

    def around(self, show: Callable[[Message], None]) -> Callable[[Message], None]:
        """An `on_message` hook: clears the wait, lets `show` print the message, then shows
        the wait for the tool call that runs next, if any."""

        def hook(message: Message) -> None:
            self.stop()
            show(message)
            if isinstance(message, AssistantTurn):
                self.pending = [(c.id, c.name) for c in message.tool_calls if c.name != SUBMIT]
            elif isinstance(message, ToolResult):
                ids = [call_id for call_id, _ in self.pending]
                if message.call_id in ids:
                    self.pending = self.pending[ids.index(message.call_id) + 1 :]
            else:
                return
            if self.pending:
                self.start(f"running {self.pending[0][1]}")

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


class WaitingModel(WrappedModel):
    """A model whose every request is shown as a wait (see `Waits`)."""

    def __init__(self, model: Model, waits: Waits) -> None:
        super().__init__(model)
        self.waits = waits

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Sent by the wrapped model, with the wait shown until it answers."""
        with self.waits.request():
            return await self.model.send(rendered, session_id=session_id)
