"""How `warmloop audit` scales with the size of a log: seconds and peak memory.

Two shapes of log, each at 1,000, 4,000 and 10,000 requests (20,000 with `--large`):
- `single`: every request is its own conversation (a batch job: one system prompt and tool
  list, a different task each time), the shape that made grouping quadratic;
- `long`: conversations of 20 append-only requests (a task, then a tool call and a result
  per step), eight of them running at once and interleaved in the log.
Each audit runs in a fresh subprocess (reading the log, grouping, analysing and pricing it
under the default providers, as `warmloop audit LOG` does), timed inside the child and
measured for peak RSS with `os.wait4`. With `--baseline DIR` the same logs are also audited
by the warmloop checkout in DIR (for example the main branch before this change), each run
stopped after `--limit` CPU seconds.

    python -m benchmarks audit_scale [--large] [--baseline /path/to/other/checkout]

Near-linear scaling shows as a flat "CPU s per 1k" column (its ratio to the 1,000-request
run); CPU seconds, not wall seconds, because a shared machine stretches wall time.
Bounded memory shows as a peak RSS far below the log's size: the child streams the log
(`iter_log`, as `warmloop audit` does) and keeps of each request its canonical stream and a
few facts, never its body (a baseline without `iter_log` reads the log whole).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SIZES = (1_000, 4_000, 10_000)
LARGE = 20_000
STEPS = 20
"""Requests per conversation in the `long` logs."""
AT_ONCE = 8
"""Conversations running at the same time in the `long` logs."""
SYSTEM = "You are a careful coding agent. Read before you edit; cite the lines you change. " * 12
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file of the repository and return its lines.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
WORDS = ("parser", "cache", "ledger", "invoice", "rounding", "module", "retry", "socket")
CHILD = """
import json, sys, time
from pathlib import Path
try:  # a checkout that streams its log; an older one (a baseline) reads it whole
    from warmloop.exchange.log import iter_log as read
except ImportError:
    from warmloop.exchange.log import read_log as read
from warmloop.audit.report import audit
start, cpu = time.perf_counter(), time.process_time()
report = audit(read(Path(sys.argv[1])))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "conversations": len(report.conversations)}))
"""


def _text(chooser: random.Random, words: int) -> str:
    return " ".join(chooser.choice(WORDS) for _ in range(words))


def _body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "gpt-5",
        "tools": TOOLS,
        "messages": [{"role": "system", "content": SYSTEM}, *messages],
    }


def _usage(body: dict[str, Any], cached: int) -> dict[str, Any]:
    tokens = len(json.dumps(body)) // 4
    return {
        "prompt_tokens": tokens,
        "prompt_tokens_details": {"cached_tokens": min(cached, tokens)},
    }


def write_log(path: Path, shape: str, requests: int, seed: int = 1) -> None:
    """A synthetic request log of `requests` lines in the recorder's format."""
    chooser = random.Random(seed)
    with path.open("w") as out:
        if shape == "single":
            for n in range(requests):
                task = {"role": "user", "content": f"Task {n}: " + _text(chooser, 60)}
                body = _body([task])
                out.write(json.dumps({"at": 1000.0 + n, "body": body, "usage": _usage(body, 0)}))
                out.write("\n")
            return
        running: list[tuple[list[dict[str, Any]], int, int]] = []  # messages, step, size
        started, written = 0, 0
        while written < requests:
            while len(running) < AT_ONCE and started * STEPS < requests:
                task = {"role": "user", "content": f"Task {started}: " + _text(chooser, 60)}
                running.append(([task], 0, 0))
                started += 1
            slot = chooser.randrange(len(running))
            messages, step, previous = running[slot]
            body = _body(messages)
            # The provider read what this conversation's previous request wrote.
            record = {"at": 1000.0 + written, "body": body, "usage": _usage(body, previous)}
            out.write(json.dumps(record) + "\n")
            written += 1
            call_id = f"call_{step}"
            grown = [
                *messages,
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": '{"path":"a.py"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call_id, "content": _text(chooser, 50)},
            ]
            if step + 1 >= STEPS:
                running.pop(slot)
            else:
                running[slot] = (grown, step + 1, len(json.dumps(body)) // 4)


def run_audit(checkout: Path, log: Path, limit: float | None = None) -> dict[str, Any]:
    """Audit `log` with the warmloop in `checkout`, in a child process: its seconds (wall
    and CPU), its peak RSS and the conversations it found. With `limit`, the child is
    stopped after that many CPU seconds (then `seconds` is None)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}

    def capped() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (int(limit), int(limit) + 5))

    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(log)],
        env=env,
        cwd=checkout,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=capped,
    )
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    cpu = usage.ru_utime + usage.ru_stime
    rss = usage.ru_maxrss / 1024  # KiB on Linux
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) in {signal.SIGXCPU, signal.SIGKILL}:
        return {"seconds": None, "cpu": cpu, "rss_mb": rss, "conversations": None}
    if status != 0:
        raise RuntimeError(f"the audit of {log} failed (status {status})")
    found = json.loads(output.strip().splitlines()[-1])
    return {**found, "rss_mb": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--large", action="store_true", help="add a 20,000-request log")
    parser.add_argument("--baseline", type=Path, help="another warmloop checkout to compare")
    parser.add_argument("--limit", type=float, default=60.0, help="CPU s per baseline run")
    parser.add_argument("--shapes", default="single,long")
    args = parser.parse_args()
    sizes = (*SIZES, LARGE) if args.large else SIZES
    here = Path(__file__).resolve().parent.parent
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for shape in args.shapes.split(","):
            first: float | None = None
            for size in sizes:
                log = Path(folder) / f"{shape}-{size}.jsonl"
                write_log(log, shape, size)
                found = run_audit(here, log)
                per_k = found["cpu"] / (size / 1000)
                first = first or per_k
                row = (
                    f"| {shape} | {size:,} | {log.stat().st_size / 1e6:.0f} | "
                    f"{found['conversations']:,} | {found['seconds']:.1f} | {found['cpu']:.1f} | "
                    f"{per_k:.2f} | {per_k / first:.2f} | {found['rss_mb']:.0f} |"
                )
                if args.baseline:
                    before = run_audit(args.baseline, log, args.limit)
                    row += (
                        f" {before['cpu']:.1f} | {before['conversations']:,} | "
                        f"{before['rss_mb']:.0f} |"
                        if before["seconds"] is not None
                        else f" > {before['cpu']:.0f} (stopped) | - | {before['rss_mb']:.0f} |"
                    )
                rows.append(row)
                print(row, flush=True)
                log.unlink()
    head = (
        "| log | requests | MB | conversations | wall s | CPU s | CPU s per 1k | ratio to 1k "
        "| peak RSS MB |"
    )
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    if args.baseline:
        head += " baseline CPU s | baseline conversations | baseline peak RSS MB |"
        rule += "---:|---:|---:|"
    print("\n" + "\n".join([head, rule, *rows]))
