"""warmloop's own work per step as a session grows: render, guard, append, persistence.

Not the SDK, not the model: a step here is what the loop does around a request. The session
grows two messages a step (assistant turn + tool result) and the step time is sampled when
the transcript holds about 10, 100, 1,000 and 10,000 messages. Work is only on what is new:
the renderer memoises per message, the canonical wire stream re-serialises only new items
(identity of unchanged ones), and the guard compares pieces by identity, so the per-step
time should stay flat. Persistence is measured twice: the transcript file's hook (one JSON
line per message) and a SQLite session store (`SQLiteStore.append`: the new messages and
the request's record in one transaction, as an agent with a store writes each step).

    python -m benchmarks overhead
"""

from __future__ import annotations

import argparse
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
from warmloop.facts.usage import Usage
from warmloop.messages import Message
from warmloop.outputs import Outputs
from warmloop.sessions.ledger import StoredRequest
from warmloop.transcript_file import dumps_message
from warmloop.wire.guard import PrefixGuard

SIZES = (10, 100, 1_000, 10_000)
WINDOW = 9  # steps sampled around each size
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


def measure() -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Per size: the step's time without the SQLite store, and the store's append alone."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "sessions.db")
        try:
            return _measure(store)
        finally:
            store.close()


def _measure(store: SQLiteStore) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    model = ScriptedModel(name="bench")
    specs = (read_file.spec, Outputs().spec)
    transcript = Transcript(
        [SystemText("You are a benchmark agent."), UserText("Read everything.")]
    )
    guard = PrefixGuard()
    sink = io.StringIO()
    samples: dict[int, list[float]] = {size: [] for size in SIZES}
    stored: dict[int, list[float]] = {size: [] for size in SIZES}
    lease = store.acquire("overhead")
    store.append(lease, transcript)
    k = 0
    while len(transcript) < SIZES[-1] + WINDOW * 2:
        new = step_messages(k)
        started = time.perf_counter()
        for message in new:
            transcript.append(message)
            sink.write(dumps_message(message) + "\n")  # persistence hook
        rendered = model.render(transcript, specs)
        check = guard.check(rendered.wire)
        elapsed = time.perf_counter() - started
        assert check.bust is None, check.bust
        record = StoredRequest(
            len(transcript) - 2,
            float(k),
            0.5,
            Usage(input_tokens=2_000, cache_read_tokens=40, output_tokens=30),
        )
        started = time.perf_counter()
        store.append(lease, transcript, [record])
        persisted = time.perf_counter() - started
        for size in SIZES:
            if abs(len(transcript) - size) <= WINDOW:
                samples[size].append(elapsed)
                stored[size].append(persisted)
        k += 1
    return samples, stored


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print("warmloop per-step overhead (render + guard + append + persistence)")
    samples, stored = measure()
    loop = {size: statistics.median(values) for size, values in samples.items()}
    sqlite = {size: statistics.median(values) for size, values in stored.items()}
    medians = {size: loop[size] + sqlite[size] for size in SIZES}
    print(
        f"{'messages':>9} {'loop ms':>9} {'SQLite ms':>10} {'median ms/step':>15} "
        f"{'steps sampled':>14}"
    )
    for size in SIZES:
        print(
            f"{size:>9} {loop[size] * 1000:>9.3f} {sqlite[size] * 1000:>10.3f} "
            f"{medians[size] * 1000:>15.3f} {len(samples[size]):>14}"
        )
    for size in SIZES[1:]:
        ratio = medians[size] / medians[SIZES[0]]
        print(f"ratio {size:,} msgs / {SIZES[0]} msgs: {ratio:.2f} (1.00 = perfectly flat)")
    target = "met" if medians[SIZES[-1]] < TARGET_SECONDS else "NOT met"
    print(f"target < {TARGET_SECONDS * 1000:g} ms per step at {SIZES[-1]:,} messages: {target}")
