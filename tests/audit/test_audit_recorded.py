"""The audit on a log recorded through `warmloop record`'s proxy: seven clients on the official
SDKs (openai, anthropic, google-genai) talk to a loopback fake API through the recorder,
each breaking the cache one way; the audit finds each bust at the right request with the
right cause, and none on the append-only client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.support.audit_clients import (
    STEPS,
    anthropic_loop,
    chat_loop,
    gemini_loop,
    responses_loop,
)
from tests.support.fake_api import Clock, FakeServer
from warmloop.audit.report import AuditReport, ConversationReport, audit
from warmloop.exchange.identity import shown_key
from warmloop.exchange.log import read_log
from warmloop.proxy.server import Proxy


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, FakeServer]]:
    clock = Clock()
    fake = FakeServer(clock)
    log = tmp_path_factory.mktemp("audit") / "requests.jsonl"
    recorder = Proxy(fake.url, log, clock=clock).start()
    base = recorder.url
    try:
        try:
            chat_loop(base, clock, "append-only", stream=True)
            anthropic_loop(base, clock, "timestamp", timestamp=True, clear=False)
            chat_loop(base, clock, "tools-reordered", stream=False, reorder_at=3)
            gemini_loop(base, clock, "Task A: summarise as you go.", stream=False, summarise_at=4)
            anthropic_loop(base, clock, "clearing", timestamp=False, clear=True)
            responses_loop(base, clock, "reasoning")
            gemini_loop(base, clock, "Task B: come back later.", stream=True, idle_at=3)
        finally:
            recorder.close()  # waits for the last request's line: its client is answered first
        yield log, fake
    finally:
        fake.close()


@pytest.fixture(scope="module")
def report(recorded: tuple[Path, FakeServer]) -> AuditReport:
    return audit(read_log(recorded[0]))


def conversation(report: AuditReport, key: str) -> ConversationReport:
    return next(c for c in report.conversations if f"({shown_key(key)})" in c.label)


def causes(found: ConversationReport) -> dict[int, str]:
    return {f.number: f.cause_kind for f in found.findings if f.cause_kind is not None}


def test_every_model_request_is_one_line_with_its_usage(recorded: tuple[Path, FakeServer]) -> None:
    lines = recorded[0].read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == 7 * STEPS
    assert all(r["usage"] and r["status"] == 200 for r in records)
    paths = {r["path"] for r in records}
    assert paths == {
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/responses",
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1/models/gemini-2.5-flash:streamGenerateContent",  # no ?alt=sse, no key
    }
    streamed = [r["stream"] for r in records]
    assert streamed.count(True) == 4 * STEPS  # chat, anthropic, responses, gemini streams


def test_each_client_is_one_conversation(report: AuditReport) -> None:
    assert [len(c.findings) for c in report.conversations] == [STEPS] * 7
    assert [c.format for c in report.conversations] == [
        "openai-chat",
        "anthropic",
        "openai-chat",
        "gemini",
        "anthropic",
        "openai-responses",
        "gemini",
    ]
    assert report.skipped == ()
    # every request's tokens come from the usage the proxy read, streamed or not
    assert not any(f.estimated for c in report.conversations for f in c.findings)


def test_the_append_only_client_has_no_bust_and_reaches_the_limit(report: AuditReport) -> None:
    found = conversation(report, "prompt_cache_key=append-only")
    assert causes(found) == {}
    assert all(f.divergence is None for f in found.findings)
    assert found.cached_over_limit >= 0.99


def test_a_timestamp_in_the_system_prompt_busts_every_later_request(report: AuditReport) -> None:
    found = conversation(report, "metadata.user_id=timestamp")
    assert causes(found) == {k: "volatile-value" for k in range(2, STEPS + 1)}
    for finding in found.findings[1:]:
        assert finding.divergence is not None
        assert finding.divergence.section == "system"
        assert "a timestamp in the prompt" in str(finding.cause)
        # Anthropic's own cache diagnostics, shown beside warmloop's finding
        assert finding.diagnostics is not None
        assert finding.diagnostics.startswith("Anthropic: system_changed")
    assert found.findings[0].diagnostics is None  # first turn: nothing to compare


def test_tools_reordered_after_a_reconnect_bust_once(report: AuditReport) -> None:
    found = conversation(report, "prompt_cache_key=tools-reordered")
    assert causes(found) == {3: "tools-changed"}
    assert found.findings[2].cause == "tools reordered (same tools, another order)"


def test_a_summary_in_place_of_old_turns_is_found_where_it_happened(report: AuditReport) -> None:
    summary = next(c for c in report.conversations if c.format == "gemini")
    assert causes(summary) == {4: "messages-summarised"}
    divergence = summary.findings[3].divergence
    assert divergence is not None
    assert divergence.section == "message 1"
    assert "Summary of the work so far" in divergence.after


def test_tool_results_cleared_every_request_bust_each_request(report: AuditReport) -> None:
    found = conversation(report, "metadata.user_id=clearing")
    assert causes(found) == {3: "content-replaced", 4: "content-replaced", 5: "content-replaced"}
    sections = [f.divergence.section for f in found.findings[2:] if f.divergence]
    assert sections == ["message 2", "message 4", "message 6"]  # the newest cleared result


def test_dropped_reasoning_is_found_at_every_request_that_drops_it(report: AuditReport) -> None:
    found = conversation(report, "prompt_cache_key=reasoning")
    assert causes(found) == {k: "reasoning-dropped" for k in range(3, STEPS + 1)}
    assert all("encrypted_content" in (f.cause or "") for f in found.findings[2:])


def test_idle_past_the_ttl_explains_the_cold_request(report: AuditReport) -> None:
    idle = [c for c in report.conversations if c.format == "gemini"][1]
    assert causes(idle) == {3: "idle"}
    cold = idle.findings[2]
    assert cold.divergence is None  # the prefix was fine: the cache had expired
    assert cold.cached == 0
    assert (cold.idle_seconds or 0) > 600
    assert idle.findings[3].cached > 0  # and the next request reads again


def test_dollars_lost_add_up_to_the_gap_and_land_on_the_causes(report: AuditReport) -> None:
    for found in report.conversations:
        for cost in found.costs:
            assert sum(cost.lost_by_cause.values()) == pytest.approx(cost.lost, abs=1e-9)
    clearing = conversation(report, "metadata.user_id=clearing").costs[0]
    assert clearing.provider == "anthropic:claude-sonnet-4-6"  # the log's own model first
    assert clearing.lost_by_cause["content-replaced"] > 0
    append_only = conversation(report, "prompt_cache_key=append-only")
    assert all(abs(cost.lost) < 0.01 * cost.actual for cost in append_only.costs)


def test_the_proxy_streams_events_as_they_arrive(recorded: tuple[Path, FakeServer]) -> None:
    fake = recorded[1]
    clock = Clock()
    with (
        Proxy(fake.url, recorded[0].with_name("slow.jsonl"), clock=clock).start() as proxy,
        httpx2.Client() as client,
        client.stream("POST", f"{proxy.url}/slow-stream", content=b"{}") as response,
    ):
        chunks = response.iter_raw()
        assert next(chunks).startswith(b'data: {"n": 1}')
        fake.api.gate.set()  # the upstream sends its second event only now
        rest = b"".join(chunks)
    assert fake.api.gate_opened_in_time is True
    assert b'data: {"n": 2}' in rest


def test_other_paths_are_forwarded_but_not_logged(recorded: tuple[Path, FakeServer]) -> None:
    out = recorded[0].with_name("other.jsonl")
    with Proxy(recorded[1].url, out).start() as proxy:
        reply = httpx2.get(f"{proxy.url}/v1/models?key=secret")
    assert reply.json() == {"data": []}
    assert out.read_text() == ""
