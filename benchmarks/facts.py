"""Facts, not guesses, measured with every default and only what a real user knows.

1. A 20-call session of file-sized results through a loopback OpenAI-compatible host
   (`loopback_host`), once publishing its window the way vLLM does and once publishing
   nothing: results cut, rewrites made, and the share of the cacheable prefix the host
   reused (its own `cached_tokens` against each request's predecessor).
2. Maintenance on against maintenance off, for every short scenario of `benchmarks.scenarios`
   and sessions of 10 to 30 file-sized results (where a warm prune is on offer and a wrong
   horizon shows), under every provider's rules, priced by the simulator: on must cost at
   most 0.5% more anywhere; and the long scenarios' gains.

3. `--sweep`: the warm prune's horizon over sessions of 10 to 60 results of three sizes,
   the worst on / off anywhere and the saving at 40 and 60 results, for warmloop's horizon
   and for the step budget taken as the horizon (what warmloop did before).

    python -m benchmarks facts [--sweep]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from benchmarks.loopback_host import Host, serve
from benchmarks.measure import PROVIDERS, measure
from benchmarks.scenarios import SCENARIOS, STEP_SECONDS, Request, Scenario
from warmloop import Agent, Reply, ScriptedModel, Tool, resolve_model, tool
from warmloop.agent import request as runner
from warmloop.agent.agent import DEFAULT_MAINTENANCE, DEFAULT_MAX_STEPS

FILE_CHARS = 12_000
"""A file-sized result: about 3,000 tokens (twenty fit a 128k window)."""
CALLS = 20
SHORT = (
    "40-step session",
    "follow-up",
    "15-call parallel step",
    "session resumed after 2 hours idle",
    "10 file-sized results",
    "20 file-sized results",
    "30 file-sized results",
)
LONG = ("200-step session past the compaction trigger", "60 file-sized results")


def file_text(k: int, chars: int = FILE_CHARS) -> str:
    line = f"# module {k}: " + " ".join(f"name_{(k * 31 + i) % 211}" for i in range(10)) + "\n"
    return (line * (chars // len(line) + 1))[:chars]


def reader(chars: int = FILE_CHARS) -> Tool:
    """A `read_file` tool whose files are `chars` characters long."""

    def read_file(path: str) -> str:
        """Read one file of the repository."""
        return file_text(int(path.removeprefix("src/module_").removesuffix(".py")), chars)

    return tool(read_file)


read_file = reader()


def step(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Read the next file until twenty are read, then submit."""
    done = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    if done < CALLS:
        return "read_file", {"path": f"src/module_{done}.py"}
    return "submit", {"answer": "read every module"}


def host_session(publish: bool) -> dict[str, Any]:
    """The session through the loopback host with every default."""
    host = Host(step, window=128_000, publish=publish)
    with serve(host) as url:
        model = resolve_model(f"openai-compatible:{url}#served-model")
        run = Agent(model, [read_file]).run_sync("Read every module of src/ in order.")
    return {
        "host": "publishes max_model_len 128,000" if publish else "publishes no window",
        "requests": len(host.prompts),
        "results cut": len(run.truncated),
        "rewrites": len(run.maintenance),
        "prefix reuse": host.reuse,
        "warnings": len(run.warnings),
    }


def file_session(calls: int, chars: int = FILE_CHARS) -> Callable[[str, bool], Scenario]:
    """A scenario: `calls` file-sized reads, then submit, planned under `spec`'s facts."""

    def build(spec: str, maintained: bool) -> Scenario:
        replies = [
            Reply(calls=(("read_file", json.dumps({"path": f"src/module_{k}.py"})),))
            for k in range(calls)
        ]
        replies.append(Reply(calls=(("submit", json.dumps({"answer": "read them"})),)))
        model = ScriptedModel(replies, name=spec)
        maintenance = DEFAULT_MAINTENANCE if maintained else None
        budget = max(calls + 2, DEFAULT_MAX_STEPS)  # the default, as a user would leave it
        agent = Agent(model, [reader(chars)], max_steps=budget, maintenance=maintenance)
        agent.run_sync("Read every module of src/ in order.")
        requests = tuple(Request(STEP_SECONDS * k, r.payload) for k, r in enumerate(model.requests))
        return Scenario(f"{calls} file-sized results", f"{calls} reads then submit", requests)

    return build


