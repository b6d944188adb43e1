"""The benchmarks' one entry point: `python -m benchmarks NAME [ARGS]` runs one benchmark.

    python -m benchmarks                 # the names, one line each
    python -m benchmarks NAME --help     # that benchmark's own arguments

Each name is a module of this package with a `main()` that parses its own arguments; the
module is imported only when its name is run, so listing the names needs none of their
dependencies (a real engine, PostgreSQL, DBOS, matplotlib).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

BENCHMARKS: dict[str, tuple[str, str]] = {
    "scenarios": ("scenario_table", "scripted sessions: warmloop vs three baselines, priced"),
    "long_session": ("long_session", "maintenance vs the offline optimum and baselines"),
    "long_session_host": (
        "long_session_host",
        "the host session: where warmloop and the optimum prune",
    ),
    "wide_step": ("wide_step", "Anthropic, a 60-call parallel step: cost vs ideal, optimum"),
    "facts": ("facts", "every default: a host's window, maintenance on vs off"),
    "cold_resume": ("cold_resume", "the cold-resume prune, and why a warm one is not"),
    "keepalive": ("keepalive", "pauses: keep-alive rules vs the offline optimum"),
    "toolbox": ("toolbox", "120-tool session: disclosure strategies priced"),
    "tool_schemas": ("tool_schemas", "tool-block size against the OpenAI SDK's helper"),
    "fleet_fanout": ("fleet_fanout", "a 100-task batch: warm-up first vs all at once"),
    "overhead": ("overhead", "warmloop's own per-step work, 10 to 10,000 messages"),
    "sessions": ("sessions", "per-step persistence and resume, SQLite and PostgreSQL"),
    "stall": ("stall", "event-loop stalls while concurrent runs persist sessions"),
    "concurrency": ("concurrency", "one Agent: 200 runs in one loop and from 16 threads"),
    "audit_scale": ("audit_scale", "`warmloop audit` seconds and memory as a log grows"),
    "local_eval": ("local_eval", "embedded models: example and held-out questions"),
    "check_replay": ("check_replay", "the answer check replayed over a logged eval, no model"),
    "prefill": ("prefill", "real llama.cpp prefill: append-only vs rebuilt prompts"),
    "local_startup": ("local_startup", "embedded model: first and second question of a process"),
    "warm_start": ("warm_start", "fresh `warmloop run`s: with and without the saved opening"),
    "workspace_map": ("workspace_map", "the workspace map: its size and build, cold and cached"),
    "affinity": ("affinity", "a fleet: session header vs round robin, real replicas"),
    "fleet": ("fleet", "worker processes: crash, throughput and rate on PostgreSQL"),
    "proxy_overhead": ("proxy_overhead", "`warmloop proxy`: added latency and memory, loopback"),
    "proxy_pause": ("proxy_pause", "`warmloop proxy`: a pause's keep-alives and their saving"),
    "proxy_returns": (
        "proxy_returns",
        "`warmloop proxy`: one-shot jobs against interactive sessions, keep-alive spend",
    ),
    "framework_corpus": ("framework_corpus.record", "record other frameworks' request logs"),
    "proxy_corpus": ("proxy_corpus", "other frameworks direct vs through `warmloop proxy`"),
    "layout": ("layout", "the package's shape: lines, Any, long functions, names, providers"),
    "startup": ("startup", "CPU seconds of `import warmloop` and `warmloop --help` vs pydantic"),
    "subagents": ("subagents", "a tree of sub-agents and an approval: cost vs the optimum"),
    "approval": ("approval_process", "an approval 20 minutes later in another process, priced"),
}
"""Name -> (module under `benchmarks`, what it measures)."""


def listing() -> str:
    """The names and what each measures, as `python -m benchmarks` prints them."""
    width = max(map(len, BENCHMARKS))
    lines = ["usage: python -m benchmarks NAME [ARGS]   (NAME --help for its arguments)", ""]
    lines += [f"  {name:<{width}}  {about}" for name, (_, about) in BENCHMARKS.items()]
    return "\n".join(lines)


def run(argv: Sequence[str]) -> int:
    """Run the benchmark `argv[0]` with the rest as its arguments; list the names if none."""
    if not argv or argv[0] in {"-h", "--help"}:
        print(listing())
        return 0
    name, *rest = argv
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}: choose one of the names below\n", file=sys.stderr)
        print(listing(), file=sys.stderr)
        return 2
    module = importlib.import_module(f"benchmarks.{BENCHMARKS[name][0]}")
    # Each benchmark parses sys.argv with its own argparse; its usage line names this command.
    sys.argv = [f"python -m benchmarks {name}", *rest]
    module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(run(sys.argv[1:]))
