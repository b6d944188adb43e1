"""The edges of the `routed` miss kind (issue 49): a miss on a prefix another request of the
conversation read at most `ROUTED_SECONDS` (60 s) before is routed, one read longer ago is
not; and the other request counts as having read the prefix from `1 - TOLERANCE` (95%) of
it. The log and the audit as `test_audit_misses` builds them: the opening request, a
branch that reads it whole, and a second branch that reads nothing."""

from __future__ import annotations

from pathlib import Path

from tests.audit.test_audit_misses import INVOICES, REFUNDS, TASK, last_miss, prompt, request
from warmloop.audit.analysis import Finding
from warmloop.wire.miss_kinds import ROUTED_SECONDS, TOLERANCE

READ_AT = 50.0
"""When the first branch read the opening (seconds after it)."""
SIZED = TASK + "Give the amount that is off. " * 2
"""A task whose shared prefix is 2,100 tokens: 95% of it is a whole number (1,995)."""


def second_branch(tmp_path: Path, since_read: float, read: int | None = None) -> Finding:
    """The second branch's finding, `since_read` seconds after the first branch read `read`
    tokens of the opening (default: all of it)."""
    first = request(0.0, [], 0, task=SIZED)
    other = request(READ_AT, [INVOICES], prompt(first) if read is None else read, task=SIZED)
    last = request(READ_AT + since_read, [REFUNDS], 0, task=SIZED)
    found, _ = last_miss(tmp_path, [first, other, last])
    return found


def routed(tmp_path: Path, since_read: float, read: int | None = None) -> str | None:
    """The second branch's miss kind (see `second_branch`)."""
    return second_branch(tmp_path, since_read, read).cause_kind


def test_a_prefix_read_exactly_the_window_before_is_routed_and_one_read_longer_ago_is_not(
    tmp_path: Path,
) -> None:
    assert ROUTED_SECONDS == 60.0
    assert routed(tmp_path, 59.5) == "routed"
    assert routed(tmp_path, ROUTED_SECONDS) == "routed"
    assert routed(tmp_path, ROUTED_SECONDS + 0.5) == "evicted"  # inside the TTL, nothing else


def test_the_other_request_read_the_prefix_from_95_percent_of_it(tmp_path: Path) -> None:
    least = (1 - TOLERANCE) * second_branch(tmp_path, 10.0).reusable
    assert least == int(least) == 1_995  # the edge itself is a count the log can hold
    assert routed(tmp_path, 10.0, read=int(least)) == "routed"
    assert routed(tmp_path, 10.0, read=int(least) - 1) == "evicted"
