"""How the CLI shows things: live step lines, outputs, the per-request table, the report
that ends a run, saved transcripts.

Everything the model or a tool wrote is wrapped in `rich.text.Text`, never parsed as rich
markup, so a `[red]` in a file is shown as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

from pydantic import BaseModel
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from warmloop.agent.result import Run
from warmloop.errors import WarmloopError
from warmloop.facts.pricing import cost_report
from warmloop.facts.usage import Usage
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.messages import (
    AssistantTurn,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolResult,
    UserText,
)
from warmloop.protocols import react_text
from warmloop.tools.invoke import cut_sizes
from warmloop.transcript import Transcript
from warmloop.wire.request_record import RequestRecord

MIN_WIDTH = 40


def one_line(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed to single spaces, cut to `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _line(label: str, style: str, body: str, width: int, body_style: str = "") -> Text:
    prefix = f"{label} "
    room = max(MIN_WIDTH, width - len(prefix))
    return Text.assemble((prefix, style), (one_line(body, room), body_style))


def message_lines(message: Message, step: int, width: int) -> list[Text]:
    """The short live view of one appended message (`step` numbers assistant turns)."""
    if isinstance(message, SystemText):
        return []  # the instructions are the same every run: noise on screen
    if isinstance(message, UserText):
        return [_line("user", "bold", message.text, width, "dim")]
    if isinstance(message, AssistantTurn):
        label = f"step {step}"
        lines = []
        if message.reasoning:
            lines.append(_line(label, "bold cyan", message.reasoning, width, "dim italic"))
        # A text-protocol turn's text is its Thought plus its Action: both are shown already.
        if message.text and not (message.tool_calls and react_text.ACTION in message.text):
            lines.append(_line(label, "bold cyan", message.text, width, "italic"))
        for call in message.tool_calls:
            lines.append(_line(f"{label} →", "bold cyan", f"{call.name} {call.arguments}", width))
        return lines or [_line(label, "bold cyan", "(empty turn)", width, "dim")]
    if isinstance(message, ToolResult) and message.is_error:
        # An error is what the model must act on next: shown whole, never cut.
        return [Text.assemble((f"  ✗ {message.name}: ", "red"), (message.content, "red"))]
    if isinstance(message, ToolResult):
        rows = message.content.split("\n")
        more = f" (+{len(rows) - 1} lines)" if len(rows) > 1 else ""
        cut = cut_sizes(message.content)
        if cut is not None:  # what the model received, not the lines of the cut text
            more = f" (showing {cut[0]:,} of {cut[1]:,} chars)"
        room = max(MIN_WIDTH, width - len(more))
        return [_line(f"  ← {message.name}:", "green", rows[0], room) + more]
    if isinstance(message, Notice):
        taught = f" {', '.join(t.name for t in message.tools)}" if message.tools else ""
        return [_line("notice", "bold yellow", message.text + taught, width, "yellow")]
    return [_line("summary", "bold magenta", message.text, width)]


class LiveView:
    """The Agent's `on_message` callback: prints each message as the loop appends it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.steps = 0

    def __call__(self, message: Message) -> None:
        if isinstance(message, AssistantTurn):
            self.steps += 1
        whole = isinstance(message, ToolResult) and message.is_error
        for line in message_lines(message, self.steps, self.console.width):
            if whole:
                self.console.print(line, soft_wrap=True)
            else:
                self.console.print(line, no_wrap=True, overflow="ellipsis")


def outputs_view(outputs: BaseModel, *, extracted: bool) -> Group:
    """The run's outputs, one field a row; strings as written, other values as JSON."""
    # A heading line, not a table title: rich wraps titles to the (narrow) table width.
    title = "Outputs (from the extract step)" if extracted else "Outputs"
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column()
    for name, value in outputs.model_dump(mode="json").items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        table.add_row(Text(name), Text(shown))
    return Group(Text(title, style="bold italic"), table)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


def requests_table(
    requests: Sequence[RequestRecord], costs: Sequence[float] | None = None
) -> Table:
    """One row per request: tokens, reuse (the cache hit rate), how much of the prompt
    extended the last one, seconds, and the cost in USD when the model is priced."""
    table = Table(title="Requests", title_justify="left")
    names = ["#", "prompt tokens", "reused tokens", "reused %", "prefix-stable %", "seconds"]
    for name in names + (["cost $"] if costs is not None else []):
        table.add_column(name, justify="right")
    for number, record in enumerate(requests, start=1):
        usage, check = record.usage, record.prefix
        # The first request has nothing before it to extend: no stability to report.
        stable = "-" if number == 1 else _percent(check.reusable, check.total)
        row = [
            str(number),
            f"{usage.prompt_tokens:,}",
            f"{usage.cache_read_tokens:,}",
            _percent(usage.cache_read_tokens, usage.prompt_tokens),
            stable,
            f"{record.seconds:.2f}",
        ]
        if costs is not None:
            row.append(f"{costs[number - 1]:.5f}")
        table.add_row(*row)
    return table


def totals_line(requests: Sequence[RequestRecord]) -> Text:
    """Sums over the run: prompt and reused tokens, prefix stability after request 1, time."""
    prompt = sum(r.usage.prompt_tokens for r in requests)
    reused = sum(r.usage.cache_read_tokens for r in requests)
    later = requests[1:]
    stable = _percent(sum(r.prefix.reusable for r in later), sum(r.prefix.total for r in later))
    seconds = sum(r.seconds for r in requests)
    return Text(
        f"total: {len(requests)} requests, {prompt:,} prompt tokens, {reused:,} reused "
        f"({_percent(reused, prompt)}%), prefix-stable {stable}%, {seconds:.2f} s",
        style="bold",
    )


