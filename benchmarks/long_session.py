"""Long sessions: warmloop's maintenance against the offline optimum and three baselines.

A scripted session of N steps, each reading one part of a report (about 6,000 tokens), in a
128k window (70 steps) and a 200k window (200 steps), priced under Anthropic's and OpenAI's
cache rules with the simulator (`benchmarks.session_costs`). Policies:

- warmloop: the real Agent and its planner, which knows only what a live agent knows
  (sizes so far, its step budget, the cache rules); priced as the requests it sent;
- optimum: the cheapest schedule of the same prune (every result before the same protected
  tail) over all request points, knowing the future: dynamic programming over (request,
  last prune point), each request priced against the one before it;
- trigger-only: that prune whenever the prompt reaches 0.8 of the window;
- sliding window: the opening plus the newest messages that fit half the window;
- summarise-at-trigger: at 0.8 of the window everything before the tail becomes a
  400-token summary, plus the summary request (the conversation and one ask, 400 output).

The sweep (`--sweep`) runs the 70-step host session with every default, its reads and its
window each scaled by 0.7, 1.0 and 1.3, on a host that publishes its window and on one that
does not (the agent learns it from the host's rejection, if a prompt ever reaches it), each
against the offline optimum of the same session (target: at most 1.05x everywhere).

    python -m benchmarks long_session [--quick] [--plot FILE.png] [--sweep]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.loopback_host import Host, serve
from benchmarks.session_costs import RULES, RecordingModel, Rules, blocks, price
from warmloop import (
    Agent,
    AssistantTurn,
    MaintenancePolicy,
    Model,
    Reply,
    SystemText,
    ToolCall,
    ToolResult,
    ToolSpec,
    Transcript,
    UserText,
    call,
    resolve_model,
    tool,
)
from warmloop.maintenance.prune import plan_prune
from warmloop.providers.base import ModelResponse, Rendered, WrappedModel
from warmloop.providers.openai.record import CHAT
from warmloop.simulate import Block, SimRequest, simulate
from warmloop.transcript import scratch_copy

RESULT_TOKENS = 6_000
STEP_SECONDS = 30.0
SUMMARY_TOKENS = 400
OUTPUT_TOKENS = 100
TRIGGER = 0.8
INSTRUCTIONS = "You are an agent that reads files with tools, then submits an answer."
TASK = "Read every part of the report in order and summarise it."


@dataclass
class ReadSize:
    """The tokens one read returns (`RESULT_TOKENS`; the sweep scales it: `sized`)."""

    tokens: int = RESULT_TOKENS


READ = ReadSize()


@contextmanager
def sized(tokens: int) -> Iterator[None]:
    """Every read in the block returns about `tokens` tokens."""
    before, READ.tokens = READ.tokens, tokens
    try:
        yield
    finally:
        READ.tokens = before


def content(k: int) -> str:
    """Part k of the report: about `READ.tokens` tokens, different for every k."""
    line = f"part {k}: " + " ".join(f"w{(k * 7919 + i) % 997}" for i in range(12)) + "\n"
    return (line * (READ.tokens * 4 // len(line) + 1))[: READ.tokens * 4]


@tool
def read(path: str) -> str:
    """Read one part of the report."""
    return content(int(path.split("_")[1]))


def tokens_of(text: str) -> int:
    return math.ceil(len(text) / 4)


def run_warmloop(
    n: int, window: int, rules: Rules
) -> tuple[list[tuple[float, Transcript]], list[ToolSpec], int]:
    """The real Agent over the session: each request as sent, with its time; folds."""
    state = {"next": 0}

    def reply(rendered: Rendered) -> Reply:
        last = str(rendered.payload["messages"][-1].get("content") or "")
        if last.startswith("Context maintenance"):
            return Reply(text="Summary of the parts read so far. " + "s" * SUMMARY_TOKENS * 4)
        if state["next"] < n:
            state["next"] += 1
            return call("read", path=f"part_{state['next'] - 1}")
        return call("submit", answer="done")

    model = RecordingModel([reply] * (3 * n + 10), name=rules.spec, context_window=window)
    agent = Agent(
        model,
        [read],
        max_steps=n + 1,
        max_result_chars=None,
        maintenance=MaintenancePolicy(trigger=TRIGGER),
    )
    run = agent.run_sync(TASK)
    timed = [(STEP_SECONDS * i, t) for i, t in enumerate(model.sent)]
    folds = sum(1 for e in run.maintenance if e.kind == "fold")
    return timed, list(agent.tool_specs), folds


HOST_RULES = Rules(
    "OpenAI-compatible host billed like GPT-5, window discovered", "openai:gpt-5", CHAT
)
"""A self-hosted or gateway host told only that it bills like OpenAI; its window is what it
publishes (vLLM's `max_model_len`), never told to the agent."""


class Recorder(WrappedModel):
    """A model wrapper that keeps the transcript of every request sent."""

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self._sources: dict[int, Transcript] = {}
        self.sent: list[Transcript] = []

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        rendered = self.model.render(transcript, tools)
        self._sources[id(rendered)] = scratch_copy(transcript)
        return rendered

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        self.sent.append(self._sources.pop(id(rendered)))
        return await self.model.send(rendered, session_id=session_id)


def run_on_host(
    n: int, window: int, rules: Rules, told: bool = True, publish: bool = True
) -> tuple[list[tuple[float, Transcript]], list[ToolSpec], int]:
    """The real Agent, every default, against a loopback host with a `window`; `told`:
    the user passed `cache_rules=rules.spec` (else the host's billing is unknown to it);
    `publish`: the host publishes its window (vLLM's `max_model_len`), else the agent learns
    it from the host's first rejection."""

    def step(body: dict[str, object]) -> tuple[str, dict[str, object]] | str:
        messages = body["messages"]
        assert isinstance(messages, list)
        last = str(messages[-1].get("content") or "")
        if last.startswith("Context maintenance"):
            return "Summary of the parts read so far. " + "s" * SUMMARY_TOKENS * 4
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done < n:
            return "read", {"path": f"part_{done}"}
        return "submit", {"answer": "done"}

    with serve(Host(step, window=window, publish=publish)) as url:
        spec = f"openai-compatible:{url}#served-model"
        served = resolve_model(spec, cache_rules=rules.spec) if told else resolve_model(spec)
        model = Recorder(served)
        agent = Agent(model, [read], max_steps=n + 1)  # every other option a default
        run = agent.run_sync(TASK)
    facts = run.facts if run.facts is not None else model.facts
    # A host that publishes none is learned from its rejection, if a prompt ever reaches it.
    assert facts.window_source in (("discovered",) if publish else ("learned", "assumed")), facts
    timed = [(STEP_SECONDS * i, t) for i, t in enumerate(model.sent)]
    folds = sum(1 for e in run.maintenance if e.kind == "fold")
    return timed, list(agent.tool_specs), folds


def full_session(n: int) -> Transcript:
    transcript = Transcript([SystemText(INSTRUCTIONS), UserText(TASK)])
    for k in range(n):
        call_ = ToolCall(f"call_{k}_0", "read", f'{{"path": "part_{k}"}}')
        transcript.append(AssistantTurn(tool_calls=(call_,)))
        transcript.append(ToolResult(call_.id, "read", content(k)))
    return transcript


@dataclass
class Schedules:
    """The session's requests as blocks under any schedule of the same prune.

    Request k is the opening, the task and k steps; `j` is the request at which the last
    prune was made (-1: none), which fixes which results are placeholders.
    """

    n: int
    window: int
    rules: Rules
    tools: list[ToolSpec]
    cache: dict[tuple[int, int], tuple[Block, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        full = full_session(self.n)
        policy = MaintenancePolicy().prune.for_window(self.window)
        self.eligible = [
            plan_prune(Transcript(full.messages[: 2 + 2 * k]), policy, tokens_of).edits
            for k in range(self.n + 1)
        ]
        pruned = scratch_copy(full)
        pruned.replace_content(self.eligible[self.n])
        items = 2 * self.n + 1
        original = list(blocks(self.rules.render(full, self.tools), self.rules))
        self.head = original[:-items]
        self.original = original[-items:]
        self.pruned = list(blocks(self.rules.render(pruned, self.tools), self.rules))[-items:]

    def request(self, k: int, j: int) -> tuple[Block, ...]:
        """Request k with the prune made at request j."""
        found = self.cache.get((k, j))
        if found is None:
            gone = self.eligible[j] if j >= 0 else {}
            items = [
                self.pruned[i] if i + 1 in gone else self.original[i] for i in range(2 * k + 1)
            ]
            found = self.cache[(k, j)] = self.mark([*self.head, *items])
        return found

    def mark(self, found: list[Block]) -> tuple[Block, ...]:
        """Breakpoints as the Anthropic renderer places them: tools, system, the end of the
        previous request and the newest turn (plain blocks under automatic caching)."""
        if self.rules.layout.name != "anthropic":
            return tuple(Block(b.tokens, b.key) for b in found)
        head = len(self.head)
        marks = {head - 2, head - 1, len(found) - 3, len(found) - 1}
        return tuple(
            Block(b.tokens, b.key, "5m" if i in marks else None) for i, b in enumerate(found)
        )

    def tokens(self, k: int, j: int) -> int:
        return sum(b.tokens for b in self.request(k, j))

    def sim(self, pairs: Sequence[tuple[float, tuple[Block, ...]]]) -> list[float]:
        requests = [SimRequest(STEP_SECONDS * t, b, OUTPUT_TOKENS) for t, b in pairs]
        outcomes = simulate(requests, self.rules.profile, self.rules.prices)
        return [o.cost.total if o.cost else 0.0 for o in outcomes]

    def step_cost(self, k: int, j: int, previous: int) -> float:
        """Request k's dollars after request k-1 (pruned at `previous`) filled the cache."""
        pairs = [(k - 1, self.request(k - 1, previous)), (k, self.request(k, j))]
        return self.sim(pairs)[-1]

    def costs(self, schedule: Sequence[int]) -> list[float]:
        """Per-request dollars of a whole schedule (schedule[k]: last prune at request k)."""
        return self.sim([(k, self.request(k, j)) for k, j in enumerate(schedule)])

    def optimum(self) -> list[int]:
        """The cheapest schedule that keeps every request in the window, knowing the future."""
        best: dict[int, tuple[float, list[int]]] = {
            -1: (self.sim([(0, self.request(0, -1))])[0], [-1])
        }
        for k in range(1, self.n + 1):
            nxt: dict[int, tuple[float, list[int]]] = {}
            for j, (total, path) in best.items():
                if self.tokens(k, j) <= self.window:
                    nxt[j] = (total + self.step_cost(k, j, j), [*path, j])
            if self.eligible[k] and self.tokens(k, k) <= self.window:
                nxt[k] = min(
                    (
                        (total + self.step_cost(k, k, j), [*path, k])
                        for j, (total, path) in best.items()
                    ),
                    key=lambda option: option[0],
                )
            best = nxt
        return min(best.values(), key=lambda option: option[0])[1]

    def trigger_only(self) -> list[int]:
        schedule, j = [], -1
        for k in range(self.n + 1):
            if self.tokens(k, j) >= TRIGGER * self.window and self.eligible[k]:
                j = k
            schedule.append(j)
        return schedule

    def sliding(self) -> list[float]:
        """The opening and task, then the newest steps that fit half the window."""
        budget = self.window // 2 - sum(b.tokens for b in self.head) - self.original[0].tokens
        requests = []
        for k in range(self.n + 1):
            steps, size = 0, 0
            while steps < k and size + self._step(k - 1 - steps) <= budget:
                size += self._step(k - 1 - steps)
                steps += 1
            items = [self.original[0], *self.original[1 + 2 * (k - steps) : 1 + 2 * k]]
            requests.append((k, self.mark([*self.head, *items])))
        return self.sim(requests)

    def _step(self, s: int) -> int:
        return self.original[1 + 2 * s].tokens + self.original[2 + 2 * s].tokens

    def summarise_at_trigger(self) -> list[float]:
        """At the trigger, a summary replaces all but the tail (and costs its own request)."""
        requests: list[tuple[float, tuple[Block, ...]]] = []
        start, summaries = 0, 0  # first step still shown; summaries made so far
        summary: list[Block] = []
        for k in range(self.n + 1):
            items = [self.original[0], *summary, *self.original[1 + 2 * start : 1 + 2 * k]]
            current = self.mark([*self.head, *items])
            if sum(b.tokens for b in current) >= TRIGGER * self.window:
                ask = Block(60, f"ask-{summaries}")
                requests.append((k - 0.5, self.mark([*current, ask])))
                keep = self.tail_steps(k)
                summaries += 1
                summary = [Block(SUMMARY_TOKENS, f"summary-{summaries}")]
                start = k - keep
                items = [self.original[0], *summary, *self.original[1 + 2 * start : 1 + 2 * k]]
                current = self.mark([*self.head, *items])
            requests.append((k, current))
        requests.sort(key=lambda r: r[0])
        return self.sim(requests)

    def tail_steps(self, k: int) -> int:
        """How many newest steps the protected tail keeps at request k."""
        cut = self.eligible[k]
        kept = [s for s in range(k) if (3 + 2 * s) not in cut]
        return len(kept)


def scenario(n: int, window: int, rules: Rules, on_host: bool = False) -> dict[str, list[float]]:
    """Per-request dollars of every policy for one session under one provider's rules
    (`on_host`: warmloop runs against a loopback host that publishes its window)."""
    timed, tools, folds = (run_on_host if on_host else run_warmloop)(n, window, rules)
    schedules = Schedules(n, window, rules, tools)
    warm = price(timed, tools, rules, OUTPUT_TOKENS)
    costs = {
        "warmloop": [o.cost.total if o.cost else 0.0 for o in warm],
        "optimum": schedules.costs(schedules.optimum()),
        "trigger-only": schedules.costs(schedules.trigger_only()),
        "sliding window": schedules.sliding(),
        "summarise-at-trigger": schedules.summarise_at_trigger(),
    }
    costs["_folds"] = [float(folds)]
    costs["_largest_prompt"] = [float(max(o.usage.prompt_tokens for o in warm))]
    return costs


def table(results: dict[str, dict[str, list[float]]]) -> str:
    policies = ["warmloop", "optimum", "trigger-only", "sliding window", "summarise-at-trigger"]
    lines = [
        "| session | " + " | ".join(policies) + " | warmloop / optimum | largest prompt |",
        "|---|" + "---|" * (len(policies) + 2),
    ]
    for name, costs in results.items():
        totals = {p: sum(costs[p]) for p in policies}
        cells = " | ".join(f"${totals[p]:.2f}" for p in policies)
        ratio = totals["warmloop"] / totals["optimum"]
        largest = int(costs["_largest_prompt"][0])
        lines.append(f"| {name} | {cells} | {ratio:.3f} | {largest:,} |")
    return "\n".join(lines)


def plot(costs: dict[str, list[float]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5))
    for name, values in costs.items():
        if not name.startswith("_"):
            axes.plot(range(1, len(values) + 1), values, label=name, linewidth=1.2)
    axes.set_xlabel("request")
    axes.set_ylabel("cost of the request (USD)")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


SCALES = (0.7, 1.0, 1.3)
SWEEP_TARGET = 1.05


def sweep(n: int = 70, window: int = 128_000) -> str:
    """The host session under every default, its reads and window scaled (`SCALES`), with
    the window published and learned: warmloop against the offline optimum, one row each."""
    lines = [
        "| window | reads (tokens) | window (tokens) | warmloop | optimum | warmloop / optimum "
        "| prunes before request |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for publish in (True, False):
        for read_scale in SCALES:
            for window_scale in SCALES:
                size, limit = round(RESULT_TOKENS * read_scale), round(window * window_scale)
                with sized(size):
                    timed, tools, _ = run_on_host(n, limit, HOST_RULES, False, publish)
                    warm = price(timed, tools, HOST_RULES, OUTPUT_TOKENS)
                    schedules = Schedules(n, limit, HOST_RULES, tools)
                    best = sum(schedules.costs(schedules.optimum()))
                dollars = sum(o.cost.total if o.cost else 0.0 for o in warm)
                sent = [t for _, t in timed]
                prunes = [
                    k + 1 for k in range(1, len(sent)) if sent[k].revision != sent[k - 1].revision
                ]
                worst = max(worst, dollars / best)
                how = "published" if publish else "learned"
                lines.append(
                    f"| {how} | {size:,} | {limit:,} | ${dollars:.3f} | ${best:.3f} "
                    f"| {dollars / best:.3f} | {prunes} |"
                )
    verdict = "met" if worst <= SWEEP_TARGET else "missed"
    lines.append(f"\nworst: {worst:.3f}x the optimum (target {SWEEP_TARGET}x: {verdict})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only the 70-step session")
    parser.add_argument("--plot", type=Path, default=Path("long_session.png"))
    parser.add_argument("--sweep", action="store_true", help="only the +-30%% sweep")
    args = parser.parse_args()
    if args.sweep:
        print(sweep())
        return
    sessions = [(70, 128_000)] + ([] if args.quick else [(200, 200_000)])
    results: dict[str, dict[str, list[float]]] = {}
    for n, window in sessions:
        for rules in RULES:
            name = f"{n} steps, {window // 1000}k window, {rules.name}"
            print(f"running {name} ...", flush=True)
            results[name] = scenario(n, window, rules)
    name = f"70 steps, 128k window, {HOST_RULES.name}"
    print(f"running {name} ...", flush=True)
    results[name] = scenario(70, 128_000, HOST_RULES, on_host=True)
    print(table(results))
    first = next(iter(results))
    plot(results[first], first, args.plot)
    print(f"per-request cost plot: {args.plot}")
