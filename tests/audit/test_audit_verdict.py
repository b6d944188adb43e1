"""The provider's own verdict beside the audit's reading, from logs holding both providers'
documented diagnostics: Anthropic's `diagnostics`
(https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics) and OpenAI's
`prompt_cache_diagnostics`
(https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics). A miss the
provider says it lost is charged to the provider and never counted as a client bust; where
the two readings disagree, both are shown (terminal, --json, HTML)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from rich.console import Console

from warmloop.audit.report import AuditReport, ConversationReport, audit, to_json
from warmloop.audit.terminal import report_view
from warmloop.cli.main import main
from warmloop.exchange.log import read_log
from warmloop.wire.miss_kinds import PROVIDER_LOST

SYSTEM = "You fix bugs in a Python repository. " * 200
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [
    {"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA},
    {"name": "search", "description": "Search the repository.", "input_schema": SCHEMA},
]
LOST = {"cache_miss_reason": {"type": "previous_message_not_found"}}


def miss(kind: str, tokens: int) -> dict[str, Any]:
    return {"cache_miss_reason": {"type": kind, "cache_missed_input_tokens": tokens}}


# Per request: (cache reads, cache writes, uncached input, the response's diagnostics)
ANTHROPIC_STEPS: list[tuple[int, int, int, dict[str, Any] | None]] = [
    (0, 2400, 20, None),  # the first turn opts in: nothing to compare yet
    (2400, 300, 20, None),  # named the previous message; `diagnostics: null`: no divergence
    (0, 3020, 20, LOST),  # the prefix held, the cache missed, the provider lost its record
    (0, 3300, 20, miss("tools_changed", 3000)),  # the tools were reordered: both agree
    (3300, 300, 20, miss("system_changed", 3300)),  # the audit sees nothing move: disagree
]


def anthropic_lines() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Why is the total off?"}]
    lines = []
    for k, (read, written, uncached, diagnostics) in enumerate(ANTHROPIC_STEPS, start=1):
        tools = copy.deepcopy(TOOLS)
        if k >= 4:
            tools.reverse()
        body = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": SYSTEM,
            "tools": tools,
            "messages": copy.deepcopy(messages),
            "metadata": {"user_id": "verdict-test"},
            "cache_control": {"type": "ephemeral"},
            "diagnostics": {"previous_message_id": f"msg_{k - 1}" if k > 1 else None},
        }
        usage = {
            "input_tokens": uncached,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "output_tokens": 30,
        }
        lines.append(
            {
                "at": 1_767_258_000 + 10 * k,
                "path": "/v1/messages",
                "status": 200,
                "body": body,
                "usage": usage,
                "diagnostics": diagnostics,
                "response_id": f"msg_{k}",
            }
        )
        call = {"type": "tool_use", "id": f"toolu_{k}", "name": "read_file", "input": {}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": "x" * 400}
        messages.append({"role": "user", "content": [result]})
    return lines


OPENAI_STEPS: list[tuple[int, dict[str, Any] | None]] = [
    (0, None),
    (0, {"type": "comparison_response_not_found"}),
    (0, {"type": "cache_miss", "reason": "input_changed", "cache_missed_tokens": 2600}),
]


def openai_lines() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Summarise the incident."}]
    lines = []
    for k, (cached, diagnostics) in enumerate(OPENAI_STEPS, start=1):
        if k == 3:  # an earlier tool result rewritten in place
            items[2] = {**items[2], "output": "[cleared]"}
        body: dict[str, Any] = {
            "model": "gpt-5.6",
            "instructions": SYSTEM,
            "input": copy.deepcopy(items),
            "prompt_cache_key": "incident-7",
            "prompt_cache_options": {"ttl": "30m"},
        }
        if k > 1:
            body["prompt_cache_options"]["comparison_response_id"] = f"resp_{k - 1}"
        total = 2600 + 100 * k
        usage = {
            "input_tokens": total,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 20,
            "total_tokens": total + 20,
        }
        line: dict[str, Any] = {
            "at": 1_767_259_000 + 10 * k,
            "path": "/v1/responses",
            "status": 200,
            "body": body,
            "usage": usage,
            "response_id": f"resp_{k}",
        }
        if diagnostics is not None:
            line["diagnostics"] = diagnostics
        lines.append(line)
        call = {"type": "function_call", "call_id": f"c{k}", "name": "grep", "arguments": "{}"}
        items.append(call)
        items.append({"type": "function_call_output", "call_id": f"c{k}", "output": "y" * 300})
    return lines


def write_log(path: Path) -> Path:
    lines = anthropic_lines() + openai_lines()
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def report_of(tmp_path: Path) -> AuditReport:
    log = write_log(tmp_path / "verdicts.jsonl")
    return audit(read_log(log), source=log.name)


def by_format(report: AuditReport, name: str) -> ConversationReport:
    return next(c for c in report.conversations if c.format == name)


def test_each_anthropic_verdict_stands_beside_the_audits_reading(tmp_path: Path) -> None:
    found = by_format(report_of(tmp_path), "anthropic")
    first, clean, lost, reordered, odd = found.findings
    assert first.verdict is None  # opting in compares nothing
    assert clean.verdict is not None
    assert clean.verdict.kind == "unchanged"
    assert clean.verdict.compared_with == "msg_1"
    assert clean.agrees is True
    assert reordered.cause_kind == "tools-changed"
    assert reordered.verdict is not None
    assert reordered.verdict.reason == "tools_changed"
    assert reordered.verdict.missed_tokens == 3000
    assert reordered.agrees is True
    assert odd.cause_kind is None
    assert odd.verdict is not None
    assert odd.verdict.reason == "system_changed"
    assert odd.agrees is False
    # the provider lost its record: its miss, not the client's
    assert lost.verdict is not None
    assert lost.verdict.provider_loss
    assert lost.agrees is None
    assert lost.cause_kind == PROVIDER_LOST
    assert lost.divergence is None


def test_the_providers_loss_is_charged_apart_from_the_clients_busts(tmp_path: Path) -> None:
    report = report_of(tmp_path)
    found = by_format(report, "anthropic")
    assert [f.number for f in found.busts] == [4]  # the tools reordered: the client's
    assert [f.number for f in found.provider_lost] == [3]
    own = found.costs[0]
    assert own.provider == "anthropic:claude-sonnet-4-6"
    assert own.lost_by_cause[PROVIDER_LOST] > 0
    assert own.lost_by_cause["tools-changed"] > 0
    assert "unexplained" not in own.lost_by_cause
    responses = by_format(report, "openai-responses")
    assert [f.cause_kind for f in responses.findings] == [None, PROVIDER_LOST, "content-replaced"]
    last = responses.findings[2]
    assert last.verdict is not None
    assert last.verdict.reason == "input_changed"
    assert last.verdict.compared_with == "resp_2"
    assert last.agrees is True  # input_changed covers the rewritten message


def test_json_carries_the_verdict_agreement_and_both_counts(tmp_path: Path) -> None:
    document: dict[str, Any] = to_json(report_of(tmp_path))  # the asserts check its shape
    anthropic = next(c for c in document["conversations"] if c["format"] == "anthropic")
    assert anthropic["totals"]["client_busts"] == 1
    assert anthropic["totals"]["provider_lost"] == 1
    lost = anthropic["requests"][2]
    assert lost["cause_kind"] == PROVIDER_LOST
    assert lost["verdict"]["reason"] == "previous_message_not_found"
    assert lost["verdict"]["kind"] == "lost"
    odd = anthropic["requests"][4]
    assert (odd["cause_kind"], odd["verdict"]["reason"], odd["agrees"]) == (
        None,
        "system_changed",
        False,
    )
    assert PROVIDER_LOST in document["lost_by_cause_usd"]["anthropic:claude-sonnet-4-6"]


def test_the_terminal_shows_both_readings_and_who_lost_the_entry(tmp_path: Path) -> None:
    console = Console(record=True, width=200)
    for part in report_view(report_of(tmp_path)):
        console.print(part)
    text = console.export_text()
    assert "1 request(s) missed because the provider lost its entry" in text
    assert (
        "provider: Anthropic: previous_message_not_found (the provider lost its record of the "
        "earlier request: not the client's doing)  · the provider's loss: charged to it, not "
        "counted as a client bust"
    ) in text
    assert (
        "provider: Anthropic: tools_changed, about 3,000 input tokens missed  · agrees with "
        "the audit"
    ) in text
    assert "request 5 (line 5), cache rules: no bust" in text
    assert "Anthropic: system_changed, about 3,300 input tokens missed  · disagrees" in text
    assert "OpenAI: comparison_response_not_found" in text
    assert "the provider (it lost the entry) $" in text


def test_audit_json_from_the_command_line(tmp_path: Path) -> None:
    log = write_log(tmp_path / "verdicts.jsonl")
    result = CliRunner().invoke(main, ["audit", str(log), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    verdicts = [r["verdict"] for c in document["conversations"] for r in c["requests"]]
    assert sum(v is not None for v in verdicts) == 6


def test_a_logged_response_object_gives_openais_diagnostics(tmp_path: Path) -> None:
    lines = openai_lines()
    for line in lines:  # a log that kept the whole response object, as some gateways do
        found = line.pop("diagnostics", None)
        line["response"] = {"id": line["response_id"], "object": "response"}
        if found is not None:
            line["response"]["prompt_cache_diagnostics"] = found
    log = tmp_path / "gateway.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = audit(read_log(log)).conversations[0]
    assert [f.verdict.reason if f.verdict else None for f in found.findings] == [
        None,
        "comparison_response_not_found",
        "input_changed",
    ]


def test_a_verdict_on_another_pair_of_requests_is_shown_but_not_compared(tmp_path: Path) -> None:
    lines = anthropic_lines()
    # request 5 was compared with request 1's response, not with request 4's
    lines[4]["body"]["diagnostics"]["previous_message_id"] = "msg_1"
    log = tmp_path / "other-pair.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = audit(read_log(log)).conversations[0]
    odd = found.findings[4]
    assert odd.verdict is not None
    assert odd.verdict.compared_with == "msg_1"
    assert odd.agrees is None
    assert found.findings[3].agrees is True  # request 4 named request 3's response
