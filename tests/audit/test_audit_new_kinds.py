"""The kinds of miss users ask about that no tool named (issue 48), each on a constructed
Responses log, with its dollars, and once with its cause taken away: no `prompt_cache_key` on
a model that needs one, a router's affinity shorter than the TTL (told, or read from the
conversation's own gaps), a shared opening written again by a second conversation, the
re-write factor in the summary; and the claims the audit no longer makes without support:
server-side tool results counted as a reusable prefix, and `evicted` where the timing or the
billed tokens do not support it. Usage as the Responses API reports it ("The response
object"); the rules from the profile table (GPT-5.6: 30 min TTL, needs the key; GPT-5 and
GPT-5.2: 5 min in memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.audit.test_audit_misses import START, TASK, prompt, request
from warmloop.audit.analysis import Finding
from warmloop.audit.page import render_page
from warmloop.audit.report import AuditReport, audit, to_json
from warmloop.exchange.log import read_log

NEW = "gpt-5.6-sol"
SYSTEM = "You are the billing team's reviewer. Follow the house rules below. " * 90
"""An opening of about 1,500 tokens every conversation of one agent shares."""


def audited(tmp_path: Path, lines: list[dict[str, Any]], **options: Any) -> AuditReport:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return audit(read_log(log), **options)


def last(report: AuditReport) -> Finding:
    (conversation,) = report.conversations
    return conversation.findings[-1]


def lost(report: AuditReport, kind: str) -> float:
    return sum(cost.lost_by_cause.get(kind, 0.0) for c in report.conversations for cost in c.costs)


def steps(gaps: list[float], reads: list[bool], **body: Any) -> list[dict[str, Any]]:
    """A conversation whose request k + 1 extends request k after `gaps[k]` seconds and reads
    all of it (`reads[k]`) or nothing; `body`: more keys of every body."""
    lines = [request(0.0, [], 0, **body)]
    at = 0.0
    for k, (gap, read) in enumerate(zip(gaps, reads, strict=True)):
        at += gap
        turns = [f"Step {n}: go on." for n in range(k + 1)]
        lines.append(request(at, turns, prompt(lines[-1]) if read else 0, **body))
    return lines


# No key on a model that needs one --------------------------------------------------------


def test_a_gpt_5_6_request_without_the_key_is_named_with_its_dollars(tmp_path: Path) -> None:
    report = audited(tmp_path, steps([120.0], [False], model=NEW))
    found = last(report)
    assert found.cause_kind == "no-cache-key"
    assert "no prompt_cache_key" in str(found.cause)
    assert lost(report, "no-cache-key") > 0
    # Taken away: the same requests with the key are an eviction, not the key's.
    keyed = audited(tmp_path, steps([120.0], [False], model=NEW, prompt_cache_key="s1"))
    assert last(keyed).cause_kind == "evicted"
    # A model before GPT-5.6 matches without a key: not the key's either.
    assert last(audited(tmp_path, steps([120.0], [False]))).cause_kind == "evicted"


# Affinity shorter than the TTL ------------------------------------------------------------


def test_a_miss_past_the_routers_documented_window_is_its_affinity(tmp_path: Path) -> None:
    lines = steps([600.0], [False], model=NEW, prompt_cache_key="s1")
    report = audited(tmp_path, lines, affinity=300.0)
    found = last(report)
    assert found.cause_kind == "affinity"
    assert "past its 5 min affinity window, though inside the 30 min cache TTL" in str(found.cause)
    assert lost(report, "affinity") > 0
    # Taken away: a window longer than the pause, or none known.
    assert last(audited(tmp_path, lines, affinity=900.0)).cause_kind == "evicted"
    assert last(audited(tmp_path, lines)).cause_kind == "evicted"


def test_an_affinity_window_the_conversations_own_gaps_show_is_named(tmp_path: Path) -> None:
    """Every return after 10 minutes or more missed, every one after a minute or less read,
    inside GPT-5.6's 30-minute TTL: a router's affinity, not evictions (which strike any
    return). One read after 15 minutes breaks the pattern: then they are evictions."""
    gaps = [30.0, 40.0, 700.0, 30.0, 800.0]
    reads = [True, True, False, True, False]
    report = audited(tmp_path, steps(gaps, reads, model=NEW, prompt_cache_key="s1"))
    kinds = [f.cause_kind for f in report.conversations[0].findings]
    assert kinds == [None, None, None, "affinity", None, "affinity"]
    assert "missed after every pause from 11.7 min" in str(
        report.conversations[0].findings[3].cause
    )
    assert lost(report, "affinity") > 0
    broken = audited(
        tmp_path, steps([*gaps, 900.0], [*reads, True], model=NEW, prompt_cache_key="s1")
    )
    assert [f.cause_kind for f in broken.conversations[0].findings].count("evicted") == 2


# A shared opening written again ---------------------------------------------------------


def opening(at: float, task: str, cached: int, key: str) -> dict[str, Any]:
    line = request(at, [], cached, task=task, instructions=SYSTEM, prompt_cache_key=key)
    return line


def test_a_second_conversation_writing_the_shared_opening_again_is_named(tmp_path: Path) -> None:
    first = opening(0.0, "Review the invoices module.", 0, "parent")
    child = opening(60.0, "Review the refunds module.", 0, "child")
    report = audited(tmp_path, [first, child])
    parent_view, child_view = report.conversations
    assert parent_view.findings[0].cause_kind is None
    found = child_view.findings[0]
    assert found.cause_kind == "opening-rewritten"
    assert "the opening it shares with conversation 1" in str(found.cause)
    assert 1_300 < found.reusable < prompt(child)
    assert lost(report, "opening-rewritten") > 0
    # Taken away: the child read the opening, or came after the parent's entry expired.
    read = opening(60.0, "Review the refunds module.", found.reusable, "child")
    assert audited(tmp_path, [first, read]).conversations[1].findings[0].cause_kind is None
    late = opening(4_000.0, "Review the refunds module.", 0, "child")
    assert audited(tmp_path, [first, late]).conversations[1].findings[0].cause_kind is None


# The re-write factor ---------------------------------------------------------------------


def test_the_rewrite_factor_is_in_the_summary(tmp_path: Path) -> None:
    """A history written twice (an idle miss writes it all again) has a factor of about 2;
    one read back whole, about 1."""
    twice = audited(tmp_path, steps([900.0], [False]))
    assert 1.9 < twice.rewrite_factor < 2.1
    assert twice.conversations[0].rewrite_factor == twice.rewrite_factor
    assert to_json(twice)["rewrite_factor"] == round(twice.rewrite_factor, 3)
    assert f"Re-write factor {twice.rewrite_factor:.2f}x" in render_page(twice)
    once = audited(tmp_path, steps([60.0], [True]))
    assert 0.99 < once.rewrite_factor < 1.1


# Claims without support ------------------------------------------------------------------


def searched(at: float, cached: int, *, tools: bool = True, **line: Any) -> dict[str, Any]:
    """A gpt-5.2 request with the hosted web search, billed 9,000 input tokens: mostly the
    search results fetched during the call, which are in no request's text."""
    body: dict[str, Any] = {
        "model": "gpt-5.2",
        "input": [{"role": "user", "content": "What changed in the tax rules this year? " * 6}],
    }
    if tools:
        body["tools"] = [{"type": "web_search"}]
    usage = {"input_tokens": 9_000, "input_tokens_details": {"cached_tokens": cached}}
    return {
        "at": START + at,
        "path": "/v1/responses",
        "status": 200,
        "body": body,
        "usage": usage,
        **line,
    }


