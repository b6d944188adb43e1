"""A fold that hides an announcement un-teaches the tool: the model no longer sees its full
description, so the next search announces it again (as the README says); an announcement a
fold leaves visible stays taught."""

from __future__ import annotations

from benchmarks.toolbox_session import CORE, catalog
from tests.support.sessions_data import grown, step
from warmloop.messages import AnnouncedTool, Notice
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript

TOOLS = catalog()
FOUND = TOOLS[0].spec.name


def announced() -> Transcript:
    """Step 1, the announcement of one catalog tool, steps 2 and 3."""
    transcript = grown(1)
    notice = Notice("Discovered tool:", tools=(AnnouncedTool(FOUND, "Does it.", "{}"),))
    transcript.append(notice)
    transcript.extend(step(2))
    transcript.extend(step(3))
    return transcript


def test_a_fold_that_hides_an_announcement_lets_the_tool_be_announced_again() -> None:
    transcript = announced()
    view = Toolbox(CORE, catalog=TOOLS).conversation()
    assert FOUND in view.step(transcript).discovered  # taught: not announced twice
    notice_at = next(i for i, m in enumerate(transcript) if isinstance(m, Notice))
    start = next(i for i, m in enumerate(transcript) if m.kind == "assistant")
    end = next(i for i, m in enumerate(transcript) if i > notice_at + 3 and m.kind == "assistant")
    transcript.fold(start, end, "I found a tool and used it.")
    assert FOUND not in view.step(transcript).discovered  # the same view, scanned afresh


def test_a_fold_before_the_announcement_keeps_the_tool_taught() -> None:
    transcript = announced()
    view = Toolbox(CORE, catalog=TOOLS).conversation()
    assert FOUND in view.step(transcript).discovered
    notice_at = next(i for i, m in enumerate(transcript) if isinstance(m, Notice))
    start = next(i for i, m in enumerate(transcript) if m.kind == "assistant")
    transcript.fold(start, notice_at, "Step one happened.")
    assert FOUND in view.step(transcript).discovered
