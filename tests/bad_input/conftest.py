"""The bad-input suite: every API key is the harness's SECRET (so a leak is detectable), and
the terminal summary reports how many cases ran per category (one file per category)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.bad_input.harness import KEY_VARIABLES, SECRET

HERE = Path(__file__).parent
COUNTS = pytest.StashKey[Counter[str]]()


def category(path: Path) -> str | None:
    """`providers` for tests/bad_input/test_providers.py; None for files that hold no cases."""
    if path.parent != HERE or not path.name.startswith("test_") or path.name == "test_counts.py":
        return None
    return path.stem.removeprefix("test_")


@pytest.fixture(autouse=True)
def secret_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in KEY_VARIABLES:
        monkeypatch.setenv(variable, SECRET)


@pytest.hookimpl(trylast=True)  # after `-m` deselected the other tier: the cases that run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    counts: Counter[str] = Counter()
    for item in items:
        name = category(Path(str(item.path)))
        if name is not None:
            counts[name] += 1
    config.stash[COUNTS] = counts


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    counts = config.stash.get(COUNTS, Counter())
    if not counts:
        return
    listed = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
    terminalreporter.write_line(f"bad-input cases: {sum(counts.values())} ({listed})")
