"""Misses with an intact prefix are explained by the cache rules (explicit markers and the
20-block lookback, the minimum cacheable length), keyless requests are grouped into the
right conversations, and the CLI prints, exports and fails cleanly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.workspace_cases import hang_guard
from warmloop.audit.report import AuditReport, _finite, audit
from warmloop.cli.main import main
from warmloop.exchange.log import read_log
from warmloop.messages import JsonData

TASK = "Audit the billing module and list every rounding error. " * 180  # ~2,500 tokens


def anthropic_log(
    path: Path, *, parallel: int, marked: bool, note: bool = False, idle: float = 90.0
) -> None:
    """Two requests `idle` seconds apart (past `miss_kinds.LANDED_SECONDS`: a miss the
    marker does not explain is an eviction the timing supports, issue 48); the second adds
    one turn of `parallel` tool calls (and a text block after their results with `note`:
    2 * parallel (+ 1) new blocks before its marker). Anthropic reports a miss on the
    second (nothing read) as it does when no marker reaches the last write."""
    task: dict[str, Any] = {"type": "text", "text": TASK}
    if marked:
        task["cache_control"] = {"type": "ephemeral"}
    first = {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": [task]}]}
    calls = [{"type": "tool_use", "id": f"t{k}", "name": "f", "input": {}} for k in range(parallel)]
    results: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": f"t{k}", "content": "ok " * 20}
        for k in range(parallel)
    ]
    if note:
        results.append({"type": "text", "text": "Carry on."})
    if marked:
        results[-1]["cache_control"] = {"type": "ephemeral"}
    second = {
        "model": "claude-sonnet-4-6",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": TASK}]},  # marker moved on
            {"role": "assistant", "content": calls},
            {"role": "user", "content": results},
        ],
    }
    usage = [
        {"input_tokens": 0, "cache_creation_input_tokens": 2600, "cache_read_input_tokens": 0},
        {"input_tokens": 0, "cache_creation_input_tokens": 3400, "cache_read_input_tokens": 0},
    ]
    lines = [
        json.dumps({"at": 100.0 + idle * k, "body": body, "usage": usage[k]})
        for k, body in enumerate((first, second))
    ]
    path.write_text("\n".join(lines) + "\n")


def only_cause(report: AuditReport) -> tuple[str | None, str | None]:
    (conversation,) = report.conversations
    second = conversation.findings[1]
    assert second.divergence is None  # the prefix was intact
    return second.cause_kind, second.cause


def test_a_marker_past_the_twenty_block_lookback_is_named(tmp_path: Path) -> None:
    log = tmp_path / "lookback.jsonl"
    anthropic_log(log, parallel=15, marked=True)  # 30 new blocks before the only marker
    report = audit(read_log(log))
    kind, cause = only_cause(report)
    assert kind == "cache-marker"
    assert "past the 20-block lookback: the nearest marker is 30 blocks after" in str(cause)
    (cost, *_) = report.conversations[0].costs
    assert cost.provider == "anthropic:claude-sonnet-4-6"
    assert cost.lost_by_cause["cache-marker"] > 0


@pytest.mark.parametrize(
    ("parallel", "note", "gap"), [(9, True, 19), (10, False, 20), (10, True, 21)]
)
def test_the_lookback_reaches_nineteen_blocks_back_and_not_twenty(
    tmp_path: Path, parallel: int, note: bool, gap: int
) -> None:
    # Anthropic's rule as the simulator has it: a marker at block b reads an entry ending at
    # block w when 0 <= b - w < 20.
    log = tmp_path / "edge.jsonl"
    anthropic_log(log, parallel=parallel, marked=True, note=note)
    kind, cause = only_cause(audit(read_log(log)))
    if gap < 20:
        assert kind == "evicted"  # inside the TTL, the marker reaching the write (issue 36)
    else:
        assert kind == "cache-marker"
        assert f"the nearest marker is {gap} blocks after" in str(cause)


def test_the_whole_loss_of_a_marker_miss_or_an_idle_miss_is_charged_to_it(
    tmp_path: Path,
) -> None:
    log = tmp_path / "marker.jsonl"
    anthropic_log(log, parallel=15, marked=True)
    (marker, *_) = audit(read_log(log)).conversations[0].costs
    assert marker.lost > 0
    assert marker.lost_by_cause == pytest.approx({"cache-marker": marker.lost})
    log = tmp_path / "idle.jsonl"
    anthropic_log(log, parallel=2, marked=True, idle=900.0)  # 15 minutes: past the 5m TTL
    report = audit(read_log(log))
    kind, cause = only_cause(report)
    assert kind == "idle"
    assert "idle 15.0 min since the previous request" in str(cause)
    (idle, *_) = report.conversations[0].costs
    assert idle.lost > 0
    assert idle.lost_by_cause == pytest.approx({"idle": idle.lost})


def test_a_marker_within_the_lookback_is_not_blamed(tmp_path: Path) -> None:
    log = tmp_path / "near.jsonl"
    anthropic_log(log, parallel=5, marked=True)  # 10 blocks: the read reaches the write
    assert only_cause(audit(read_log(log)))[0] == "evicted"  # inside the TTL (issue 36)


def test_no_marker_at_all_is_named(tmp_path: Path) -> None:
    log = tmp_path / "unmarked.jsonl"
    anthropic_log(log, parallel=2, marked=False)
    kind, cause = only_cause(audit(read_log(log)))
    assert kind == "cache-marker"
    assert str(cause).startswith("no cache marker on this request")


def test_a_prompt_below_the_minimum_is_never_cached(tmp_path: Path) -> None:
    log = tmp_path / "small.jsonl"
    messages = [{"role": "user", "content": "Short question?"}]
    bodies = [
        {"model": "gpt-5", "messages": messages},
        {"model": "gpt-5", "messages": [*messages, {"role": "assistant", "content": "A."}]},
    ]
    usage = [{"prompt_tokens": 600}, {"prompt_tokens": 640}]  # nothing cached (below 1,024)
    log.write_text(
        "\n".join(json.dumps({**b, "usage": u}) for b, u in zip(bodies, usage, strict=True))
    )
    kind, cause = only_cause(audit(read_log(log)))
    assert kind == "below-minimum"
    assert "gpt-5 caches from 1,024" in str(cause)


def test_keyless_requests_are_grouped_by_the_items_they_share(tmp_path: Path) -> None:
    def body(task: str, system: str, turns: int) -> dict[str, Any]:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": task}]
        messages += [{"role": "assistant", "content": f"step {k}"} for k in range(turns)]
        return {"model": "gpt-5", "messages": messages}

    bodies = [
        body("task A", "sys", 0),
        body("task B", "sys", 0),
        body("task A", "sys", 1),
        body("task B", "sys at 10:01", 1),  # a changing system prompt stays in its conversation
        body("task A", "sys", 2),
    ]
    log = tmp_path / "mixed.jsonl"
    log.write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    report = audit(read_log(log))
    assert [[f.line for f in c.findings] for c in report.conversations] == [[1, 3, 5], [2, 4]]
    assert report.conversations[1].findings[1].cause_kind == "system-changed"


def test_the_cli_prints_json_and_writes_the_html_page(tmp_path: Path) -> None:
    log = tmp_path / "lookback.jsonl"
    anthropic_log(log, parallel=15, marked=True)
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["audit", str(log), "--json", "--html", str(page)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (conversation,) = data["conversations"]
    assert conversation["requests"][1]["cause_kind"] == "cache-marker"
    assert conversation["totals"]["requests"] == 2
    assert page.read_text().startswith("<!DOCTYPE html>")
    table = CliRunner().invoke(main, ["audit", str(log), "--provider", "openai:gpt-5"])
    shown = " ".join(table.stdout.split())
    assert "request 2 (line 2), cache rules: cache marker past the 20-block lookback" in shown
    assert "anthropic:claude-sonnet-4-6" in shown
    assert "openai:gpt-5" in shown
    assert "deepseek" not in shown  # only the providers asked for (and the log's own)


def test_the_cli_fails_in_one_line(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["audit", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 1
    assert "cannot read" in missing.stderr
    bad = CliRunner().invoke(main, ["record", "--upstream", "ftp://example", "--port", "0"])
    assert bad.exit_code == 1
    assert "--upstream must be an http(s) URL" in bad.stderr


def test_the_cli_refuses_what_it_cannot_audit_and_prints_only_json(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    """A FIFO is refused, not waited on; an unknown --provider is named, not ignored; and
    absurd counts in a log (10^400 tokens) neither crash the audit nor make --json print a
    bare NaN or Infinity."""
    fifo = tmp_path / "requests.jsonl"
    os.mkfifo(fifo)
    with hang_guard(pytestconfig):  # the old audit waited for a writer forever
        refused = CliRunner().invoke(main, ["audit", str(fifo)])
    assert refused.exit_code == 1
    assert "is not a regular file" in refused.stderr
    log = tmp_path / "log.jsonl"
    anthropic_log(log, parallel=2, marked=True)
    unknown = CliRunner().invoke(main, ["audit", str(log), "--provider", "acme:rocket-1"])
    assert unknown.exit_code == 1
    assert "--provider 'acme:rocket-1' has no prices in the table" in unknown.stderr
    huge = [json.loads(line) for line in log.read_text().splitlines()]
    huge[1]["usage"]["cache_creation_input_tokens"] = 10**400
    log.write_text("\n".join(json.dumps(entry) for entry in huge) + "\n")
    printed = CliRunner().invoke(main, ["audit", str(log), "--json"])
    assert printed.exit_code == 0, printed.output
    json.loads(printed.stdout, parse_constant=lambda name: pytest.fail(f"bare {name} printed"))


def test_the_json_report_has_no_number_json_cannot_hold() -> None:
    document: JsonData = {"usd": float("nan"), "costs": [{"lost": float("inf")}, 1.5], "n": 3}
    assert json.dumps(_finite(document), allow_nan=False) == (
        '{"usd": null, "costs": [{"lost": null}, 1.5], "n": 3}'
    )


def test_the_html_page_never_overwrites_the_log_it_reads(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    anthropic_log(log, parallel=2, marked=True)
    before = log.read_text()
    (tmp_path / "link.jsonl").symlink_to(log)
    for target in (log, tmp_path / "link.jsonl"):
        refused = CliRunner().invoke(main, ["audit", str(log), "--html", str(target)])
        assert refused.exit_code == 1
        assert "is the log being audited" in refused.stderr
    assert log.read_text() == before


def test_odd_shapes_and_deep_nesting_are_skipped_or_audited_never_a_traceback(
    tmp_path: Path,
) -> None:
    """A body whose conversation is not a list, a line nested past the decoder's or the
    audit's depth, and items of the wrong kind: each line is skipped with its reason or
    audited as it is, and the report still prints (text, JSON, HTML)."""
    lines = [
        '{"input": 12}',
        '{"messages": {"a": 1}}',
        '{"model": "gpt-5", "messages": [{"role": "user", "content": '
        + "[" * 10_000
        + '"x"'
        + "]" * 10_000
        + "}]}",
        '{"model": "gpt-5", "messages": [{"role": "user", "content": '
        + "[" * 500
        + '"x"'
        + "]" * 500
        + "}]}",
        '{"messages": [1, 2, "x", null]}',
        '{"model": "gpt-5", "input": "hello"}',
        '{"contents": [{"parts": 5}]}',
    ]
    log = tmp_path / "odd.jsonl"
    log.write_text("\n".join(lines) + "\n")
    assert list(read_log(log).skipped) == [
        "line 1: 'input' is not a list (it is int)",
        "line 2: 'messages' is not a list (it is dict)",
        "line 3: nested too deeply to be a request",
        "line 4: nested more than 100 levels deep",
    ]
    page = tmp_path / "page.html"
    for args in ([], ["--json", "--html", str(page)]):
        result = CliRunner().invoke(main, ["audit", str(log), *args])
        assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["conversations"]) == 3
