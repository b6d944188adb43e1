"""Requests are grouped by what each carries on of an earlier one, at the character level:
a ReAct loop that rebuilds one user message, a trailing instruction below a growing
trajectory, a sliding window, conversations behind one system prompt interleaved in time,
subagents and summary requests beside their parent, and a fork, each from a synthetic log
in the OpenAI Chat shape; rebuilt prompts are reported with the tokens and dollars they cost."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import warmloop.exchange.grouping as conversations_module
from warmloop.audit.report import AuditReport, _entries, audit, to_json
from warmloop.cli.main import main
from warmloop.exchange.anchors import CANDIDATES
from warmloop.exchange.grouping import Conversation, Entry, best_parent, group
from warmloop.exchange.log import LogContents, LoggedRequest, read_log

SYSTEM = "You are a careful coding agent. Read before you edit; cite the lines you change. " * 20
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the repository and return its lines. " * 8,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
WORDS = [
    "parser",
    "cache",
    "ledger",
    "invoice",
    "rounding",
    "module",
    "retry",
    "socket",
    "budget",
    "schema",
]


def observation(seed: int, size: int = 600) -> str:
    """A tool output: seeded words, different for every seed."""
    chooser = random.Random(seed)
    return " ".join(chooser.choice(WORDS) for _ in range(size // 7))


def chat(messages: list[dict[str, Any]], system: str = SYSTEM) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "tools": TOOLS,
        "messages": [{"role": "system", "content": system}, *messages],
    }


def call(n: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{n}.py"})},
            }
        ],
    }


def result(n: int, seed: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"call_{n}", "content": observation(seed)}


def task(name: str) -> dict[str, Any]:
    return {"role": "user", "content": f"Task {name}: " + observation(hash(name) % 1000, 300)}


def steps(name: str, count: int, seed: int) -> list[list[dict[str, Any]]]:
    """The messages of an append-only loop's requests 1..count."""
    messages = [task(name)]
    out = [list(messages)]
    for n in range(1, count):
        messages += [call(n), result(n, seed + n)]
        out.append(list(messages))
    return out


def audited(tmp_path: Path, bodies: Sequence[dict[str, Any]]) -> AuditReport:
    log = tmp_path / "requests.jsonl"
    lines = [json.dumps({"at": 1000.0 + 5 * k, "body": b}) for k, b in enumerate(bodies)]
    log.write_text("\n".join(lines) + "\n")
    return audit(read_log(log))


def group_of(tmp_path: Path, bodies: Sequence[dict[str, Any]]) -> list[Conversation]:
    log = tmp_path / "grouped.jsonl"
    log.write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    return group(_entries(read_log(log), []))


def lines(report: AuditReport) -> list[list[int]]:
    return [[f.line for f in c.findings] for c in report.conversations]


def causes(report: AuditReport) -> list[dict[int, str | None]]:
    """Per conversation, the busts (a divergence from the request continued) by line; the
    cache rules' misses of these small estimated prompts are not what is tested here."""
    return [
        {f.line: f.cause_kind for f in c.findings if f.divergence is not None}
        for c in report.conversations
    ]


QUESTION = {
    "a": "Which function of the billing module rounds invoice totals twice, and where?",
    "b": "Why does the socket retry loop give up after the third timeout on slow links?",
}


def react(question: str, step: int, seed: int) -> dict[str, Any]:
    """A framework's ReAct request: one user message rebuilt every step, the scratchpad
    growing inside it and the instruction after it moving down."""
    scratchpad = "".join(
        f"Thought: I read file {i}.\nAction: read_file\nObservation: {observation(seed + i)}\n"
        for i in range(step)
    )
    text = (
        "Answer the question as best you can, using the tools.\n"
        f"Question: {question}\n{scratchpad}"
        "Remember: reply with Thought, then Action or Final Answer.\nThought:"
    )
    return chat([{"role": "user", "content": text}])


def test_a_rebuilt_user_message_is_one_conversation_with_its_cost(tmp_path: Path) -> None:
    bodies = [react(QUESTION[q], step, 10 if q == "a" else 50) for step in range(22) for q in "ab"]
    report = audited(tmp_path, bodies)
    assert lines(report) == [list(range(1, 44, 2)), list(range(2, 45, 2))]
    for conversation in report.conversations:
        assert [f.parent for f in conversation.findings] == [None, *range(1, 22)]
        later = conversation.findings[1:]
        assert {f.cause_kind for f in later} == {"message-rebuilt"}
        assert all("text inserted before the end of message 1" in str(f.cause) for f in later)
        assert all(0.9 < f.reusable / f.limit < 1 for f in later)  # 93-99% shared
        # Automatic caching reads the shared start of the rebuilt message (whole 128-token
        # increments), not only the system prompt and tools before it.
        assert later[-1].cached >= later[-1].reusable - 128
    (rebuilt,) = [t for t in report.causes if t.kind == "message-rebuilt"]
    assert rebuilt.requests == 42
    # The instruction after the scratchpad (about 17 tokens) is re-sent every step.
    assert 10 < rebuilt.resent_per_request < 40
    assert rebuilt.lost_usd["openai:gpt-5"] > 0
    document: dict[str, Any] = to_json(report)  # read loosely: the asserts check its shape
    (entry,) = [c for c in document["causes"] if c["kind"] == "message-rebuilt"]
    assert entry["requests"] == 42
    assert entry["resent_tokens"] == rebuilt.resent_tokens
    printed = CliRunner(env={"COLUMNS": "240"}).invoke(
        main, ["audit", str(tmp_path / "requests.jsonl")]
    )
    table = printed.stdout.split("causes over the whole log")[1]
    row = next(line for line in table.splitlines() if "rebuilt message (text" in line)
    assert " 42 " in row
    assert f" {rebuilt.resent_tokens:,} " in row


