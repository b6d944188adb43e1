"""Resuming after the cache went cold: prune before the first request, or not.

Two identical fat sessions (20 tool results of about 12 KB) go idle past the provider's
`cold_after`; one is resumed with warmloop's cold prune, one without (maintenance off).
Both first requests miss the cache whole; the pruned one is much smaller. The warm case
shows why a warm session is left alone: resumed a minute later, the same prune makes the
first request re-write everything after the first pruned result at the write price,
instead of reading it at the read price. Priced under Anthropic's and DeepSeek's rules.

    python -m benchmarks cold_resume
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace

from benchmarks.session_costs import ANTHROPIC_RULES, DEEPSEEK_RULES, RecordingModel, Rules, price
from warmloop import Agent, MaintenancePolicy, Transcript, call, tool
from warmloop.simulate import SimOutcome

RESULTS = 20
RESULT_CHARS = 12_000
STEP_SECONDS = 20.0
TASK = "Read the twenty log files and say which services failed."


@tool
def read_log(name: str) -> str:
    """Read one log file."""
    index = int(name.removeprefix("log_"))
    line = f"{index:02d} 2026-11-23T10:{index:02d}:00 service-{index % 7} ok request served\n"
    return (line * (RESULT_CHARS // len(line) + 1))[:RESULT_CHARS]


def fat_session(rules: Rules) -> tuple[Transcript, list[Transcript], Agent]:
    """A finished session of RESULTS reads, never maintained (so it is as fat as it gets)."""
    replies = [call("read_log", name=f"log_{i}") for i in range(RESULTS)]
    model = RecordingModel([*replies, call("submit", answer="service-3")], name=rules.spec)
    agent = Agent(model, [read_log], max_steps=RESULTS + 2, max_result_chars=None, maintenance=None)
    run = agent.run_sync(TASK)
    return run.transcript, model.sent, agent


@dataclass(frozen=True)
class FirstRequest:
    """The resumed session's first request: tokens it missed (uncached input and
    writes) and its cost, and whether warmloop pruned before it."""

    miss_tokens: int
    prompt_tokens: int
    dollars: float
    pruned: bool


def resume(
    rules: Rules, idle: float, *, maintain: bool, cold_after: float | None = None
) -> FirstRequest:
    """Resume a fat session after `idle` seconds and price its first request."""
    transcript, earlier, agent = fat_session(rules)
    transcript.meta = replace(transcript.meta, last_request_at=time.time() - idle)
    model = RecordingModel([call("submit", answer="service-3 and service-5")], name=rules.spec)
    policy = MaintenancePolicy(cold_after=cold_after) if maintain else None
    follow = Agent(model, [read_log], max_result_chars=None, maintenance=policy)
    run = follow.run_sync("Which of them failed twice?", history=transcript)
    times = [STEP_SECONDS * i for i in range(len(earlier))]
    resumed_at = times[-1] + idle
    outcomes = price(
        [*zip(times, earlier, strict=True), (resumed_at, model.sent[0])],
        agent.tool_specs,
        rules,
    )
    first: SimOutcome = outcomes[-1]
    usage = first.usage
    return FirstRequest(
        usage.uncached_tokens + usage.cache_write_tokens,
        usage.prompt_tokens,
        first.cost.total if first.cost else 0.0,
        bool(run.maintenance),
    )


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print(__doc__.split("\n\n")[0])
    print()
    header = "| rules | case | pruned | prompt tokens | missed tokens | first request $ |"
    print(header)
    print("|---|---|---|---|---|---|")
    for rules in (ANTHROPIC_RULES, DEEPSEEK_RULES):
        cold = rules.profile.cold_after + 3_600
        cases = {
            f"cold ({cold / 3600:.0f} h idle), without the cold prune": resume(
                rules, cold, maintain=False
            ),
            f"cold ({cold / 3600:.0f} h idle), with the cold prune": resume(
                rules, cold, maintain=True
            ),
            "warm (60 s idle), left alone": resume(rules, 60, maintain=True),
            "warm (60 s idle), pruned anyway": resume(rules, 60, maintain=True, cold_after=0.0),
        }
        for name, found in cases.items():
            print(
                f"| {rules.name} | {name} | {'yes' if found.pruned else 'no'} | "
                f"{found.prompt_tokens:,} | {found.miss_tokens:,} | {found.dollars:.4f} |"
            )
        without, with_prune, warm, forced = cases.values()
        fewer = 1 - with_prune.miss_tokens / without.miss_tokens
        print(
            f"| {rules.name} | cold prune: {fewer:.0%} fewer missed tokens, cost ratio "
            f"{with_prune.dollars / without.dollars:.2f}; warm prune costs "
            f"{forced.dollars / warm.dollars:.1f}x leaving it alone | | | | |"
        )