def bust_lines(requests: Sequence[RequestRecord]) -> list[Text]:
    """One warning per request that did not extend the previous one, with the guard's cause."""
    return [
        Text(f"request {number}: {record.prefix.bust}", style="yellow")
        for number, record in enumerate(requests, start=1)
        if record.prefix.bust is not None
    ]


def maintenance_line(event: MaintenanceEvent) -> Text:
    """One line for a rewrite of the conversation, as it happens."""
    return Text(f"maintenance: {event.describe()}", style="yellow")


def maintenance_cost_line(run: Run) -> Text | None:
    """What keep-alives cost, as a share of the run's bill (None when there were none)."""
    pings = [e.usage for e in run.maintenance if e.kind == "keepalive" and e.usage is not None]
    if not pings:
        return None
    priced_as = run.facts.priced_as if run.facts is not None else None
    try:
        spent = cost_report(run.model, pings, priced_as=priced_as).total
        total = run.cost().total
    except WarmloopError:
        spent = total = None
    dollars = (
        f"${spent:.4f} of the run's ${total:.4f}"
        if spent is not None and total is not None
        else "cost unknown"
    )
    return Text(
        f"maintenance: {len(pings)} keep-alive(s) during pauses, {dollars}",
        style="yellow",
    )


def notes(run: Run) -> list[Text]:
    """What the user should know beyond the table: rewrites, cut results, stuck tools."""
    lines = [Text(f"warning: {line}", style="yellow") for line in run.warnings]
    lines += [maintenance_line(event) for event in run.maintenance]
    spent = maintenance_cost_line(run)
    if spent is not None:
        lines.append(spent)
    for execution in run.truncated:
        result = execution.result
        lines.append(
            Text(
                f"{result.name} ({result.call_id}): result cut from "
                f"{execution.truncated_from:,} to {len(result.content):,} characters "
                "(max_result_chars)",
                style="yellow",
            )
        )
    for stuck in run.stuck:
        lines.append(
            Text(
                f"{stuck.call.name} ({stuck.call.id}) timed out after {stuck.timeout:g} s "
                "and is still running in the background",
                style="yellow",
            )
        )
    return lines


def report(console: Console, result: Run) -> None:
    """The run's outputs, then per-request cache reuse and the totals."""
    console.print()
    console.print(outputs_view(result.outputs, extracted=result.extracted))
    console.print()
    requests_report(console, result.requests, result.model, result.usages())
    for line in notes(result):
        console.print(line, soft_wrap=True)


def requests_report(
    console: Console,
    requests: Sequence[RequestRecord],
    model: str,
    usages: Sequence[Usage] | None = None,
) -> None:
    """Per-request cache reuse, the totals, the cost and any cache bust: for a finished run
    and for one that failed after some requests. `usages` (default: the requests') is what
    is priced, so a fold's own summary request counts too."""
    cost = cost_report(model, usages if usages is not None else [r.usage for r in requests])
    try:
        per_request = cost.per_request
        described = cost.describe()
    except WarmloopError as exc:  # e.g. usage billed at a rate the price table lacks
        per_request, described = None, f"cost unknown: {exc}"
    costs = None if per_request is None else [c.total for c in per_request][: len(requests)]
    console.print(requests_table(requests, costs))
    console.print(totals_line(requests), soft_wrap=True)
    console.print(Text(described, style="dim"), soft_wrap=True)
    for line in bust_lines(requests):
        console.print(line, soft_wrap=True)


def _block(message: Message) -> Iterator[Text]:
    if isinstance(message, AssistantTurn):
        if message.reasoning:
            yield Text(message.reasoning, style="dim italic")
        # A text-protocol turn's text is its Thought and its Action, both shown already;
        # provider details (signatures, token ids) are for the provider, not for reading.
        if message.text and not (message.tool_calls and react_text.ACTION in message.text):
            yield Text(message.text)
        for call in message.tool_calls:
            yield Text.assemble(("→ ", "cyan"), (call.name, "bold cyan"), f" {call.arguments}")
    elif isinstance(message, ToolResult):
        yield Text(message.content, style="red" if message.is_error else "")
    elif isinstance(message, Summary):
        yield Text(f"(covers messages {message.start}-{message.end - 1})", style="dim")
        yield Text(message.text)
    else:
        yield Text(message.text)


def _heading(index: int, message: Message) -> Text:
    styles = {"assistant": "bold cyan", "tool_result": "bold green", "notice": "bold yellow"}
    label: str = message.kind
    if isinstance(message, ToolResult):
        kind = "tool error" if message.is_error else "tool result"
        label = f"{kind} {message.name} ({message.call_id})"
    style = "bold red" if isinstance(message, ToolResult) and message.is_error else None
    return Text(f"[{index}] {label}", style=style or styles.get(message.kind, "bold"))


def _indent(text: Text, prefix: str = "    ") -> Text:
    return Text("\n").join(Text(prefix) + line for line in text.split("\n"))


def transcript_view(
    transcript: Transcript, notes: Mapping[int, Sequence[Text]] | None = None
) -> Iterator[Text]:
    """A saved transcript in full: a header, then every message with its index and role,
    followed by any `notes` for that index (a stored session's usage and rewrites).

    Print each part with `soft_wrap=True`: lines stay as written (no padding, no re-wrap),
    so the output can be piped and searched.
    """
    yield Text(
        f"transcript {transcript.id}, revision {transcript.revision}, {len(transcript)} messages",
        style="bold",
    )
    for index, message in enumerate(transcript):
        yield Text("")
        yield _heading(index, message)
        for part in _block(message):
            yield _indent(part)
        yield from (notes or {}).get(index, ())
