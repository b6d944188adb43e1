"""Accuracy of the embedded models on three evals, graded: the example workspace and held out.

`example`: 13 questions with known answers in `examples/workspace` (the project's own
tiny codebase, which the worked examples' shapes were written beside). `held-out`: 61
questions over five standard-library packages (`benchmarks/heldout.py`) that no prompt
is tuned on. `unseen`: 43 questions over `xmlrpc` and the third-party `h11`, written
before issue 50's changes (`heldout.UNSEEN`). All ask lookups in one file, answers that
must first be found by search, questions that need two reads (a value in one file names
what to look up in another) and the function or class enclosing a raised message. Every
question is a fresh run of the CLI's agent (the same instructions, map and read-only
tools as `warmloop run`) on one engine per model; the answer is graded by a regular
expression. Reported per eval and model: questions answered correctly, by kind, mean
requests and mean seconds per question.

    python -m benchmarks local_eval [--model qwen2.5-coder-1.5b ...]
        [--eval held-out|example|unseen] [--max-steps 6] [--threads 2] [--only 3]
        [--match REGEX] [--kind "two reads"] [--verbose]
"""

from __future__ import annotations

import argparse
import re
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.heldout import QUESTIONS as HELD_OUT
from benchmarks.heldout import UNSEEN, Question, prepare
from warmloop import Agent, AssistantTurn, RunError, workspace_tools
from warmloop.agent.agent import DEFAULT_INSTRUCTIONS
from warmloop.providers.local.model import LocalModel
from warmloop.providers.local.models import MODELS
from warmloop.workspace import workspace_instructions
from warmloop.workspace.grounding import unread_answer
from warmloop.workspace.map_build import map_budget

WORKSPACE = Path(__file__).resolve().parent.parent / "examples" / "workspace"


QUESTIONS: tuple[Question, ...] = (
    Question("lookup", "What is the name of the warehouse?", r"\bnorth\b"),
    Question("lookup", "Which currency does the warehouse use?", r"\beur\b|\beuro"),
    Question("lookup", "At how many units or fewer is an item reordered?", r"(?<![\d.])5(?![\d.])"),
    Question("lookup", "How many units of bolts are in stock?", r"(?<![\d.])120(?![\d.])"),
    Question("lookup", "What is the SKU of the washers?", r"\bb300\b"),
    Question("lookup", "Which item is the featured item?", r"\bhinges?\b"),
    Question("search", "Which function computes the order total?", r"\border_total\b"),
    Question("search", "Which file defines the Stock class?", r"inventory/stock\.py"),
    Question("search", "What is the VAT rate?", r"0?\.21\b|\b21 ?%"),
    Question("search", "Which function loads the stock from a CSV file?", r"\bload_csv\b"),
    Question(
        "two reads",
        "What is the unit price of the featured item named in config.toml?",
        r"(?<![\d.])2\.40?(?!\d)",
    ),
    Question(
        "two reads",
        "In which file is the shipping fee function that order_total uses defined?",
        r"inventory/rates\.py|\brates\.py\b",
    ),
    Question(
        "enclosing",
        "Which method raises the error that only so many units are left?",
        r"\bremove\b",
    ),
)


@dataclass
class Outcome:
    """One question's run: the answer (or the error), graded, with its cost."""

    question: Question
    answer: str
    correct: bool
    requests: int
    seconds: float
    calls: list[str]


