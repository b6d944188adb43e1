"""`warmloop run` opens with the workspace's map (issue 50): the model is sent it in its
instructions, the run's first lines say what it holds and cost, a second run parses
nothing, and a session that goes on keeps the opening it had (no new map)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.test_cli import EXAMPLE, TASK, invoke
from warmloop.providers.scripted import ScriptedModel, call
from warmloop.workspace.code_map import MAP_HEADER


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WARMLOOP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def answering(*answers: str) -> ScriptedModel:
    return ScriptedModel([call("submit", answer=a) for a in answers])


def test_run_sends_the_map_and_says_what_it_holds_and_cost(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    model = answering("north")
    result = invoke(model, "run", TASK, "--workspace", str(root))
    assert result.exit_code == 0, result.output
    assert "workspace map: 7 files, 129 lines, 15 of 15 definitions" in result.stdout
    assert "(built: 7 of 7 files parsed in" in result.stdout
    sent = str(model.requests[0].payload)  # what the model was sent, as it was sent
    assert MAP_HEADER in sent
    assert "VAT_RATE = 0.21" in sent
    again = invoke(answering("north"), "run", TASK, "--workspace", str(root))
    assert "(unchanged: 0 of 7 files parsed in" in again.stdout
    (root / "inventory" / "rates.py").write_text("VAT_RATE = 0.19\n")
    changed = invoke(answering("north"), "run", TASK, "--workspace", str(root))
    assert "the workspace changed since the last map (1 of 7 files parsed" in changed.stdout


def test_a_session_that_goes_on_keeps_its_opening_and_builds_no_map(tmp_path: Path) -> None:
    db = str(tmp_path / "sessions.db")
    model = answering("first", "second")
    started = invoke(
        model, "run", TASK, "--workspace", str(EXAMPLE), "--session", "s", "--store", db
    )
    assert "workspace map:" in started.stdout
    resumed = invoke(model, "resume", "s", "And now?", "--store", db)
    assert resumed.exit_code == 0, resumed.output
    assert "workspace map:" not in resumed.stdout
