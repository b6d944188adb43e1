"""The answer check replayed over a logged eval, without the model.

`local_eval --verbose` logs each question's calls. The embedded model is greedy, so a run
asks every question as the run before it did until a check answers differently; what a
change to the answer check moves is therefore the checks it answers differently on the
logged calls. This replays them: each question's calls run again over its workspace (the
same read-only tools, the same instructions and map), and every submit is checked by the
tree's `unread_answer`. Printed, one line per submit: the question, the answer, and
`accepted` or the whole refusal (two refusals may differ in their last words). Run it in
two trees and diff the outputs: the lines that differ are the questions a change moves
(ask only those again, with `local_eval --match`); the others' runs are the logged ones.
A call cut short by the log (its 200 characters) replays as a tool error in both trees.

    python -m benchmarks check_replay LOG [LOG ...] [--width 0]
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from benchmarks.heldout import QUESTIONS as HELD_OUT
from benchmarks.heldout import UNSEEN, Question, prepare
from benchmarks.local_eval import QUESTIONS as EXAMPLE
from benchmarks.local_eval import WORKSPACE
from warmloop import Tool, workspace_tools
from warmloop.agent.agent import DEFAULT_INSTRUCTIONS
from warmloop.messages import AssistantTurn, Message, SystemText, ToolCall, ToolResult, UserText
from warmloop.providers.local.models import DEFAULT_N_CTX
from warmloop.tools.gateway import SUBMIT
from warmloop.workspace import workspace_instructions
from warmloop.workspace.grounding import unread_answer
from warmloop.workspace.map_build import map_budget

HEAD = re.compile(r"^  (?:ok |BAD) \[(?P<kind>[^\]]+)\] (?P<task>.*) -> .*$")
"""A question's first line in `local_eval --verbose`'s log."""
CALLS = re.compile(r"^      - (?P<calls>\w+ \{.*)$")
"""A turn's calls, `name {arguments}` joined by `; `."""
ONE_CALL = re.compile(r"; (?=\w+ \{)")


class Answer(BaseModel):
    """The eval's output: one answer."""

    answer: str


@dataclass
class Logged:
    """One question of a log: its task, and each turn's calls as (name, arguments)."""

    kind: str
    task: str
    turns: list[list[tuple[str, str]]] = field(default_factory=list)


def logged(lines: Iterable[str]) -> Iterator[Logged]:
    """The questions of a `local_eval --verbose` log, in order."""
    current: Logged | None = None
    for line in lines:
        line = line.rstrip("\n")
        if (head := HEAD.match(line)) is not None:
            if current is not None:
                yield current
            current = Logged(head["kind"], head["task"])
        elif (calls := CALLS.match(line)) is not None and current is not None:
            turn = [tuple(call.split(" ", 1)) for call in ONE_CALL.split(calls["calls"])]
            current.turns.append([(name, arguments) for name, arguments in turn])
    if current is not None:
        yield current


def _run(tool: Tool | None, arguments: str) -> tuple[str, bool]:
    """What a logged call returns now: the tool's output, or its error as the model saw it."""
    if tool is None:
        return "unknown tool", True
    try:
        return str(tool.function(**json.loads(arguments))), False
    except Exception as exc:  # the eval's tools send every error to the model
        return f"{type(exc).__name__}: {exc}", True


def checks(
    question: Question, opening: str, item: Logged, root: Path
) -> Iterator[tuple[str, str | None]]:
    """Each submit of `item` with the check's answer to it (None: accepted)."""
    tools = {tool.spec.name: tool for tool in workspace_tools(root)}
    messages: list[Message] = [
        SystemText(f"{DEFAULT_INSTRUCTIONS} {opening}"),
        UserText(question.task),
    ]
    for k, turn in enumerate(item.turns):
        calls = tuple(ToolCall(f"call_{k}_{n}", name, args) for n, (name, args) in enumerate(turn))
        messages.append(AssistantTurn(tool_calls=calls))
        for call in calls:
            if call.name == SUBMIT:
                try:
                    value = str(json.loads(call.arguments).get("answer", ""))
                except (ValueError, AttributeError):
                    value = call.arguments
                why = unread_answer(Answer(answer=value), messages)
                yield value, why
                messages.append(
                    ToolResult(call.id, SUBMIT, why or "accepted", is_error=why is not None)
                )
            else:
                content, error = _run(tools.get(call.name), call.arguments)
                messages.append(ToolResult(call.id, call.name, content, is_error=error))


def replay(logs: Iterable[Path], width: int) -> Iterator[str]:
    """The lines to print: per submit of every logged question the tree knows."""
    questions = {q.task: q for q in (*HELD_OUT, *UNSEEN, *EXAMPLE)}
    roots = {"": WORKSPACE, **prepare()}
    openings: dict[str, str] = {}
    for log in logs:
        for item in logged(log.read_text(encoding="utf-8").splitlines()):
            question = questions.get(item.task)
            if question is None:
                yield f"? [{item.kind}] {item.task}: not a question of this tree's evals"
                continue
            root = roots[question.codebase]
            if question.codebase not in openings:
                budget = map_budget(DEFAULT_N_CTX)  # as local_eval sizes the map
                openings[question.codebase] = workspace_instructions(root, budget_tokens=budget)[0]
            for value, why in checks(question, openings[question.codebase], item, root):
                verdict = "accepted" if why is None else f"refused: {why}"
                line = f"[{item.kind}] {item.task} | {value!r} -> {verdict}"
                yield line[:width] if width else line


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks check_replay", description=__doc__)
    parser.add_argument("logs", nargs="+", type=Path, help="`local_eval --verbose` logs")
    parser.add_argument(
        "--width", type=int, default=0, help="characters a line keeps (0: the whole refusal)"
    )
    args = parser.parse_args()
    missing = [str(log) for log in args.logs if not log.is_file()]
    if missing:
        parser.error(f"no such log: {', '.join(missing)} (write one with local_eval --verbose)")
    for line in replay(args.logs, args.width):
        print(line)