def ask(
    model: LocalModel, question: Question, workspace: Path, max_steps: int, instructions: str
) -> Outcome:
    """One fresh run of the CLI's agent on `question` over `workspace`, whose instructions
    (with its map) are `instructions`."""
    agent = Agent(
        model,
        workspace_tools(workspace),
        instructions=f"{DEFAULT_INSTRUCTIONS} {instructions}",
        max_steps=max_steps,
        check_outputs=unread_answer,
    )
    started = time.perf_counter()
    try:
        run = agent.run_sync(question.task)
        answer = str(getattr(run.outputs, "answer", ""))
        transcript, requests = run.transcript, len(run.requests)
    except RunError as exc:
        answer, transcript = f"(failed: {exc})", exc.transcript
        requests = sum(1 for m in transcript if isinstance(m, AssistantTurn))
    seconds = time.perf_counter() - started
    calls = [
        " / ".join(m.text.splitlines())
        if not m.tool_calls
        else "; ".join(f"{c.name} {c.arguments}" for c in m.tool_calls)
        for m in transcript
        if isinstance(m, AssistantTurn)
    ]
    correct = re.search(question.accept, answer, re.IGNORECASE) is not None
    return Outcome(question, answer, correct, requests, seconds, calls)


def evaluate(
    name: str,
    evals: dict[str, tuple[Question, ...]],
    max_steps: int,
    threads: int,
    verbose: bool,
) -> list[str]:
    """Every question of every eval on one model (one engine); returns a table row per eval."""
    model = LocalModel(name, n_threads=threads)
    workspaces = {"": WORKSPACE, **prepare()}
    budget = map_budget(model.facts.context_window)  # as `warmloop run` sizes the map
    mapped: dict[str, str] = {}
    rows = []
    for eval_name, questions in evals.items():
        outcomes = []
        for question in questions:
            root = workspaces[question.codebase]
            if question.codebase not in mapped:
                mapped[question.codebase] = workspace_instructions(root, budget_tokens=budget)[0]
            outcome = ask(model, question, root, max_steps, mapped[question.codebase])
            outcomes.append(outcome)
            if verbose:
                mark = "ok " if outcome.correct else "BAD"
                print(f"  {mark} [{question.kind}] {question.task} -> {outcome.answer!r}")
                print(f"      {outcome.requests} requests, {outcome.seconds:.1f} s")
                for call in outcome.calls:
                    print(f"      - {call[:200]}")
        rows.append(f"| {eval_name} | local:{name} | {summary(outcomes)} |")
    model.close()
    return rows


def summary(outcomes: list[Outcome]) -> str:
    """Correct answers, by kind, mean requests and mean seconds per question."""
    right = sum(o.correct for o in outcomes)
    steps = sum(o.requests for o in outcomes) / len(outcomes)
    seconds = sum(o.seconds for o in outcomes) / len(outcomes)
    kinds = sorted({o.question.kind for o in outcomes})
    by_kind = ", ".join(
        f"{k} {sum(o.correct for o in outcomes if o.question.kind == k)}/"
        f"{sum(1 for o in outcomes if o.question.kind == k)}"
        for k in kinds
    )
    share = f"{right}/{len(outcomes)} ({right / len(outcomes):.0%})"
    return f"{share} | {by_kind} | {steps:.1f} | {seconds:.1f}"


EVALS = {"example": QUESTIONS, "held-out": HELD_OUT, "unseen": UNSEEN}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    parser.add_argument("--eval", action="append", choices=sorted(EVALS))
    parser.add_argument("--max-steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", type=int, help="ask only the first N questions of each eval")
    parser.add_argument("--match", help="ask only the questions whose task matches this regex")
    parser.add_argument("--kind", action="append", help="ask only the questions of this kind")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    evals = {e: EVALS[e][: args.only] if args.only else EVALS[e] for e in args.eval or EVALS}
    if args.match:
        chosen = re.compile(args.match, re.IGNORECASE)
        evals = {e: tuple(q for q in qs if chosen.search(q.task)) for e, qs in evals.items()}
        evals = {e: qs for e, qs in evals.items() if qs}
    if args.kind:
        evals = {e: tuple(q for q in qs if q.kind in args.kind) for e, qs in evals.items()}
        evals = {e: qs for e, qs in evals.items() if qs}
    rows = []
    for name in args.model or list(MODELS):
        if args.verbose:
            print(f"local:{name}")
        rows += evaluate(name, evals, args.max_steps, args.threads, args.verbose)
    print("| eval | model | correct | by kind | mean requests | seconds per question |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(row)