def test_search_results_are_never_a_reusable_prefix(tmp_path: Path) -> None:
    """Two byte-identical requests with the hosted web search: the second read none of the
    9,000 billed tokens, but what they share is 60 tokens of text, below any minimum."""
    lines = [searched(0.0, 0, answered_at=START + 5.0), searched(30.0, 0)]
    found = last(audited(tmp_path, lines))
    assert found.cause_kind is None
    assert found.reusable < 100
    # Taken away (no server-side tool): the billed tokens are the request's own.
    bare = [searched(0.0, 0, tools=False, answered_at=START + 5.0), searched(30.0, 0, tools=False)]
    assert last(audited(tmp_path, bare)).cause_kind == "evicted"


@pytest.mark.parametrize(
    ("idle", "answered", "kind"),
    [(2.0, None, "unexplained"), (2.0, 1.0, "evicted"), (90.0, None, "evicted")],
)
def test_evicted_only_where_the_timing_supports_it(
    tmp_path: Path, idle: float, answered: float | None, kind: str
) -> None:
    """A miss 2 s after the request it continues, whose answer the log does not time, may
    be a write not yet landed: `unexplained`, saying why. Answered before it was sent, or
    sent a minute and a half later, it is an eviction."""
    times: dict[str, Any] = {} if answered is None else {"answered_at": START + answered}
    first = request(0.0, [], 0, **times)
    found = last(audited(tmp_path, [first, request(idle, ["Go on."], 0)]))
    assert found.cause_kind == kind
    if kind == "unexplained":
        assert "whose answer the log does not time: its write may not have landed" in str(
            found.cause
        )


