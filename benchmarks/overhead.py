"""warmloop's own work per step as a session grows: render, guard, maintenance, persistence.

Not the SDK, not the model: a step here is what the loop does around a request. The session
grows two messages a step (assistant turn + tool result) and the step time is sampled when
the transcript holds about 100, 1,000 and 10,000 messages, split four ways:

- render: appending the step's messages and rendering the request (`model.render`);
- guard: deriving the canonical stream and the prefix guard's check;
- maintenance: the maintainer's per-step check before a request (`Maintainer.maintain`,
  with a window no session here reaches, as the last request of its run, so it plans and
  prices a prune every step and never rewrites) and its calibration after the answer
  (`Maintainer.observed`), fed the usage a provider with a perfect prefix cache reports:
  about four characters a token of the whole prompt, growing with the history;
- persistence: the transcript file's hook (one JSON line per message) and a SQLite session
  store's `append` (the new messages and the request's record in one transaction, as an
  agent with a store writes each step).

Each part is printed in milliseconds per step and in microseconds per KiB of the step's new
content (its messages as stored), with its ratio to the smallest size: flat means the work
grows with what the step adds, not with the history.

    python -m benchmarks overhead
    python -m benchmarks overhead --sync-each-step --sizes 100 1000   # an fsync per step
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from warmloop import (
    AssistantTurn,
    ScriptedModel,
    SQLiteStore,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    UserText,
    tool,
)
from warmloop.facts.profiles import profile_for
from warmloop.facts.usage import Usage
from warmloop.maintenance.maintainer import Maintainer
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.messages import Message
from warmloop.outputs import Outputs
from warmloop.sessions.ledger import StoredRequest
from warmloop.transcript_file import dumps_message
from warmloop.wire.guard import PrefixGuard

SIZES = (100, 1_000, 10_000)
WINDOW = 9  # steps sampled around each size
PARTS = ("render", "guard", "maintenance", "persistence")
CHARS_PER_TOKEN = 4
TARGET_SECONDS = 0.0002
"""Issue 36's target: under 0.2 ms per step at 10,000 messages, persistence included."""


@tool
def read_file(path: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Read a file from the workspace, optionally a line range."""
    return path


def step_messages(k: int) -> list[Message]:
    call = ToolCall(f"call_{k}_0", "read_file", json.dumps({"path": f"src/module_{k}.py"}))
    body = "\n".join(f"{n:4d}  line {n} of module {k}" for n in range(1, 30))
    return [
        AssistantTurn(text=f"Reading module {k}.", tool_calls=(call,)),
        ToolResult(call.id, "read_file", body),
    ]


def provider_usage(characters: int, cached: int) -> Usage:
    """What a provider with a perfect prefix cache reports for a prompt of `characters`
    (about four to a token) whose first `cached` tokens it read: usage that grows with
    the history, so the maintainer's calibrated ratio stays near four characters a token
    (a fixed usage made it climb with the history, and the protected tail with it)."""
    total = -(-characters // CHARS_PER_TOKEN)
    read = min(cached, total)
    return Usage(input_tokens=total, cache_read_tokens=read, output_tokens=30)


Samples = dict[int, dict[str, list[float]]]


def measure(
    sizes: tuple[int, ...] = SIZES, *, sync_each_step: bool = False
) -> tuple[Samples, float]:
    """Per size and part, the seconds of each sampled step; and the step's new content in
    KiB (the same every step)."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "sessions.db", sync_each_step=sync_each_step)
        try:
            return asyncio.run(_measure(store, sizes))
        finally:
            store.close()


async def _measure(store: SQLiteStore, sizes: tuple[int, ...]) -> tuple[Samples, float]:
    model = ScriptedModel(name="bench")
    specs = (read_file.spec, Outputs().spec)
    transcript = Transcript(
        [SystemText("You are a benchmark agent."), UserText("Read everything.")]
    )
    profile = profile_for("anthropic:claude-sonnet-4-6")
    maintainer = Maintainer(model, specs, profile, MaintenancePolicy(), window=10**9)
    guard = PrefixGuard()
    sink = io.StringIO()
    samples: Samples = {size: {part: [] for part in PARTS} for size in sizes}
    lease = store.acquire("overhead")
    store.append(lease, transcript)
    cached = 0
    new_kib = sum(len(dumps_message(m).encode()) for m in step_messages(0)) / 1024
    k = 0
    while len(transcript) < sizes[-1] + WINDOW * 2:
        new = step_messages(k)
        clock = [time.perf_counter()]
        for message in new:
            transcript.append(message)
        rendered = model.render(transcript, specs)
        clock.append(time.perf_counter())
        check = guard.check(rendered.wire)
        clock.append(time.perf_counter())
        usage = provider_usage(check.total, cached)  # the provider's answer: not timed
        cached = usage.prompt_tokens
        clock.append(time.perf_counter())
        changes = await maintainer.maintain(transcript, rendered, remaining=1)
        maintainer.observed(transcript, rendered, usage)
        clock.append(time.perf_counter())
        for message in new:
            sink.write(dumps_message(message) + "\n")  # the transcript file's hook
        record = StoredRequest(len(transcript) - 2, float(k), 0.5, usage)
        store.append(lease, transcript, [record])
        clock.append(time.perf_counter())
        assert check.bust is None, check.bust
        assert not changes, changes
        for size in sizes:
            if abs(len(transcript) - size) <= WINDOW:
                spans = (clock[1] - clock[0], clock[2] - clock[1], clock[4] - clock[3])
                for part, span in zip(PARTS, (*spans, clock[5] - clock[4]), strict=True):
                    samples[size][part].append(span)
        k += 1
    return samples, new_kib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N")
    parser.add_argument("--sync-each-step", action="store_true", help="the store fsyncs every step")
    args = parser.parse_args()
    sizes = tuple(sorted(args.sizes))
    sync = "an fsync each step" if args.sync_each_step else "synced when the run returns"
    print(f"warmloop per-step overhead (render, guard, maintenance, persistence to SQLite, {sync})")
    samples, new_kib = measure(sizes, sync_each_step=args.sync_each_step)
    medians = {
        size: {part: statistics.median(samples[size][part]) for part in PARTS} for size in sizes
    }
    totals = {size: sum(medians[size].values()) for size in sizes}
    print(f"each step adds {new_kib:.2f} KiB of new content (2 messages)")
    print(f"{'messages':>9} " + " ".join(f"{p + ' ms':>15}" for p in PARTS) + f" {'total ms':>9}")
    for size in sizes:
        parts = " ".join(f"{medians[size][p] * 1000:>15.3f}" for p in PARTS)
        print(f"{size:>9} {parts} {totals[size] * 1000:>9.3f}")
    print(f"{'messages':>9} " + " ".join(f"{p + ' us/KiB':>15}" for p in PARTS))
    for size in sizes:
        parts = " ".join(f"{medians[size][p] * 1e6 / new_kib:>15.1f}" for p in PARTS)
        print(f"{size:>9} {parts}")
    first = sizes[0]
    for size in sizes[1:]:
        ratios = "  ".join(f"{p} {medians[size][p] / medians[first][p]:.2f}" for p in PARTS)
        print(f"ratio {size:,} / {first} msgs: {ratios}  (1.00 = flat)")
    target = "met" if totals[sizes[-1]] < TARGET_SECONDS else "NOT met"
    print(f"target < {TARGET_SECONDS * 1000:g} ms per step at {sizes[-1]:,} messages: {target}")
