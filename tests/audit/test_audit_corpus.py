"""The audit on real frameworks' request logs: each log of `tests/audit/corpus` was recorded
through `warmloop record` from an agent framework installed from PyPI (pinned in
`benchmarks/framework_corpus/requirements.txt`) running a scripted 16-tool-call task against
a loopback API (`python -m benchmarks framework_corpus` records them again). Beside each log
is its truth, computed without the audit (`benchmarks/framework_corpus/truth.py`): which
requests are one conversation (the generator's tasks), which requests do not extend their
predecessor's canonical bytes, and the dollars lost against a perfect append-only prefix
under OpenAI's, Anthropic's and Gemini's caching rules. The audit must agree on all three."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from warmloop.audit.report import audit, to_json
from warmloop.exchange.log import read_log

CORPUS = Path(__file__).parent / "corpus"
LOGS = sorted(CORPUS.glob("*.jsonl.gz"))
PROVIDERS = ("openai:gpt-5", "anthropic:claude-sonnet-4-6", "gemini:gemini-2.5-flash")
RELATIVE = 0.01
"""The audit's dollars lost must be within 1% of the truth's."""
FLOOR = 0.001
"""...or, where the truth loses (next to) nothing, within 0.1% of the dollars as sent."""


@dataclass(frozen=True)
class Case:
    name: str
    report: dict[str, Any]
    truth: dict[str, Any]


def _name(log: Path) -> str:
    return log.name.removesuffix(".jsonl.gz")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    found: dict[str, Case] = {}
    scratch = tmp_path_factory.mktemp("corpus")
    for log in LOGS:
        plain = scratch / f"{_name(log)}.jsonl"
        plain.write_bytes(gzip.decompress(log.read_bytes()))
        report = to_json(audit(read_log(plain), source=plain.name, providers=PROVIDERS))
        truth_file = log.with_name(f"{_name(log)}.truth.json")
        found[_name(log)] = Case(_name(log), report, json.loads(truth_file.read_text()))
    return found


def lines(conversation: dict[str, Any]) -> list[int]:
    return [request["line"] for request in conversation["requests"]]


def test_the_corpus_holds_every_wire_and_at_least_four_frameworks() -> None:
    frameworks = {_name(log).split("_")[0] for log in LOGS}
    assert len(frameworks) >= 4, frameworks
    paths = set()
    for log in LOGS:
        with gzip.open(log, "rt", encoding="utf-8") as handle:
            paths |= {json.loads(line)["path"] for line in handle}
        truth = json.loads(log.with_name(f"{_name(log)}.truth.json").read_text())
        # 15+ tool calls and the answer (a subagent's conversation may be shorter)
        assert max(len(c["lines"]) for c in truth["conversations"]) >= 16, log.name
    assert paths == {"/v1/chat/completions", "/v1/responses", "/v1/messages"}


@pytest.mark.parametrize("name", [_name(log) for log in LOGS])
def test_the_audit_finds_the_conversations_of_the_truth(cases: dict[str, Case], name: str) -> None:
    case = cases[name]
    found = sorted(lines(c) for c in case.report["conversations"])
    expected = sorted(c["lines"] for c in case.truth["conversations"])
    assert found == expected, (
        f"{name}: the audit found {len(found)} conversations of sizes "
        f"{[len(c) for c in found]}, the truth has {len(expected)} of sizes "
        f"{[len(c) for c in expected]}"
    )


@pytest.mark.parametrize("name", [_name(log) for log in LOGS])
def test_the_audit_finds_every_bust_at_its_request_with_a_cause(
    cases: dict[str, Case], name: str
) -> None:
    case = cases[name]
    requests = [r for c in case.report["conversations"] for r in c["requests"]]
    found = sorted(r["line"] for r in requests if r["divergence"] is not None)
    expected = sorted(line for c in case.truth["conversations"] for line in c["busts"])
    assert found == expected, f"{name}: busts at lines {found}, the truth has {expected}"
    uncaused = [r["line"] for r in requests if r["divergence"] is not None and not r["cause"]]
    assert not uncaused, f"{name}: busts without a cause at lines {uncaused}"


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("name", [_name(log) for log in LOGS])
def test_the_audit_prices_the_loss_as_the_truth_does(
    cases: dict[str, Case], name: str, provider: str
) -> None:
    case = cases[name]
    costs = [
        cost
        for conversation in case.report["conversations"]
        for cost in conversation["costs"]
        if cost["provider"] == provider
    ]
    lost = sum(cost["lost_usd"] for cost in costs)
    truth = [c["providers"][provider] for c in case.truth["conversations"]]
    expected = sum(t["lost_usd"] for t in truth)
    tolerance = max(RELATIVE * abs(expected), FLOOR * sum(t["actual_usd"] for t in truth))
    assert abs(lost - expected) <= tolerance, (
        f"{name} under {provider}: the audit loses ${lost:.5f}, the truth ${expected:.5f} "
        f"(tolerance ${tolerance:.5f})"
    )
