"""Run the scenario benchmarks: every loop on every scenario, priced under each provider.

    python -m benchmarks scenarios [--out DIR]

Prints the markdown table and writes `table.md` and `cumulative_cost.png` (the PNG needs
matplotlib: `pip install -r benchmarks/requirements.txt`) into DIR (default: bench-results).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.baselines import POLICIES
from benchmarks.measure import PROVIDERS, LoopResult, measure
from benchmarks.report import markdown, plot
from benchmarks.scenarios import SCENARIOS


def run_all() -> list[LoopResult]:
    """Every loop on every scenario that can run today, once per provider: warmloop with
    its planner on that provider's rules, the baselines over the plain session record."""
    results = []
    for name, build in SCENARIOS.items():
        ours = {spec: list(build(spec, True).requests) for spec in PROVIDERS}
        results.append(measure(name, "warmloop", ours))
        events = {spec: build(spec, False) for spec in PROVIDERS}
        for loop, policy in POLICIES.items():
            if loop != "warmloop":
                sent = {spec: policy(scenario) for spec, scenario in events.items()}
                results.append(measure(name, loop, sent))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("bench-results"))
    args = parser.parse_args()
    results = run_all()
    table = markdown(results)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(table, encoding="utf-8")
    try:
        picture = plot(results, args.out / "cumulative_cost.png")
    except ImportError:
        print("no PNG: matplotlib is missing (pip install -r benchmarks/requirements.txt)")
    else:
        print(f"wrote {args.out / 'table.md'} and {picture}")
