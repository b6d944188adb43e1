"""The suite's two tiers (docs/getting-started.md, "Run the tests"): a plain `pytest` runs no
slow test, a test marked `engine` or `crash` counts as slow, and the test command runs both
tiers with its arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import DEFAULT_TIER, SLOW_KINDS

ROOT = Path(__file__).resolve().parent.parent


def test_a_plain_run_holds_no_slow_engine_or_crash_test(request: pytest.FixtureRequest) -> None:
    if request.config.option.markexpr != DEFAULT_TIER:
        pytest.skip("this run chose its own tests with -m")
    slow = [
        item.nodeid
        for item in request.session.items
        if any(item.get_closest_marker(kind) for kind in ("slow", *SLOW_KINDS))
    ]
    assert slow == []


def test_the_test_command_runs_both_tiers_with_its_arguments() -> None:
    lines = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8").splitlines()
    default = lines.index('.venv/bin/pytest "$@" || fast=$?')
    assert lines.index('.venv/bin/pytest -m slow "$@" || slow=$?') > default
