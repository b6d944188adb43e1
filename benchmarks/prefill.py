"""Prefill work on a real engine: an append-only prompt vs prompts rebuilt every step.

One scripted 12-step session (fixed assistant turns; tool results from warmloop's own
Toolbox; the model chooses nothing) is evaluated request by request on Gemma 3 270M in
llama.cpp, under three strategies, each on its own engine so they share no KV cache:

  append-only    warmloop's `LocalModel.render` over the growing transcript
  counter first  one user message rebuilt each step: "Iteration k of 12" then the history
  counter last   the same with the counter after the history

Each request is only prefilled (no token generated): the work measured is exactly the
prompt evaluation the engine's KV-cache reuse allows. Strategies alternate step by step so
that load from other processes falls on all three alike.

    python -m benchmarks prefill [--threads 2]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field

from warmloop import SystemText, Toolbox, ToolResult, ToolSpec, Transcript, UserText, tool
from warmloop.agent.agent import DEFAULT_INSTRUCTIONS
from warmloop.outputs import Outputs
from warmloop.protocols import react_text
from warmloop.providers.local.chat_template import TemplatePrompt, TemplateTurn, prompt_tokens
from warmloop.providers.local.model import LocalModel
from warmloop.tools.gateway import SUBMIT

STEPS = 12
N_CTX = 4096
TASK = "The test suite fails after the last refactor. Find the cause and report it."
MODULES = ("cart", "pricing", "tax", "discounts", "inventory")


@tool
def read_file(path: str) -> str:
    """Read a file from the repository."""
    name = path.rsplit("/", 1)[-1].removesuffix(".py")
    return "\n".join(
        f"{n:3d}  def {name}_{n}(order): return order.total * {n} / 100" for n in range(1, 13)
    )


@tool
def search(query: str) -> str:
    """Search the repository for a string; returns matching lines."""
    return "\n".join(f"src/{m}.py:{7 * i + 3}: {query}(order)" for i, m in enumerate(MODULES))


@tool
def run_tests(target: str) -> str:
    """Run the tests under a path; returns the summary and the first failure."""
    return (
        f"collected 48 items in {target}\n"
        "FAILED tests/test_pricing.py::test_bulk_discount - assert 90.0 == 81.0\n"
        "1 failed, 47 passed in 0.42s"
    )


TOOLS = Toolbox([read_file, search, run_tests])
SPECS: tuple[ToolSpec, ...] = (*TOOLS.specs(), Outputs().spec)

# (thought, tool, arguments as JSON text): what the model "writes" at each step.
SCRIPT: list[tuple[str, str, str]] = [
    ("Run the tests first", "run_tests", '{"target": "tests"}'),
    ("The bulk discount test fails", "read_file", '{"path": "src/pricing.py"}'),
    ("Find where discounts are applied", "search", '{"query": "apply_discount"}'),
    ("Check the discounts module", "read_file", '{"path": "src/discounts.py"}'),
    ("Tax might be applied twice", "read_file", '{"path": "src/tax.py"}'),
    ("Look at the cart totals", "read_file", '{"path": "src/cart.py"}'),
    ("Search for the total computation", "search", '{"query": "order.total"}'),
    ("Inventory should not matter, but check", "read_file", '{"path": "src/inventory.py"}'),
    ("Rerun only the pricing tests", "run_tests", '{"target": "tests/test_pricing.py"}'),
    ("Search for the bulk rule", "search", '{"query": "bulk_rate"}'),
    ("Read pricing once more", "read_file", '{"path": "src/pricing.py"}'),
    (
        "The discount is applied twice",
        SUBMIT,
        '{"answer": "pricing applies the bulk discount on top of discounts.apply_discount"}',
    ),
]


def requests() -> list[Transcript]:
    """The transcript as it stands at each of the 12 requests (before that step's reply)."""
    transcript = Transcript([SystemText(DEFAULT_INSTRUCTIONS), UserText(TASK)], id="t_bench")
    out = []
    for index, (thought, name, arguments) in enumerate(SCRIPT):
        out.append(transcript.fork())
        text = f'Thought: {thought}\nAction: {{"tool": "{name}", "arguments": {arguments}}}'
        turn = react_text.parse(text, index)
        transcript.append(turn)
        for call in turn.tool_calls:
            if call.name == SUBMIT:
                transcript.append(ToolResult(call.id, SUBMIT, "Submitted."))
            else:
                transcript.append(asyncio.run(TOOLS.execute(call)))
    return out


def rebuilt(transcript: Transcript, step: int, *, counter_first: bool) -> TemplatePrompt:
    """A naive loop's prompt: the system text, then one user message re-rendering the whole
    history with an iteration counter before or after it."""
    pieces = react_text.turns(transcript.messages, SPECS)
    system, history = pieces[0][1], "\n\n".join(text for _, text in pieces[1:])
    counter = f"Iteration {step} of {STEPS}"
    body = f"{counter}\n{history}" if counter_first else f"{history}\n{counter}"
    return TemplatePrompt((TemplateTurn("user", f"{system}\n\n{body}"),), SPECS)


@dataclass
class Strategy:
    """One way of building prompts, with its own engine and per-step measurements."""

    name: str
    model: LocalModel
    evaluated: list[int] = field(default_factory=list)
    reused: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def prompt(self, transcript: Transcript, step: int) -> TemplatePrompt:
        if self.name == "append-only":
            payload = self.model.render(transcript, SPECS).payload
            assert isinstance(payload, TemplatePrompt)
            return payload
        return rebuilt(transcript, step, counter_first=self.name == "counter first")

    def run(self, transcript: Transcript, step: int) -> None:
        tokens = prompt_tokens(self.model.engine(), self.prompt(transcript, step))
        started = time.perf_counter()
        usage = self.model.prefill(tokens)
        self.seconds.append(time.perf_counter() - started)
        self.evaluated.append(usage.uncached_tokens)
        self.reused.append(usage.cache_read_tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else "")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads per engine")
    threads = parser.parse_args().threads
    names = ("append-only", "counter first", "counter last")
    print(f"loading {len(names)} engines (Gemma 3 270M, {threads} threads each)...", flush=True)
    strategies = [
        Strategy(n, LocalModel("gemma-3-270m", n_ctx=N_CTX, n_threads=threads)) for n in names
    ]
    for strategy in strategies:
        strategy.model.engine()
    cells = "".join(f" | {n:>22}" for n in names)
    print(f"prompt tokens evaluated / reused, seconds\nstep{cells}", flush=True)
    for step, transcript in enumerate(requests(), start=1):
        for strategy in strategies:
            strategy.run(transcript, step)
        row = "".join(
            f" | {s.evaluated[-1]:5d} / {s.reused[-1]:5d} {s.seconds[-1]:6.2f}s" for s in strategies
        )
        print(f"{step:4d}{row}", flush=True)
    base = strategies[0]
    totals = "".join(
        f" | {sum(s.evaluated):5d} / {sum(s.reused):5d} {sum(s.seconds):6.2f}s" for s in strategies
    )
    print(f"{'all':>4}{totals}")
    for strategy in strategies[1:]:
        tokens = sum(strategy.evaluated) / sum(base.evaluated)
        seconds = sum(strategy.seconds) / sum(base.seconds)
        print(
            f"{strategy.name} / append-only: {tokens:.2f}x tokens evaluated, {seconds:.2f}x seconds"
        )
    for strategy in strategies:
        strategy.model.close()
