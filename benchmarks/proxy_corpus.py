"""The framework corpus direct and through `warmloop proxy` (issue 34, must-show 1).

Each driver of `framework_corpus` (LangChain, LangGraph, pydantic-ai, the OpenAI Agents SDK,
smolagents; installed in a virtual environment of their own) runs its scripted task twice
against the same loopback API (`framework_corpus.upstream`): once through `warmloop record`
(direct: every request as the framework sent it) and once through `warmloop proxy --record`
(every fix and the guard on). Each log is priced under its wire's own provider rules
(Messages: `anthropic:claude-sonnet-4-6`; Chat Completions and Responses: `openai:gpt-5`) by
the truth's computation (`framework_corpus.truth.price`, the requests as sent), and divided
by the best those same requests allow (`truth.bound`: a perfect cache of exactly what the
framework sends). Also printed: the cost against a loop that only appends (`truth.price`'s
perfect prefix), which a framework that rebuilds its prompt cannot reach through any proxy,
and the busts the proxy's live guard named.

    python3 -m venv /tmp/corpus-venv
    /tmp/corpus-venv/bin/pip install -r benchmarks/framework_corpus/requirements.txt
    PYTHONPATH=. .venv/bin/python -m benchmarks proxy_corpus --venv /tmp/corpus-venv

(`--only NAME` runs one driver, `--json` prints the rows as JSON, `--results FILE` writes
them where the docs page's chart is drawn from: `benchmarks/results/framework_corpus.json`,
`--chart FILE.png` draws it now.) warmloop's own loop runs the same task on each wire
(`drivers/warmloop_*.py`, in this environment): the row the frameworks stand beside.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

from benchmarks.corpus_chart import draw
from benchmarks.framework_corpus.record import DRIVERS, record
from benchmarks.framework_corpus.script import TASK_TAG
from benchmarks.framework_corpus.truth import Request, bound, price, read_lines, request_of

RULES = {
    "/v1/messages": ("messages", "anthropic:claude-sonnet-4-6"),
    "/v1/chat/completions": ("chat", "openai:gpt-5"),
    "/v1/responses": ("responses", "openai:gpt-5"),
}
"""A logged path -> the wire's name in the table and the rules it is priced under."""
BUST = re.compile(r"cache bust in \S+ \(([^)]*)\)")
TARGET = 1.05


@dataclass(frozen=True)
class Priced:
    """One log priced: dollars as sent, at the bound, against an append-only loop."""

    wire: str
    spec: str
    actual: float
    bound: float
    append_only: float

    @property
    def ratio(self) -> float:
        return self.actual / self.bound

    @property
    def append_ratio(self) -> float:
        return self.actual / self.append_only


@dataclass(frozen=True)
class Row:
    framework: str
    wire: str
    rules: str
    requests: int
    direct: float
    proxied: float
    proxied_vs_append_only: float
    busts_named: int
    causes: str


def priced(log: Path) -> Priced:
    """A log's dollars under its wire's rules, summed over its conversations (tasks)."""
    tasks: dict[str, list[Request]] = {}
    wires = set()
    for line, entry in read_lines(log):
        wires.add(RULES[entry["path"]])
        body = entry["body"]
        task = TASK_TAG.search(json.dumps(body, ensure_ascii=False))
        if task is None:
            raise ValueError(f"{log} line {line}: no [task:...] tag in the request")
        anthropic = entry["path"] == "/v1/messages"
        tasks.setdefault(task.group(1), []).append(request_of(line, body, anthropic))
    if len(wires) != 1:
        raise ValueError(f"{log}: one wire per driver expected, found {sorted(wires)}")
    ((wire, spec),) = wires
    actual = best = append = 0.0
    for requests in tasks.values():
        bills = price(spec, requests)
        actual += sum(sent.dollars(spec) for sent, _ in bills)
        append += sum(perfect.dollars(spec) for _, perfect in bills)
        best += sum(bill.dollars(spec) for bill in bound(spec, requests))
    return Priced(wire, spec, actual, best, append)


def measure(driver: Path, venv: Path) -> Row:
    """Run one driver direct and through the proxy; its row of the table."""
    with tempfile.TemporaryDirectory() as scratch:
        direct_log, proxied_log = Path(scratch) / "direct.jsonl", Path(scratch) / "proxy.jsonl"
        record(driver, venv, direct_log)
        said = record(driver, venv, proxied_log, proxy=True)
        direct, proxied = priced(direct_log), priced(proxied_log)
        count = sum(1 for _ in read_lines(proxied_log))
    causes = [found.group(1) for line in said if (found := BUST.search(line))]
    return Row(
        framework=driver.stem,
        wire=direct.wire,
        rules=direct.spec,
        requests=count,
        direct=round(direct.ratio, 3),
        proxied=round(proxied.ratio, 3),
        proxied_vs_append_only=round(proxied.append_ratio, 3),
        busts_named=len(causes),
        causes=", ".join(sorted(set(causes))),
    )


def table(rows: list[Row]) -> str:
    head = (
        "| framework | wire | rules | requests | direct | through proxy "
        "| vs append-only | busts named |"
    )
    lines = [head, "|---|---|---|---:|---:|---:|---:|---|"]
    for row in rows:
        named = f"{row.busts_named} ({row.causes})" if row.busts_named else "0"
        lines.append(
            f"| {row.framework} | {row.wire} | {row.rules} | {row.requests} "
            f"| {row.direct:.3f}x | {row.proxied:.3f}x | {row.proxied_vs_append_only:.3f}x "
            f"| {named} |"
        )
    worst = max((row.proxied for row in rows), default=0.0)
    verdict = "met" if worst <= TARGET else "missed"
    lines.append("")
    lines.append(f"worst through the proxy: {worst:.3f}x its bound (target {TARGET}x: {verdict})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--venv", type=Path, default=Path("/tmp/corpus-venv"))
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--results", type=Path, help="write the rows here (the docs' chart)")
    parser.add_argument("--chart", type=Path, help="draw the chart here (PNG)")
    args = parser.parse_args()
    drivers = [d for d in sorted(DRIVERS.glob("*.py")) if not args.only or d.stem in args.only]
    if args.only and len(drivers) != len(set(args.only)):
        parser.error(f"--only names a driver not in {DRIVERS}")
    rows = []
    for driver in drivers:
        rows.append(measure(driver, args.venv))
        if not args.json:
            print(f"{driver.stem}: done", flush=True)
    print(json.dumps([asdict(row) for row in rows], indent=1) if args.json else table(rows))
    plain = [asdict(row) for row in rows]
    if args.results is not None:
        run = {"date": date.today().isoformat(), "python": sys.version.split()[0]}
        args.results.write_text(json.dumps({"run": run, "rows": plain}, indent=1) + "\n")
    if args.chart is not None:
        draw(plain, args.chart)
