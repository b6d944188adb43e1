"""warmloop's own work per step as a session grows: render, guard, append, persistence hook.

Not the SDK, not the model: a step here is what the loop does around a request. The session
grows two messages a step (assistant turn + tool result) and the step time is sampled when
the transcript holds about 10, 100, 1,000 and 10,000 messages. Work is only on what is new:
the renderer memoises per message, the canonical wire stream re-serialises only new items
(identity of unchanged ones), and the guard compares pieces by identity, so the per-step
time should stay flat.

    python -m benchmarks overhead
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time

from warmloop import (
    AssistantTurn,
    ScriptedModel,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    UserText,
    tool,
)
from warmloop.messages import Message
from warmloop.outputs import Outputs
from warmloop.transcript_file import dumps_message
from warmloop.wire.guard import PrefixGuard

SIZES = (10, 100, 1_000, 10_000)
WINDOW = 9  # steps sampled around each size


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


def measure() -> dict[int, list[float]]:
    model = ScriptedModel(name="bench")
    specs = (read_file.spec, Outputs().spec)
    transcript = Transcript(
        [SystemText("You are a benchmark agent."), UserText("Read everything.")]
    )
    guard = PrefixGuard()
    sink = io.StringIO()
    samples: dict[int, list[float]] = {size: [] for size in SIZES}
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
        for size in SIZES:
            if abs(len(transcript) - size) <= WINDOW:
                samples[size].append(elapsed)
        k += 1
    return samples


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    print("warmloop per-step overhead (render + guard + append + persistence hook)")
    samples = measure()
    medians = {size: statistics.median(values) for size, values in samples.items()}
    print(f"{'messages':>9} {'median ms/step':>15} {'steps sampled':>14}")
    for size in SIZES:
        print(f"{size:>9} {medians[size] * 1000:>15.3f} {len(samples[size]):>14}")
    for size in SIZES[1:]:
        ratio = medians[size] / medians[SIZES[0]]
        print(f"ratio {size:,} msgs / {SIZES[0]} msgs: {ratio:.2f} (1.00 = perfectly flat)")
    target = "met" if medians[SIZES[-1]] < 0.001 else "NOT met"
    print(f"target < 1 ms per step at {SIZES[-1]:,} messages: {target}")
