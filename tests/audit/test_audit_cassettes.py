"""The audit on real recorded traffic where it once made claims without support (issue 48,
must-show 2): pydantic-ai's VCR cassettes, each derived into the log `warmloop record` would
have written (`scripts/cassette_log.py`: the body as sent, the usage and response id read
by the recorder's own reader, times only where the response carries its own).

- `text_plain_document_anthropic`: two tasks from one template (the first user turn
  "summarize" then "describe") were joined, #0 -> #1 labelled `content-replaced`;
- `anthropic_text_parts_ahead_of_built_in_tool_call`: four variants of one task (today,
  tomorrow, yesterday, the day after tomorrow) with Anthropic's web search, #0 -> #3
  labelled `history-rewritten`; and with times, each later variant `opening-rewritten`,
  its opening sized as a share of a bill that is mostly search results, with no marker
  anywhere so nothing was ever written to read;
- `openai_include_raw_annotations_*`: byte-identical gpt-5.2 `web_search` requests
  labelled `evicted`, once "after 0.0 min idle", whose billed input is mostly the search
  results fetched during the call.

Each is audited as recorded, in every order of its requests, and with its times taken
away, set equal, or set five minutes apart: no claim at all.
"""

from __future__ import annotations

import copy
import json
from itertools import permutations
from pathlib import Path
from typing import Any

import pytest

from warmloop.audit.report import AuditReport, audit
from warmloop.exchange.log import read_log

HERE = Path(__file__).parent / "cassettes"
SOURCE = "pydantic/pydantic-ai@4fda38988f2939fa6ea9cdefcf120693e10ef491"
CASSETTES = {
    # pydantic/pydantic-ai @ 4fda389, tests/models/cassettes/test_multimodal_tool_returns/
    # test_text_plain_document_anthropic.yaml
    "text_plain_document_anthropic": 2,
    # pydantic/pydantic-ai @ 4fda389, tests/models/cassettes/test_anthropic/
    # test_anthropic_text_parts_ahead_of_built_in_tool_call.yaml
    "anthropic_text_parts_ahead_of_built_in_tool_call": 4,
    # pydantic/pydantic-ai @ 4fda389, tests/models/cassettes/test_openai_responses/
    # test_openai_include_raw_annotations_non_streaming.yaml
    "openai_include_raw_annotations_non_streaming": 1,
    # pydantic/pydantic-ai @ 4fda389, tests/models/cassettes/test_openai_responses/
    # test_openai_include_raw_annotations_streaming.yaml
    "openai_include_raw_annotations_streaming": 2,
}
"""Each derived log and the conversations it holds (its variants apart, a repeat joined)."""


def recorded(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HERE / f"{name}.jsonl").read_text().splitlines()]


def audited(tmp_path: Path, lines: list[dict[str, Any]]) -> AuditReport:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return audit(read_log(log))


def claims(report: AuditReport) -> list[tuple[int, str]]:
    return [
        (f.line, f.cause_kind)
        for c in report.conversations
        for f in c.findings
        if f.cause_kind is not None
    ]


def timings(lines: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The log as recorded, and with its times taken away, set equal, set minutes apart."""
    bare = [{k: v for k, v in line.items() if k not in ("at", "answered_at")} for line in lines]
    return {
        "recorded": lines,
        "no answer times": [
            {k: v for k, v in line.items() if k != "answered_at"} for line in lines
        ],
        "one second": [{**line, "at": 1_000.0} for line in bare],
        "five minutes apart": [{**line, "at": 1_000.0 + 300 * n} for n, line in enumerate(bare)],
    }


@pytest.mark.parametrize("name", sorted(CASSETTES))
def test_the_recorded_pairs_carry_no_claim_in_any_order_or_timing(
    tmp_path: Path, name: str
) -> None:
    lines = recorded(name)
    for order in permutations(lines):
        for timing, log in timings(list(order)).items():
            report = audited(tmp_path, log)
            where = f"{name}, {timing}, order {[lines.index(line) for line in order]}"
            assert claims(report) == [], where
            assert len(report.conversations) == CASSETTES[name], where


def test_the_web_search_pair_is_one_conversation_that_shares_only_its_text(
    tmp_path: Path,
) -> None:
    """The two byte-identical gpt-5.2 requests: one conversation, the second a repeat of the
    first 5 s after it was answered; billed 8,530 and 8,236 input tokens, mostly search
    results, against a request text of some 64 tokens: below the minimum, no miss to name."""
    report = audited(tmp_path, recorded("openai_include_raw_annotations_non_streaming"))
    (conversation,) = report.conversations
    first, second = conversation.findings
    assert (first.prompt_tokens, second.prompt_tokens) == (8_530, 8_236)
    assert second.parent == 1
    assert second.idle_seconds == 5.0
    assert second.reusable < 100
    assert second.cause_kind is None


def test_a_written_opening_is_still_not_sized_from_search_results(tmp_path: Path) -> None:
    """The web-search variants, as if the first had written its whole bill to the cache (a
    client that marks its system prompt): the opening the variants share is the system
    prompt and the tool, some 50 tokens of text, below Claude's minimum; the 16,083 billed
    tokens are mostly search results and no part of it."""
    lines = copy.deepcopy(recorded("anthropic_text_parts_ahead_of_built_in_tool_call"))
    usage = lines[0]["usage"]
    usage["cache_creation_input_tokens"] = usage.pop("input_tokens")
    usage["input_tokens"] = 0
    for timing, log in timings(lines).items():
        assert claims(audited(tmp_path, log)) == [], timing
