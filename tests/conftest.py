"""Suite-wide fixtures. The autouse `prefix_invariant` fixture enforces I1 on every test.

Every ScriptedModel created during a test, and every body recorded in `wire_log`, is checked
after the test: per session, each request must extend the previous one. A test that must
move the prefix says so with `@pytest.mark.moves_cache_prefix(reason="...")`; a bare marker
is an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.wire import WireLog
from warmloop.providers.scripted import ScriptedModel


@pytest.fixture
def wire_log() -> WireLog:
    """Provider tests record captured wire bodies here; checked by `prefix_invariant`."""
    return WireLog()


def _scripted_violations(models: list[ScriptedModel]) -> list[str]:
    log = WireLog()
    for n, model in enumerate(models):
        for rendered, session in zip(model.requests, model.sessions, strict=True):
            log.record(f"scripted#{n}/{session}", rendered.stream)
    return log.violations()


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
    original = ScriptedModel.__init__

    def tracking_init(self: ScriptedModel, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        models.append(self)

    monkeypatch.setattr(ScriptedModel, "__init__", tracking_init)
    yield
    if marker is not None:
        return
    problems = _scripted_violations(models)
    if wire is not None:
        problems += wire.violations()
    if problems:
        pytest.fail("cache prefix moved (I1):\n" + "\n".join(problems), pytrace=False)
