"""The answer check replayed over a logged eval: every submit, checked as the tree checks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.check_replay import logged, main, replay

LOG = """local:qwen2.5-coder-1.5b
  BAD [search] Which function computes the order total? -> 'order_total'
      3 requests, 9.0 s
      - search {"pattern":"order_total"}
      - submit {"answer":"12"}; submit {"answer":"order_total"}
  ok  [lookup] What is asked of no eval? -> 'x'
      1 requests, 1.0 s
      - submit {"answer":"x"}
| eval | model | correct |
"""


def test_each_submit_of_a_logged_turn_is_checked_after_the_calls_before_it(tmp_path: Path) -> None:
    items = list(logged(LOG.splitlines()))
    assert [(item.kind, len(item.turns)) for item in items] == [("search", 2), ("lookup", 1)]
    assert items[0].turns[1] == [
        ("submit", '{"answer":"12"}'),
        ("submit", '{"answer":"order_total"}'),
    ]
    log = tmp_path / "run.txt"
    log.write_text(LOG, encoding="utf-8")
    lines = list(replay([log], width=400))
    assert len(lines) == 3
    assert lines[0].startswith(
        "[search] Which function computes the order total? | '12' -> refused: "
    )
    assert (
        lines[1] == "[search] Which function computes the order total? | 'order_total' -> accepted"
    )
    assert lines[2].startswith("? [lookup] What is asked of no eval?")


def test_a_log_that_is_not_there_is_a_usage_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "heldout.log"
    monkeypatch.setattr(sys, "argv", ["check_replay", str(missing)])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert f"no such log: {missing}" in capsys.readouterr().err
