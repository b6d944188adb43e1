"""How mid-conversation parts read as text, the same on every wire format.

A notice (or system text after the opening) has no system role in the middle of most
conversations, so it is rendered in place as tagged text; a fold's summary stands in the
place of the span it covers. One wrapper each, used by every renderer.
"""

from __future__ import annotations

from warmloop.transcript import Notice, Summary, SystemText


def reminder(text: str) -> str:
    """Mid-conversation system text, in place, for wire formats with no system role there."""
    return f"<system-reminder>{text}</system-reminder>"


def summary_text(summary: Summary) -> str:
    """A fold's summary, in the place of the messages it covers."""
    return f"<conversation-summary>{summary.text}</conversation-summary>"


def inline_text(message: Notice | Summary | SystemText) -> str:
    """The text a notice, a summary or a later system text reads as, in place."""
    if isinstance(message, Summary):
        return summary_text(message)
    return reminder(message.text)
