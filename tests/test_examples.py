"""Every newcomer script in `examples/` runs as a user runs it (`python examples/NAME.py`, in
its own process, offline on the scripted model or a server it starts) and prints exactly
what is pinned here. A script added to `examples/` without a row here fails the suite."""

from __future__ import annotations

import importlib.util
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
HELPERS = {"fleet_agents.py", "mcp_weather_server.py"}
"""Modules the examples start or import, not run on their own."""

PRINTED = {
    "tools_and_outputs.py": (
        None,
        'step 1: population({"city": "Paris"}) -> 2102650\n'
        'step 2: population({"city": "Lyon"}) -> 522250\n'
        'step 3: submit({"city": "Paris", "people": 2102650}) -> Submitted.\n'
        "answer: Paris (2,102,650 people)\n"
        "requests: 3, cache hit rate: 59%\n",
    ),
    "follow_up.py": (
        None,
        "first: 4 nuts are left.\n"
        "second: Yes: 4 is under the reorder level of 10.\n"
        "same conversation: True\n"
        "first request of the follow-up read from the cache: True\n",
    ),
    "session_resume.py": (
        None,
        "monday: 1,200.00\ntuesday: It was 1,200.00 EUR.\nmessages stored: 9\n",
    ),
    "toolbox_catalog.py": (
        None,
        "tool block: ['read_file', 'search_tools', 'call_tool']\n"
        "search_tools: 2 matches for 'invoice':\n"
        "call_tool: invoice 7: 120.00 EUR\n"
        "submit: Submitted.\n"
        "answer: 120.00 EUR\n",
    ),
    "mcp_tools.py": (
        "mcp",
        "catalog: ['get_forecast']\n"
        "search_tools: 1 match for 'weather forecast':\n"
        "call_tool: Oslo: sunny for 2 day(s)\n"
        "submit: Submitted.\n"
        "answer: Sunny for two days.\n",
    ),
    "sub_agents.py": (
        None,
        "plan: Split the three long functions, the parser first.\n"
        "explorer on the lexer: read 0 tokens first\n"
        "explorer on the parser: read 790 tokens first\n"
        "explorer on the printer: read 790 tokens first\n"
        "requests in the tree: 8\n"
        "tree usage: 5466 prompt tokens\n",
    ),
    "telemetry_spans.py": (
        "opentelemetry.sdk",
        "invoke_agent\n"
        "  chat claude-sonnet-4-6\n"
        "  execute_tool lookup\n"
        "  chat claude-sonnet-4-6\n"
        "conversation: support-42\n"
        "cache read tokens: 179\n"
        "cost: $0.000786\n",
    ),
}
FLEET_PRINTED = (
    "Ticket 1: the site is down: {'answer': 'high'}\n"
    "Ticket 2: the site is down: {'answer': 'high'}\n"
    "Ticket 3: the site is down: {'answer': 'high'}\n"
    "tasks: {'done': 3}\n"
)
FLEET_SKIPPED = "skipped: give a PostgreSQL URL (an argument or $WARMLOOP_FLEET_DB)\n"


def run_example(name: str, *args: str) -> str:
    """What `python examples/NAME.py ARGS` prints, from the repository root."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("WARMLOOP_FLEET_DB", None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_example_is_run_here() -> None:
    scripts = {path.name for path in EXAMPLES.glob("*.py")} - HELPERS
    assert scripts == {*PRINTED, "fleet_batch.py"}


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_an_example_prints_what_it_says(name: str) -> None:
    needs, printed = PRINTED[name]
    if needs is not None and importlib.util.find_spec(needs.split(".")[0]) is None:
        pytest.skip(f"{name} needs {needs}, which is not installed")
    assert run_example(name) == printed


@pytest.fixture
def fleet_url() -> Iterator[str | None]:
    """A fresh database on the test PostgreSQL ($WARMLOOP_TEST_POSTGRES), or None."""
    server = os.environ.get("WARMLOOP_TEST_POSTGRES", "").strip()
    if not server or importlib.util.find_spec("dbos") is None:
        yield None
        return
    from tests.support.stores import admin, with_database

    name = "warmloop_example_" + secrets.token_hex(4)
    admin(server, f"CREATE DATABASE {name}")
    yield with_database(server, name)
    admin(server, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.mark.slow  # a real worker process: the slow tier
def test_the_fleet_example_runs_a_batch_or_says_why_not(fleet_url: str | None) -> None:
    assert run_example("fleet_batch.py") == FLEET_SKIPPED
    if fleet_url is None:
        return
    assert run_example("fleet_batch.py", fleet_url) == FLEET_PRINTED