def test_a_trailing_instruction_below_a_growing_trajectory_stays_one_conversation(
    tmp_path: Path,
) -> None:
    reminder = {"role": "user", "content": "Reminder: call submit once every file is read."}
    bodies = [chat([*messages, reminder]) for messages in steps("T", 8, 0)]
    report = audited(tmp_path, bodies)
    assert lines(report) == [list(range(1, 9))]
    assert causes(report) == [{k: "messages-inserted" for k in range(2, 9)}]
    second = report.conversations[0].findings[1]
    assert "2 message(s) inserted before message 2" in str(second.cause)


def test_a_sliding_window_that_drops_the_oldest_turns_stays_one_conversation(
    tmp_path: Path,
) -> None:
    window = 6
    bodies = [chat([m[0], *m[1:][-window:]]) for m in steps("W", 12, 0)]
    report = audited(tmp_path, bodies)
    assert lines(report) == [list(range(1, 13))]
    found = causes(report)[0]
    assert found
    assert set(found.values()) == {"messages-removed"}
    assert min(found) == 5  # the first request whose window had to drop a turn


def test_a_window_of_the_last_messages_that_drops_the_task_stays_one_conversation(
    tmp_path: Path,
) -> None:
    bodies = [chat(m[-8:]) for m in steps("X", 12, 0)]  # the last 8 messages, task included
    report = audited(tmp_path, bodies)
    assert lines(report) == [list(range(1, 13))]
    assert set(causes(report)[0].values()) == {"messages-removed"}


def templated(name: str, count: int) -> list[list[dict[str, Any]]]:
    """Requests of one task from a template: the same wording, the same calls and results
    but for the module's name and a few numbers (a scripted task of a framework)."""
    first: dict[str, Any] = {
        "role": "user",
        "content": f"[task:{name}] Review the module `{name}.py`: read it and its neighbours, "
        "search for its callers, and compute how many lines change. Report one paragraph.",
    }
    messages: list[dict[str, Any]] = [first]
    out = [messages]
    for n in range(1, count):
        listing = "".join(
            f"def helper_{i}(value: int) -> int:\n    return value * {i} + {n}\n" for i in range(30)
        )
        messages = [
            *messages,
            call(n),
            {"role": "tool", "tool_call_id": f"call_{n}", "content": f"src/{name}.py\n{listing}"},
        ]
        out.append(messages)
    return out


def test_two_tasks_from_one_template_interleaved_stay_apart(tmp_path: Path) -> None:
    alpha, beta = templated("alpha", 6), templated("beta", 6)
    bodies = [chat(requests[k]) for k in range(6) for requests in (alpha, beta)]
    report = audited(tmp_path, bodies)
    assert lines(report) == [list(range(1, 12, 2)), list(range(2, 13, 2))]
    assert causes(report) == [{}, {}]


def test_conversations_behind_one_system_prompt_interleaved_stay_apart(tmp_path: Path) -> None:
    names = ["A", "B", "C", "D", "E"]
    queues = {name: steps(name, 6, 100 * k) for k, name in enumerate(names)}
    order = [name for name in names for _ in range(6)]
    random.Random(7).shuffle(order)
    bodies, expected = [], {name: [] for name in names}  # type: ignore[var-annotated]
    for name in order:
        bodies.append(chat(queues[name].pop(0)))
        expected[name].append(len(bodies))
    report = audited(tmp_path, bodies)
    assert sorted(lines(report)) == sorted(expected.values())
    assert causes(report) == [{}] * 5


def test_subagents_and_summary_requests_beside_their_parent_leave_it_whole(
    tmp_path: Path,
) -> None:
    parent = steps("P", 8, 0)
    sub = steps("S", 3, 500)
    helper = "You search the repository for one symbol and report where it is used. " * 10
    summarise = {"role": "user", "content": "Summarize the conversation so far in five lines."}
    transcript = json.dumps(parent[5])
    bodies = [chat(m) for m in parent[:4]]  # lines 1-4
    for k in range(3):  # lines 5-10: the subagent's requests and the parent's, in turn
        bodies += [chat(sub[k], system=helper), chat(parent[4 + k])]
    bodies.append(chat([*parent[6], summarise]))  # line 11: a summary of the parent
    bodies.append(  # line 12: a summariser that reads the transcript as text
        chat([{"role": "user", "content": transcript}], system="You summarise transcripts.")
    )
    bodies.append(chat(parent[7]))  # line 13
    report = audited(tmp_path, bodies)
    by_line = {f.line: (c.number, f) for c in report.conversations for f in c.findings}
    home = by_line[1][0]
    main_line = [1, 2, 3, 4, 6, 8, 10, 13]
    assert {by_line[n][0] for n in main_line} == {home}
    assert [by_line[n][1].parent for n in main_line[1:]] == [
        by_line[n][1].number for n in main_line[:-1]
    ]
    assert len({by_line[n][0] for n in (5, 7, 9)} - {home}) == 1  # the subagent, apart
    assert by_line[12][0] not in {home, by_line[5][0]}
    assert causes(report) == [{}] * len(report.conversations)


