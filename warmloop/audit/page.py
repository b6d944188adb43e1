"""The audit as one self-contained HTML page (inline CSS, no scripts, no external assets).

Per conversation: totals, a bar per request whose segments are cached / written / uncached
tokens (every bar on one scale, so lengths compare across requests), each divergence with
both sides side by side and, where the log has the provider's own cache diagnostics, the
audit's reading beside the provider's verdict (agreeing, disagreeing, or the provider's
loss), and the input dollars lost per cause under each provider.
"""

from __future__ import annotations

from html import escape

from warmloop.audit.analysis import Finding
from warmloop.audit.report import AuditReport, ConversationReport, cause_label
from warmloop.audit.standing import state, verdict_note, worth_showing

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin:18px 0 4px}
.totals{display:flex;gap:24px;flex-wrap:wrap;margin:8px 0 16px}
.totals div{background:#f3f5f9;padding:6px 10px;border-radius:6px}
.legend span{display:inline-block;margin-right:14px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;
vertical-align:-1px}
.cached{background:#2e9d5b}.written{background:#e0a126}.uncached{background:#d2463c}
.request{display:grid;grid-template-columns:48px 640px 1fr;gap:10px;align-items:center;
margin:3px 0}
.track{width:640px;height:16px;background:#eef0f4;border-radius:3px}
.bar{display:flex;height:16px}.seg{height:16px}
.num{text-align:right;font-variant-numeric:tabular-nums}
.note{font-size:12px;color:#4a5160}.note b{color:#a2331f}
.divergence{border-left:4px solid #d2463c;padding:4px 12px;margin:12px 0}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.side pre{white-space:pre-wrap;word-break:break-all;background:#f7f7f9;padding:8px;
margin:4px 0;font-size:12px;max-height:220px;overflow:auto}
.side h4{margin:4px 0;font-size:12px;color:#4a5160}
mark.was{background:#f9d3cf}mark.now{background:#cdeed8}
.diagnostics{color:#1f5fa8}
.verdicts{display:grid;grid-template-columns:1fr 1fr;gap:12px;margin:8px 0}
.verdict{padding:6px 10px;border-radius:6px;background:#f3f5f9}
.verdict h4{margin:0 0 4px;font-size:12px;color:#4a5160}
.verdicts .agreement,.verdicts .diagnostics{grid-column:1 / 3;margin:0;font-size:12px}
.verdicts.agree .provider{background:#e3f4e9}.verdicts.disagree .provider{background:#fbe3e0}
.verdicts.loss .provider{background:#efe4f7}.verdicts.disagree .agreement{color:#a2331f}
.verdicts.loss .agreement{color:#6b3a91}
table{border-collapse:collapse;margin:8px 0}
td,th{border-bottom:1px solid #e3e6ec;padding:4px 10px;text-align:right}
td:first-child,th:first-child{text-align:left}
"""
BAR_PIXELS = 640


def _bar(finding: Finding, scale: float) -> str:
    parts = (
        ("cached", finding.cached),
        ("written", finding.written),
        ("uncached", finding.uncached),
    )
    segments = "".join(
        f'<span class="seg {name}" data-tokens="{tokens}" title="{name} {tokens:,} tokens" '
        f'style="width:{tokens * scale:.2f}px"></span>'
        for name, tokens in parts
        if tokens
    )
    return f'<div class="track"><div class="bar">{segments}</div></div>'


def _request_row(finding: Finding, scale: float) -> str:
    estimated = " (estimated)" if finding.estimated else ""
    note = (
        f"{finding.prompt_tokens:,} tokens{estimated} · {finding.cached:,} cached · "
        f"{finding.written:,} written · {finding.uncached:,} uncached"
    )
    if finding.cause_kind is not None:
        note += f" · <b>{escape(cause_label(finding.cause_kind))}</b>"
    return (
        f'<div class="request" data-number="{finding.number}">'
        f'<span class="num">#{finding.number}</span>{_bar(finding, scale)}'
        f'<span class="note">{note}</span></div>'
    )


def _verdicts(finding: Finding) -> str:
    """The audit's reading and the provider's verdict side by side, with how they stand."""
    verdict = finding.verdict
    if verdict is None:
        return ""
    note = verdict_note(finding)
    audit_side = (
        f"<b>{escape(cause_label(finding.cause_kind))}</b><br>{escape(finding.cause or '')}"
        if finding.cause_kind
        else "<b>no bust</b><br>the request extended the previous one"
    )
    missed = (
        f"<br>about {verdict.missed_tokens:,} input tokens missed"
        if verdict.missed_tokens is not None
        else ""
    )
    name = verdict.speaker or verdict.provider
    return (
        f'<div class="verdicts {state(finding)}">'
        f'<div class="verdict audit"><h4>warmloop\'s audit</h4>{audit_side}</div>'
        f'<div class="verdict provider"><h4>{escape(name)}\'s own diagnostics</h4>'
        f"<b>{escape(verdict.reason)}</b>{missed}</div>"
        + (f'<p class="agreement">{escape(note[0])}</p>' if note else "")
        + f'<p class="diagnostics">Provider diagnostics: {escape(verdict.describe())}</p>'
        "</div>"
    )


def _divergence(finding: Finding) -> str:
    divergence = finding.divergence
    cause = escape(finding.cause or "")
    where = escape(divergence.section) if divergence else "cache rules"
    # Beside a provider's verdict the audit's cause is one of the two readings shown.
    said = _verdicts(finding) if finding.verdict else f'<p class="cause">{cause}</p>'
    sides = ""
    if divergence is not None:
        lead = escape(divergence.context)
        sides = (
            '<div class="sides">'
            f'<div class="side"><h4>previous request</h4><pre>…{lead}'
            f'<mark class="was">{escape(divergence.before)}</mark>…</pre></div>'
            f'<div class="side"><h4>request {finding.number}</h4><pre>…{lead}'
            f'<mark class="now">{escape(divergence.after)}</mark>…</pre></div></div>'
        )
    return (
        f'<div class="divergence" data-number="{finding.number}">'
        f"<h3>Request {finding.number} (log line {finding.line}) · {where}</h3>"
        f"{said}{sides}</div>"
    )


def _costs(conversation: ConversationReport) -> str:
    if not conversation.costs:
        return "<p>No priced provider for this conversation.</p>"
    causes: list[str] = []
    for cost in conversation.costs:
        causes += [k for k, v in cost.lost_by_cause.items() if v > 0 and k not in causes]
    head = "".join(f"<th>{escape(c.provider)}</th>" for c in conversation.costs)
    rows = [
        ("input cost as logged", [c.actual for c in conversation.costs]),
        ("with a perfect prefix", [c.perfect for c in conversation.costs]),
        ("lost", [c.lost for c in conversation.costs]),
    ] + [
        (
            f"lost to {cause_label(cause)}",
            [c.lost_by_cause.get(cause, 0.0) for c in conversation.costs],
        )
        for cause in causes
    ]
    body = "".join(
        f"<tr><td>{escape(name)}</td>" + "".join(f"<td>${v:.4f}</td>" for v in values) + "</tr>"
        for name, values in rows
    )
    return f'<table class="costs"><tr><th>input dollars</th>{head}</tr>{body}</table>'


def _conversation(conversation: ConversationReport) -> str:
    findings = conversation.findings
    largest = max((f.cached + f.written + f.uncached for f in findings), default=0)
    scale = BAR_PIXELS / largest if largest else 0.0
    totals = (
        f"<div>{len(findings)} requests</div>"
        f"<div>{conversation.prompt_tokens:,} prompt tokens</div>"
        f"<div>hit rate {conversation.hit_rate:.0%}</div>"
        f"<div>cached/limit {conversation.cached_over_limit:.2f}</div>"
        f"<div>{escape(conversation.format)} · "
        f"{escape(conversation.model or 'unknown model')}</div>"
    )
    rows = "".join(_request_row(f, scale) for f in findings)
    busts = "".join(_divergence(f) for f in findings if worth_showing(f))
    return (
        f'<section class="conversation" id="conversation-{conversation.number}">'
        f"<h2>{escape(conversation.label)}</h2>"
        f'<div class="totals">{totals}</div>'
        '<div class="legend"><span><i class="swatch cached"></i>cached</span>'
        '<span><i class="swatch written"></i>written</span>'
        '<span><i class="swatch uncached"></i>uncached</span></div>'
        f'<div class="requests">{rows}</div>'
        f"<h3>Divergences and misses</h3>{busts or '<p>None: every request extended the last.</p>'}"
        f"<h3>Money lost per cause</h3>{_costs(conversation)}</section>"
    )


TOP_CAUSES = 5
"""Causes the summary lists, the costliest first."""


def _summary(report: AuditReport) -> str:
    """The whole log first: requests, then per provider its input dollars as logged, with a
    perfect prefix and lost, then the costliest causes."""
    requests = sum(len(c.findings) for c in report.conversations)
    totals: dict[str, list[float]] = {}
    for conversation in report.conversations:
        for cost in conversation.costs:
            into = totals.setdefault(cost.provider, [0.0, 0.0])
            into[0] += cost.actual
            into[1] += cost.perfect
    rows = "".join(
        f"<tr><td>{escape(provider)}</td><td>${actual:.4f}</td><td>${perfect:.4f}</td>"
        f"<td>${actual - perfect:.4f}</td></tr>"
        for provider, (actual, perfect) in totals.items()
    )
    costs = (
        '<table class="costs"><tr><th>input dollars</th><th>as logged</th>'
        f"<th>with a perfect prefix</th><th>lost</th></tr>{rows}</table>"
        if rows
        else "<p>No priced provider for this log.</p>"
    )
    top = [c for c in report.causes if c.requests][:TOP_CAUSES]
    causes = "".join(
        f"<li><b>{escape(c.label)}</b>: {c.requests} request{'s' if c.requests != 1 else ''}"
        + "".join(f", ${v:.4f} on {escape(p)}" for p, v in c.lost_usd.items() if v > 0)
        + "</li>"
        for c in top
    )
    return (
        f'<section class="summary"><h2>The whole log</h2>'
        f"<p>{len(report.conversations)} conversations, {requests} requests</p>{costs}"
        f"<p>Re-write factor {report.rewrite_factor:.2f}x: tokens written to the cache over "
        "the largest context each conversation held (1.00x writes every token once)</p>"
        f"<h3>Top causes</h3>{f'<ol>{causes}</ol>' if causes else '<p>None.</p>'}</section>"
    )


def render_page(report: AuditReport) -> str:
    """The whole report as one HTML document."""
    title = f"warmloop cache audit: {report.source}" if report.source else "warmloop cache audit"
    skipped = "".join(f"<li>{escape(s)}</li>" for s in report.skipped)
    body = "".join(_conversation(c) for c in report.conversations) or (
        "<p>No model requests found in the log.</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>{_summary(report)}{body}"
        + (f"<h2>Skipped lines</h2><ul>{skipped}</ul>" if skipped else "")
        + "</body></html>\n"
    )