def on_off(names: tuple[str, ...]) -> list[dict[str, Any]]:
    """Dollars with maintenance on and off per scenario and provider."""
    builders: dict[str, Callable[[str, bool], Scenario]] = dict(SCENARIOS)
    builders.update({f"{n} file-sized results": file_session(n) for n in (10, 20, 30, 60)})
    rows = []
    for name in names:
        build = builders[name]
        on = measure(name, "on", {spec: list(build(spec, True).requests) for spec in PROVIDERS})
        off = measure(name, "off", {spec: list(build(spec, False).requests) for spec in PROVIDERS})
        for spec in PROVIDERS:
            if spec in on.dollars and off.dollars.get(spec):
                rows.append(
                    {
                        "scenario": name,
                        "provider": spec,
                        "on": on.dollars[spec],
                        "off": off.dollars[spec],
                        "on / off": on.dollars[spec] / off.dollars[spec],
                    }
                )
    return rows


SWEEP_SIZES = (6_000, 12_000, 24_000)
SWEEP_CALLS = (10, 12, 15, 18, 20, 22, 25, 28, 30, 35, 40, 60)


def sweep() -> None:
    """Worst on / off over the sweep, per horizon rule (Anthropic, OpenAI, DeepSeek)."""
    specs = ("anthropic:claude-sonnet-4-6", "openai:gpt-5", "deepseek:deepseek-flash")
    # Read from the module that calls it: if the loop stops asking it, this fails loudly
    # instead of timing two identical arms.
    original: Callable[..., int] = runner.requests_ahead  # type: ignore[attr-defined]
    rules: dict[str, Callable[..., int]] = {
        "warmloop's horizon": original,
        "the step budget (before)": lambda done, budget_left, earlier=(), **_: budget_left,
    }
    print("| horizon | worst on / off (where) | on / off at 40 results | at 60 results |")
    print("|---|---|---|---|")
    try:
        for rule, ahead in rules.items():
            runner.requests_ahead = ahead  # type: ignore[attr-defined]  # where a request asks
            worst, where = 0.0, ""
            long: dict[int, list[float]] = {40: [], 60: []}
            for chars in SWEEP_SIZES:
                for calls in SWEEP_CALLS:
                    build = file_session(calls, chars)
                    on = measure("", "on", {p: list(build(p, True).requests) for p in PROVIDERS})
                    off = measure("", "off", {p: list(build(p, False).requests) for p in PROVIDERS})
                    for spec in specs:
                        ratio = on.dollars[spec] / off.dollars[spec]
                        if ratio > worst:
                            worst, where = ratio, f"{calls} x {chars // 4:,} tokens, {spec}"
                        if calls in long:
                            long[calls].append(ratio)
            cells = [f"{min(v):.3f}-{max(v):.3f}" for v in long.values()]
            print(f"| {rule} | {worst:.4f} ({where}) | {cells[0]} | {cells[1]} |", flush=True)
    finally:
        runner.requests_ahead = original  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", action="store_true", help="only the horizon sweep (3.)")
    if parser.parse_args().sweep:
        sweep()
        return
    print("## A 20-call session of file-sized results, every default\n")
    print("| host | requests | results cut | rewrites | prefix reuse | warnings |")
    print("|---|---|---|---|---|---|")
    for publish in (True, False):
        r = host_session(publish)
        print(
            f"| {r['host']} | {r['requests']} | {r['results cut']} | {r['rewrites']} | "
            f"{r['prefix reuse']:.3f} | {r['warnings']} |"
        )
    for title, names in (("Short sessions", SHORT), ("Long sessions", LONG)):
        print(f"\n## {title}: maintenance on against off (simulated dollars)\n")
        print("| scenario | provider | on | off | on / off |")
        print("|---|---|---|---|---|")
        rows = on_off(names)
        for row in rows:
            print(
                f"| {row['scenario']} | {row['provider']} | ${row['on']:.4f} | "
                f"${row['off']:.4f} | {row['on / off']:.4f} |"
            )
        worst = max(rows, key=lambda row: row["on / off"])
        print(
            f"\nworst on / off: {worst['on / off']:.4f} ({worst['scenario']}, {worst['provider']})"
        )
    print(json.dumps({"calls": CALLS, "file_chars": FILE_CHARS}))
