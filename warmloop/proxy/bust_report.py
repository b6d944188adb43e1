"""The proxy's live guard: a request that moves its conversation's cached prefix is reported
as it happens, with its cause (`wire.guard`): a line on stderr and a `warmloop.proxy` log
record."""

from __future__ import annotations

import logging
from collections.abc import Callable

from warmloop.proxy.forwarding import one_line
from warmloop.wire.guard import Bust

logger = logging.getLogger("warmloop.proxy")
# The stderr line is the terminal's; the record is for an application's own handlers (with
# none, Python's last-resort handler would print each bust a second time).
logger.addHandler(logging.NullHandler())


def report_bust(conversation: str, bust: Bust, warn: Callable[[str], None]) -> None:
    """Report `bust` in `conversation`: `warn` (the stderr line) and a log record."""
    warn(f"cache bust in {conversation} ({bust.kind}): {bust}")
    logger.warning(
        "cache bust in %s (%s): %s",
        conversation,
        bust.kind,
        one_line(str(bust)),
        extra={"conversation": conversation, "cause": bust.kind},
    )