def test_evicted_only_where_the_billed_tokens_show_an_entry(tmp_path: Path) -> None:
    """Anthropic bills every write: a request that wrote and read nothing left no entry for
    the next one to lose, so its miss is not an eviction."""
    task = [{"type": "text", "text": TASK, "cache_control": {"type": "ephemeral"}}]
    bodies = [
        {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": task}]},
        {
            "model": "claude-sonnet-4-6",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": TASK}]},
                {"role": "assistant", "content": "Reading it."},
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Go on.", "cache_control": {"type": "ephemeral"}}
                    ],
                },
            ],
        },
    ]

    def log(written: int) -> list[dict[str, Any]]:
        usage = [
            {
                "input_tokens": 2600 - written,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": 0,
            },
            {"input_tokens": 0, "cache_creation_input_tokens": 2610, "cache_read_input_tokens": 0},
        ]
        return [
            {"at": START + 90.0 * k, "path": "/v1/messages", "body": body, "usage": usage[k]}
            for k, body in enumerate(bodies)
        ]

    assert last(audited(tmp_path, log(2600))).cause_kind == "evicted"
    found = last(audited(tmp_path, log(0)))
    assert found.cause_kind == "unexplained"
    assert "no entry for it is billed" in str(found.cause)


def test_the_cli_takes_the_routers_window(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from warmloop.cli.main import main

    log = tmp_path / "log.jsonl"
    lines = steps([600.0], [False], model=NEW, prompt_cache_key="s1")
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    printed = CliRunner().invoke(main, ["audit", str(log), "--json", "--affinity", "300"])
    document = json.loads(printed.stdout)
    assert document["conversations"][0]["requests"][-1]["cause_kind"] == "affinity"
    assert "affinity" in document["lost_by_cause_usd"]["openai:gpt-5.6-sol"]


def messages(at: float, task: str, written: int, marked: bool) -> dict[str, Any]:
    """A Messages request of one agent (its system prompt `SYSTEM`), its cache writes as
    billed, and a marker on the system prompt or none."""
    system: dict[str, Any] = {"type": "text", "text": SYSTEM}
    if marked:
        system["cache_control"] = {"type": "ephemeral"}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "system": [system],
        "messages": [{"role": "user", "content": task}],
    }
    usage = {
        "input_tokens": 1_700 - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": 0,
    }
    return {"at": at, "path": "/v1/messages", "body": body, "usage": usage}


def test_an_opening_nothing_wrote_is_not_written_again(tmp_path: Path) -> None:
    """Explicit caching writes only at a marker: where the earlier conversation wrote and read
    nothing, the later one had no copy to read, so it wrote nothing 'again'. With the
    marker and the earlier write billed, the same pair is named."""
    bare = [
        messages(0.0, "Review invoices.", 0, False),
        messages(60.0, "Review refunds.", 0, False),
    ]
    kinds = [f.cause_kind for c in audited(tmp_path, bare).conversations for f in c.findings]
    assert "opening-rewritten" not in kinds
    marked = [
        messages(0.0, "Review invoices.", 1_690, True),
        messages(60.0, "Review refunds.", 1_690, True),
    ]
    report = audited(tmp_path, marked)
    assert report.conversations[1].findings[0].cause_kind == "opening-rewritten"
