"""Startup of the embedded model: the first and second question of a fresh process.

Two arms, each in new processes, on the example workspace with the CLI's agent (the same
instructions, tools and answer check as `warmloop run`):

  one process   asks question 1, then question 2, in one fresh process
  two processes asks question 1 in a fresh process, then question 2 in another

Each question's seconds are split by where they went: imports (before the first
question only), loading the engine (llama.cpp maps the weights), the saved opening
(read, checked and restored, or evaluated and saved when none was there), tokenising
prompts, building grammars and generating steps (prefill of the rest of the
prompt and decoding). What the first question pays beyond the second is the startup.

    python -m benchmarks local_startup [--model qwen2.5-coder-1.5b] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

QUESTIONS = ("What is the name of the warehouse?", "How many units of bolts are in stock?")
PHASES = ("imports", "engine", "opening", "tokenise", "grammar", "first token", "decode")
"""Where a question's seconds go, none inside another; `opening read` (reading and checking
the saved file) is reported beside them as part of `opening`."""


def timed(spent: dict[str, float], phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, its seconds added to `spent[phase]`."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[phase] += time.perf_counter() - started

    return wrapper


def child(model_name: str, threads: int, questions: list[str]) -> None:
    """Ask `questions` in this process; print one JSON line of seconds per question."""
    started = time.perf_counter()
    from benchmarks.heldout import Question
    from benchmarks.local_eval import WORKSPACE, ask
    from warmloop.providers.local import model as local
    from warmloop.providers.local.openings import OpeningCache
    from warmloop.workspace import workspace_instructions
    from warmloop.workspace.map_build import map_budget

    spent: dict[str, float] = defaultdict(float)
    spent["imports"] = time.perf_counter() - started
    local.LocalModel.engine = timed_engine(spent, local.LocalModel.engine)  # type: ignore[method-assign,assignment]
    OpeningCache.load = timed(spent, "opening read", OpeningCache.load)  # type: ignore[method-assign]
    warm = timed(spent, "opening", local.LocalModel._warm_opening)
    local.LocalModel._warm_opening = warm  # type: ignore[method-assign]
    local.prompt_parts = timed(spent, "tokenise", local.prompt_parts)  # type: ignore[attr-defined]
    local.LocalModel.grammar = timed(spent, "grammar", local.LocalModel.grammar)  # type: ignore[method-assign]
    local.LocalModel._generate = timed_steps(spent, local.LocalModel._generate)  # type: ignore[method-assign]
    model = local.LocalModel(model_name, n_threads=threads)
    budget = map_budget(model.facts.context_window)  # as `warmloop run` sizes the map
    mapped = workspace_instructions(WORKSPACE, budget_tokens=budget)[0]
    for task in questions:
        began = time.perf_counter()
        outcome = ask(model, Question("lookup", task, ""), WORKSPACE, 6, mapped)
        total = time.perf_counter() - began + spent.get("imports", 0.0)
        row = {"question": task, "answer": outcome.answer, "requests": outcome.requests}
        row |= {"seconds": round(total, 2)} | {k: round(v, 2) for k, v in spent.items()}
        print(json.dumps(row), flush=True)
        spent.clear()
    model.close()


def timed_engine(spent: dict[str, float], engine: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`LocalModel.engine`, timed only when it loads (every other call is a lookup)."""

    def wrapper(self: Any) -> Any:
        if self._llama is not None:
            return self._llama
        return timed(spent, "engine", engine)(self)

    return wrapper


def timed_steps(
    spent: dict[str, float], generate: Callable[..., Iterator[int]]
) -> Callable[..., Iterator[int]]:
    """`LocalModel._generate`, its seconds split: until the first token (the prompt's
    uncached rest evaluated, the grammar's sampler built, one token sampled) and after it
    (each further token decoded under the grammar); tokens counted."""

    def wrapper(*args: Any, **kwargs: Any) -> Iterator[int]:
        phase, started = "first token", time.perf_counter()
        for token in generate(*args, **kwargs):
            now = time.perf_counter()
            spent[phase] += now - started
            spent["tokens"] += 1
            phase, started = "decode", now
            yield token
        spent[phase] += time.perf_counter() - started

    return wrapper


def fresh(model: str, threads: int, questions: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """The rows of a new process asking `questions`, with its whole wall seconds on the
    first row."""
    command = [sys.executable, "-m", "benchmarks", "local_startup", "--model", model]
    command += ["--threads", str(threads), "--child", *questions]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or len(rows) != len(questions):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    rows[0]["process"] = round(wall, 2)
    yield from rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.model, args.threads, args.child)
        return
    arms: list[tuple[str, list[tuple[str, ...]]]] = [
        ("one process", [QUESTIONS]),
        ("two processes", [(q,) for q in QUESTIONS]),
    ]
    head = " | ".join(PHASES)
    print(f"| arm | question | requests | tokens | seconds | {head} | opening read | rest |")
    print("| --- | --- | --- | --- | --- |" + " --- |" * (len(PHASES) + 2))
    for arm, runs in arms:
        rows = (row for asked in runs for row in fresh(args.model, args.threads, asked))
        for number, row in enumerate(rows, 1):
            phases = [row.get(p, 0.0) for p in PHASES]
            rest = row["seconds"] - sum(phases)
            cells = " | ".join(f"{p:.2f}" for p in [*phases, row.get("opening read", 0.0)])
            counts = f"{row['requests']} | {row.get('tokens', 0):.0f}"
            print(
                f"| {arm} | {number} | {counts} | {row['seconds']:.2f} | {cells} | {rest:.2f} |",
                flush=True,
            )
