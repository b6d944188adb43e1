"""A fresh `warmloop run` on the embedded model: first request with and without the saved opening.

Each arm is a new process running exactly what a user types (the default model, the
example workspace, one step), so each loads a fresh llama.cpp engine:

  cold   `--option openings=false`: the opening (instructions, protocol, tools) is evaluated
  prime  the default: saves the opening's KV state in the cache directory if it is not there
  warm   the default again: loads the saved opening instead of evaluating it

The figures are the first request's row of each run's request table (prompt tokens,
reused tokens, seconds) and the whole process's wall seconds; the first request's
seconds include generating its step, which is the same text in both arms.

    python -m benchmarks warm_start [--threads 2] [--model local]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TASK = "What is the VAT rate?"
WORKSPACE = Path(__file__).resolve().parent.parent / "examples" / "workspace"
ROW = re.compile(r"^│\s*1\s*│\s*([\d,]+)\s*│\s*([\d,]+)\s*│[^│]*│[^│]*│\s*([\d.]+)\s*│", re.M)


@dataclass(frozen=True)
class FirstRequest:
    """The first request of one fresh run, and the run's whole wall time."""

    arm: str
    prompt_tokens: int
    reused_tokens: int
    seconds: float
    process_seconds: float
    table: str
    """The run's own request table, as printed."""


def fresh_run(arm: str, model: str, threads: int, *options: str) -> FirstRequest:
    """Run `warmloop run` in a new process and read its first request's row."""
    command = [sys.executable, "-m", "warmloop", "run", TASK, "--workspace", str(WORKSPACE)]
    command += ["--model", model, "--max-steps", "1", "--option", f"n_threads={threads}"]
    for option in options:
        command += ["--option", option]
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"}
    )
    elapsed = time.perf_counter() - started
    found = ROW.search(done.stdout)
    if found is None:
        raise SystemExit(f"no request table from {' '.join(command)}:\n{done.stdout}{done.stderr}")
    prompt, reused, seconds = found.groups()
    table = done.stdout[done.stdout.find("Requests") :].split("\ncost")[0].rstrip()
    return FirstRequest(
        arm,
        int(prompt.replace(",", "")),
        int(reused.replace(",", "")),
        float(seconds),
        elapsed,
        table,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", default="local")
    args = parser.parse_args()
    arms = [
        fresh_run("cold (openings=false)", args.model, args.threads, "openings=false"),
        fresh_run("prime (default)", args.model, args.threads),
        fresh_run("warm (default, saved opening)", args.model, args.threads),
    ]
    print(f"model {args.model}, {args.threads} threads, task {TASK!r}\n")
    print("| run | first prompt tokens | reused | first request s | process s |")
    print("| --- | --- | --- | --- | --- |")
    for arm in arms:
        print(
            f"| {arm.arm} | {arm.prompt_tokens:,} | {arm.reused_tokens:,} | "
            f"{arm.seconds:.2f} | {arm.process_seconds:.1f} |"
        )
    cold, warm = arms[0], arms[-1]
    print(
        f"\nfirst request: warm/cold = {warm.seconds / cold.seconds:.2f}x; "
        f"process: {warm.process_seconds / cold.process_seconds:.2f}x"
    )
    print(f"\nthe warm run's own table:\n{warm.table}")