def test_a_fork_that_continues_one_conversation_twice_is_one_conversation(
    tmp_path: Path,
) -> None:
    trunk = steps("F", 3, 0)
    end = trunk[-1]
    branches = {
        "a": [[*end, call(10 + n), result(10 + n, 200 + n)] for n in range(1, 4)],
        "b": [[*end, call(20 + n), result(20 + n, 300 + n)] for n in range(1, 4)],
    }
    for branch in branches.values():
        for n in range(1, 3):
            branch[n] = branch[n - 1] + branch[n][-2:]
    bodies = [chat(m) for m in trunk]
    bodies += [chat(branches[b][n]) for n in range(3) for b in "ab"]  # lines 4-9
    bodies += [chat(branches["a"][-1] + [call(99), result(99, 999)])]  # line 10
    report = audited(tmp_path, bodies)
    assert lines(report) == [list(range(1, 11))]
    assert causes(report) == [{}]
    parents = [f.parent for f in report.conversations[0].findings]
    assert parents == [None, 1, 2, 3, 3, 4, 5, 6, 7, 8]
    # Branch b's first request reads the whole trunk: nothing after it is re-sent.
    fifth = report.conversations[0].findings[4]
    assert fifth.reusable == fifth.limit


def test_a_lookup_offers_a_bounded_number_of_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offered: list[int] = []

    def counting(entry: Entry, candidates: Sequence[Entry]) -> int | None:
        offered.append(len(candidates))
        return best_parent(entry, candidates)

    monkeypatch.setattr(conversations_module, "best_parent", counting)
    bodies = [chat([task(f"N{k}")]) for k in range(120)]
    report = audited(tmp_path, bodies)
    assert len(report.conversations) == 120
    assert max(offered) == CANDIDATES  # never every conversation


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=5),
    st.randoms(use_true_random=False),
)
def test_interleaved_append_only_conversations_group_back_exactly(
    lengths: list[int], chooser: random.Random
) -> None:
    queues = {k: steps(f"K{k}", n, 1000 * k) for k, n in enumerate(lengths)}
    order = [k for k, n in enumerate(lengths) for _ in range(n)]
    chooser.shuffle(order)
    expected: dict[int, list[int]] = {k: [] for k in queues}
    records = []
    for line, k in enumerate(order, start=1):
        records.append(LoggedRequest(line=line, body=chat(queues[k].pop(0)), at=float(line)))
        expected[k].append(line)
    report = audit(LogContents(tuple(records), ()))
    assert sorted(lines(report)) == sorted(expected.values())
    for conversation in report.conversations:
        assert [f.parent for f in conversation.findings] == [
            None,
            *range(1, len(conversation.findings)),
        ]
        assert all(f.divergence is None for f in conversation.findings)


# Round three (issue 30): two tasks from one template are siblings, not a rewrite ----------


def template_task(name: str, count: int, seed: int) -> list[list[dict[str, Any]]]:
    """One task's append-only requests from a long template naming a service: two tasks
    differ only by the name, which is long (so each adds as much as it drops)."""
    text = (
        "You are reviewing a service for the platform team. "
        * 6
        + f"Service under review: {name}. Read its handlers, list each unsafe call with its "
        "file and line, and propose a fix for each. " + observation(5, 1500)
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    out = [list(messages)]
    for n in range(1, count):
        messages += [call(n), result(n, seed + n)]
        out.append(list(messages))
    return out


def test_two_tasks_from_one_template_in_turn_are_siblings_not_a_rewrite(tmp_path: Path) -> None:
    first = template_task("payments-ledger-reconciler-service", 3, 10)
    second = template_task("notifications-fanout-dispatcher-xy", 3, 50)
    log = tmp_path / "requests.jsonl"
    rows = []
    for k, body in enumerate(chat(m) for m in first + second):
        prompt = 2000 + 300 * k
        # the second task's first request: the provider read all the two tasks share
        cached = {0: 0, 3: 1800}.get(k, prompt - 300)
        usage = {"prompt_tokens": prompt, "prompt_tokens_details": {"cached_tokens": cached}}
        rows.append(json.dumps({"at": 1000.0 + 5 * k, "body": body, "usage": usage}))
    log.write_text("\n".join(rows) + "\n")
    report = audit(read_log(log))
    assert lines(report) == [[1, 2, 3], [4, 5, 6]]
    assert [f.cause_kind for c in report.conversations for f in c.findings] == [None] * 6
