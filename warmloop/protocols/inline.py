"""How mid-conversation parts read as text, the same on every wire format.

A notice (or system text after the opening) has no system role in the middle of most
conversations, so it is rendered in place as tagged text; a fold's summary stands in the
place of the span it covers; a notice that announces tools carries each one's full
description inside its reminder, one `<tool>` line each. One wrapper each, used by every
renderer.

An announced tool's name, description and schema come from outside (an MCP server), so a
`<` in them could close the wrappers and put the text outside. Each tool line is JSON, and
every `<` in it is written as the JSON escape `\\u003c` (`untagged`): the same JSON to any
reader, no tag to the model, and byte-for-byte unchanged for text without a `<`. The
toolbox's search listings, which quote the same schemas, follow the same rule.
"""

from __future__ import annotations

import json

from warmloop.messages import AnnouncedTool, Notice, Summary, SystemText
from warmloop.tools.announce import untagged


def reminder(text: str) -> str:
    """Mid-conversation system text, in place, for wire formats with no system role there."""
    return f"<system-reminder>{text}</system-reminder>"


def summary_text(summary: Summary) -> str:
    """A fold's summary, in the place of the messages it covers."""
    return f"<conversation-summary>{summary.text}</conversation-summary>"


def tool_line(tool: AnnouncedTool) -> str:
    """One announced tool, in full, as the JSON a tool block would hold (its schema text
    inserted as stored), untagged."""
    head = json.dumps({"name": tool.name, "description": tool.description}, ensure_ascii=False)
    line = f'{head[:-1]}, "parameters": {tool.parameters}}}'
    return f"<tool>{untagged(line)}</tool>"


def announcement_text(notice: Notice) -> str:
    """A notice and the full descriptions of the tools it announces, in place."""
    return reminder("\n".join([notice.text, *(tool_line(t) for t in notice.tools)]))


def inline_text(message: Notice | Summary | SystemText) -> str:
    """The text a notice, a summary or a later system text reads as, in place."""
    if isinstance(message, Summary):
        return summary_text(message)
    if isinstance(message, Notice) and message.tools:
        return announcement_text(message)
    return reminder(message.text)
