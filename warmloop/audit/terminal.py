"""The audit in the terminal: per conversation a request table, the divergences with both
sides, and the input cost per provider with the dollars lost per cause.

Everything taken from the log is wrapped in `rich.text.Text`, never parsed as markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from warmloop.audit.analysis import Finding
from warmloop.audit.report import AuditReport, ConversationReport, cause_label
from warmloop.audit.standing import verdict_note, worth_showing

EXCERPT = 100
WHITESPACE = re.compile(r"\s+")


def _flat(text: str, limit: int = EXCERPT) -> str:
    # Every run of whitespace is one space, at the ends too: a divergence often falls right
    # after one, and dropping it glued the two sides ("What isthe CAP theorem?").
    flat = WHITESPACE.sub(" ", text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _idle(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.1f}m"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def requests_table(conversation: ConversationReport) -> Table:
    """One row per request: tokens, what the cache served, the limit, and the cause."""
    table = Table(title_justify="left", show_lines=False)
    for name in ("#", "prompt", "cached", "written", "uncached", "limit", "prefix", "idle"):
        table.add_column(name, justify="right")
    table.add_column("cause")
    for finding in conversation.findings:
        estimated = "~" if finding.estimated else ""
        table.add_row(
            str(finding.number),
            f"{estimated}{finding.prompt_tokens:,}",
            f"{finding.cached:,}",
            f"{finding.written:,}",
            f"{finding.uncached:,}",
            f"{finding.limit:,}" if finding.number > 1 else "-",
            _percent(finding.reusable, finding.limit) if finding.number > 1 else "-",
            _idle(finding.idle_seconds),
            _cause_cell(finding),
        )
    return table


def _cause_cell(finding: Finding) -> Text:
    if finding.cause_kind is None:
        return Text("")
    return Text(cause_label(finding.cause_kind), style="yellow")


def divergence_lines(conversation: ConversationReport) -> Iterator[Text]:
    """Each bust or explained miss: request, section and cause, the provider's own verdict
    beside it, then both sides from the divergence on."""
    for finding in conversation.findings:
        if not worth_showing(finding):
            continue
        divergence = finding.divergence
        where = divergence.section if divergence else "cache rules"
        yield Text.assemble(
            (f"request {finding.number} ", "bold"),
            f"(line {finding.line}), {where}: ",
            (finding.cause or "no bust", "yellow"),
        )
        said = finding.verdict.describe() if finding.verdict else finding.diagnostics
        if said:
            note = verdict_note(finding)
            yield Text.assemble(
                ("  provider: ", "dim"),
                (said, "cyan"),
                *((("  · ", "dim"), note) if note else ()),
            )
        if divergence is not None:
            lead = _flat(divergence.context)[-30:]
            yield Text.assemble(
                ("  was: …", "dim"), (lead, "dim"), (_flat(divergence.before), "red")
            )
            yield Text.assemble(
                ("  now: …", "dim"), (lead, "dim"), (_flat(divergence.after), "green")
            )


def costs_table(conversation: ConversationReport) -> Table:
    """Input dollars per provider, as logged and with a perfect prefix, and the gap by cause."""
    table = Table(title_justify="left")
    table.add_column("provider", no_wrap=True)
    for name in ("as logged $", "perfect prefix $", "lost $"):
        table.add_column(name, justify="right")
    table.add_column("lost per cause")
    for cost in conversation.costs:
        causes = ", ".join(
            f"{cause_label(kind)} ${dollars:.4f}"
            for kind, dollars in cost.lost_by_cause.items()
            if dollars > 0
        )
        table.add_row(
            cost.provider,
            f"{cost.actual:.4f}",
            f"{cost.perfect:.4f}",
            f"{cost.lost:.4f}",
            Text(causes),
        )
    return table


def causes_table(report: AuditReport) -> Table:
    """Each cause over the whole log: requests hit, tokens re-sent, dollars lost per provider."""
    providers = list(dict.fromkeys(p for total in report.causes for p in total.lost_usd))
    table = Table(title="causes over the whole log", title_justify="left")
    table.add_column("cause")
    for name in ("requests", "re-sent tokens", "per request"):
        table.add_column(name, justify="right")
    for provider in providers:
        table.add_column(f"lost $ {provider}", justify="right")
    for total in report.causes:
        table.add_row(
            Text(total.label),
            str(total.requests),
            f"{total.resent_tokens:,}",
            f"{total.resent_per_request:,.0f}",
            *(f"{total.lost_usd.get(provider, 0.0):.4f}" for provider in providers),
        )
    return table


def conversation_view(conversation: ConversationReport) -> Iterator[RenderableType]:
    """Everything about one conversation, in reading order."""
    yield Text.assemble(
        (conversation.label, "bold"),
        f" · {conversation.format} · {conversation.model or 'unknown model'} · "
        f"{len(conversation.findings)} requests · hit rate {conversation.hit_rate:.0%} · "
        f"cached/limit {conversation.cached_over_limit:.2f} · "
        f"re-write factor {conversation.rewrite_factor:.2f}x",
    )
    lost = len(conversation.provider_lost)
    if lost:
        yield Text(
            f"{lost} request(s) missed because the provider lost its entry (its own "
            "diagnostics): charged to the provider, not to the client",
            style="magenta",
        )
    yield requests_table(conversation)
    yield from divergence_lines(conversation)
    if conversation.costs:
        yield costs_table(conversation)


def report_view(report: AuditReport) -> Iterator[RenderableType]:
    """The whole audit; skipped lines last."""
    if not report.conversations:
        yield Text("no model requests found in the log", style="yellow")
    for conversation in report.conversations:
        yield from conversation_view(conversation)
        yield Text("")
    if report.conversations:
        yield Text(
            f"re-write factor {report.rewrite_factor:.2f}x: tokens written to the cache over "
            "the largest context each conversation held (1.00x writes every token once)"
        )
    if report.causes:
        yield causes_table(report)
    for problem in report.skipped:
        yield Text(f"skipped {problem}", style="dim")
