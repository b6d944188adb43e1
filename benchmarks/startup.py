"""What starting warmloop costs: the CPU seconds (user + system) of a fresh interpreter that
imports `warmloop`, and of `warmloop --help`, each as a ratio to one that imports pydantic
(issue 44: "a light start"). The audit and the proxy are often started per file or per
shell, so their start is paid every time.

Each command runs `--runs` times, the commands interleaved so a loaded machine slows all of
them alike; the CPU time of each child comes from the kernel (`resource.RUSAGE_CHILDREN`),
not the wall clock. `--tree DIR` measures another checkout's warmloop (its directory first on
`PYTHONPATH`), for a before-and-after pair on one machine in one run:

    python -m benchmarks startup [--runs 15] [--tree DIR ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

COMMANDS: dict[str, list[str]] = {
    "import pydantic": ["-c", "import pydantic"],
    "import warmloop": ["-c", "import warmloop"],
    "warmloop --help": ["-m", "warmloop", "--help"],
    "from warmloop import Agent": ["-c", "from warmloop import Agent"],
}
"""What is started: the baseline, the package, the CLI's help, and the public entry."""


def cpu_seconds(arguments: Sequence[str], tree: Path) -> float:
    """The CPU seconds (user + system) one fresh interpreter spends on `arguments`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, *arguments], env=env, cwd=tree, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(trees: Sequence[Path], runs: int) -> dict[tuple[str, str], list[float]]:
    """Seconds per (tree, command), every command of every tree once per round."""
    found: dict[tuple[str, str], list[float]] = {}
    for _ in range(runs):
        for tree in trees:
            for name, arguments in COMMANDS.items():
                found.setdefault((str(tree), name), []).append(cpu_seconds(arguments, tree))
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks startup", description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="runs of each command")
    parser.add_argument(
        "--tree", type=Path, action="append", default=[], help="another checkout to measure"
    )
    args = parser.parse_args(argv)
    trees = [HERE, *(tree.resolve() for tree in args.tree)]
    found = measure(trees, args.runs)
    print(f"CPU seconds of a fresh interpreter, {args.runs} runs each (median; ratio to pydantic)")
    print(f"{'tree':<28} {'command':<28} {'median':>8} {'min':>8} {'ratio':>6}")
    for tree in trees:
        base = statistics.median(found[(str(tree), "import pydantic")])
        for name in COMMANDS:
            seconds = found[(str(tree), name)]
            median = statistics.median(seconds)
            shown = tree.name if tree != HERE else f"{tree.name} (this)"
            print(f"{shown:<28} {name:<28} {median:8.3f} {min(seconds):8.3f} {median / base:6.2f}")
    return 0
