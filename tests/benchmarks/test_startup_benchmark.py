"""The start-up benchmark measures every command once per round, in this tree and another,
and prints each as a ratio to importing pydantic."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import startup


def test_each_command_is_measured_in_each_tree(capsys: pytest.CaptureFixture[str]) -> None:
    here = startup.HERE
    found = startup.measure([here], runs=1)
    assert set(found) == {(str(here), name) for name in startup.COMMANDS}
    assert all(seconds[0] > 0 for seconds in found.values())
    assert startup.main(["--runs", "1"]) == 0
    printed = capsys.readouterr().out
    for name in startup.COMMANDS:
        assert name in printed
    assert " 1.00" in printed  # pydantic against itself


def test_a_tree_that_cannot_start_fails_loudly(tmp_path: Path) -> None:
    (tmp_path / "warmloop").mkdir()
    (tmp_path / "warmloop" / "__init__.py").write_text("raise ImportError('broken')\n")
    with pytest.raises(Exception, match="returned non-zero"):
        startup.cpu_seconds(startup.COMMANDS["import warmloop"], tmp_path)
