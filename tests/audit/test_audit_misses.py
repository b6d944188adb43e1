"""Every kind of miss no diff explains is named, with the dollars it cost (issue 36).

Each test audits a constructed Responses log whose requests extend the one before (the
prefix held) yet read nothing from the cache, once with the cause and once with it taken
away: the kind must be named with it, and not without it. Usage is the Responses API's
("The response object": `usage.input_tokens_details.cached_tokens`); GPT-5's rules from the
profile table: caches from 1,024 tokens, entries kept 5 minutes idle (`in_memory`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from warmloop.audit.analysis import Finding
from warmloop.audit.page import render_page
from warmloop.audit.report import audit
from warmloop.exchange.log import read_log

TASK = "Find every rounding error in the billing module and say where it is. " * 120
SHORT = "Find the rounding error in the billing module. " * 40  # ~500 tokens: below 1,024
START = 1_767_259_000.0
INVOICES = "Invoices first: list each one whose total is off by a cent. " * 8
REFUNDS = "Refunds next."


def request(
    at: float,
    turns: list[str],
    cached: int,
    *,
    task: str = TASK,
    diagnostics: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One logged request: the task, then `turns` (each a user message), `cached` tokens
    read of a prompt sized from its body; `extra`: more keys of the line (`answered_at`) or
    of the body (`prompt_cache_retention`)."""
    items = [{"role": "user", "content": text} for text in [task, *turns]]
    body: dict[str, Any] = {"model": "gpt-5", "input": items}
    line: dict[str, Any] = {"at": START + at, "path": "/v1/responses", "status": 200}
    for key, value in extra.items():
        (line if key == "answered_at" else body)[key] = value
    total = len(json.dumps(body)) // 4
    line["body"] = body
    line["usage"] = {
        "input_tokens": total,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": 20,
        "total_tokens": total + 20,
    }
    if diagnostics is not None:
        line["diagnostics"] = diagnostics
    return line


def prompt(line: dict[str, Any]) -> int:
    return int(line["usage"]["input_tokens"])


def last_miss(tmp_path: Path, lines: list[dict[str, Any]]) -> tuple[Finding, dict[str, float]]:
    """The last request's finding, and the dollars lost per cause in its conversation."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = audit(read_log(log))
    (conversation,) = report.conversations
    finding = conversation.findings[-1]
    assert finding.divergence is None  # the prefix held
    (cost, *_) = conversation.costs
    return finding, dict(cost.lost_by_cause)


def pair(idle: float, **second: Any) -> list[dict[str, Any]]:
    """A request, and `idle` seconds later one that extends it and reads nothing."""
    first = request(0.0, [], 0)
    return [first, request(idle, ["Go on."], 0, **second)]


def test_a_miss_inside_the_ttl_is_an_eviction_with_its_dollars(tmp_path: Path) -> None:
    found, lost = last_miss(tmp_path, pair(60.0))
    assert found.cause_kind == "evicted"
    assert "inside the 5 min TTL" in str(found.cause)
    assert lost["evicted"] > 0
    # Taken away (the pause past the TTL): an expiry, not an eviction.
    found, _ = last_miss(tmp_path, pair(900.0))
    assert found.cause_kind == "idle"


def test_a_miss_past_the_ttl_is_idle_with_its_dollars(tmp_path: Path) -> None:
    found, lost = last_miss(tmp_path, pair(900.0))
    assert found.cause_kind == "idle"
    assert lost["idle"] > 0
    found, _ = last_miss(tmp_path, pair(60.0))
    assert found.cause_kind != "idle"


def test_a_prefix_below_the_minimum_is_named(tmp_path: Path) -> None:
    lines = [request(0.0, [], 0, task=SHORT), request(60.0, ["Go on."], 0, task=SHORT)]
    found, _ = last_miss(tmp_path, lines)
    assert found.cause_kind == "below-minimum"
    found, _ = last_miss(tmp_path, pair(60.0))  # the long task: above the minimum
    assert found.cause_kind != "below-minimum"


def test_a_request_sent_before_its_parent_answered_is_a_write_not_landed(
    tmp_path: Path,
) -> None:
    first = request(0.0, [], 0, answered_at=START + 30.0)
    found, lost = last_miss(tmp_path, [first, request(10.0, ["Go on."], 0)])
    assert found.cause_kind == "not-landed"
    assert "sent 20.0 s before the request it continues was answered" in str(found.cause)
    assert lost["not-landed"] > 0
    first = request(0.0, [], 0, answered_at=START + 5.0)  # answered before: landed
    found, _ = last_miss(tmp_path, [first, request(10.0, ["Go on."], 0)])
    assert found.cause_kind == "evicted"


def test_a_ttl_switched_mid_session_is_named(tmp_path: Path) -> None:
    found, lost = last_miss(tmp_path, pair(60.0, prompt_cache_retention="24h"))
    assert found.cause_kind == "ttl-switch"
    assert "written for 24h after in_memory" in str(found.cause)
    assert lost["ttl-switch"] > 0
    found, _ = last_miss(tmp_path, pair(60.0, prompt_cache_retention="in_memory"))
    assert found.cause_kind == "evicted"  # the same tier, named or not


def test_a_miss_on_a_prefix_another_request_just_read_is_routed(tmp_path: Path) -> None:
    """Two branches of one conversation: the first reads the whole opening request, the
    second misses it 10 s later: the entry was alive, so the second reached another
    machine."""
    first = request(0.0, [], 0)
    read = request(50.0, [INVOICES], prompt(first))
    found, lost = last_miss(tmp_path, [first, read, request(60.0, [REFUNDS], 0)])
    assert found.cause_kind == "routed"
    assert found.parent == 1  # measured against the opening, not the other branch
    assert lost["routed"] > 0
    unread = request(50.0, [INVOICES], 0)  # the other branch read nothing
    found, _ = last_miss(tmp_path, [first, unread, request(60.0, [REFUNDS], 0)])
    assert found.cause_kind == "evicted"


def test_the_providers_verdict_that_it_lost_the_entry_takes_an_eviction(
    tmp_path: Path,
) -> None:
    """OpenAI's prompt cache diagnostics (`comparison_response_not_found`) where the request
    named the earlier response: the provider's own word that its entry was gone."""
    first = {**request(0.0, [], 0), "response_id": "resp_1"}
    said = {"type": "comparison_response_not_found"}
    second = request(
        60.0,
        ["Go on."],
        0,
        prompt_cache_options={"comparison_response_id": "resp_1"},
        diagnostics=said,
    )
    found, lost = last_miss(tmp_path, [first, second])
    assert found.cause_kind == "provider-lost"
    assert found.verdict is not None
    assert lost["provider-lost"] > 0
    del second["diagnostics"]
    found, _ = last_miss(tmp_path, [first, second])
    assert found.cause_kind == "evicted"


def test_the_page_opens_with_the_whole_logs_cost_and_top_causes(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    lines = [*pair(60.0), request(2_000.0, ["Go on.", "And again."], 0)]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = audit(read_log(log))
    page = render_page(report)
    summary = page[page.index('<section class="summary">') : page.index("</section>")]
    assert page.index('<section class="summary">') < page.index('<section class="conversation"')
    assert "1 conversations, 3 requests" in summary
    (cost, *_) = report.conversations[0].costs
    assert f"<td>{cost.provider}</td><td>${cost.actual:.4f}</td>" in summary
    assert f"<td>${cost.perfect:.4f}</td>" in summary
    assert summary.index("idle past the TTL") < summary.index("evicted within the TTL")
