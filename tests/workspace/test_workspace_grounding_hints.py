"""The answer check's hints where they were unguarded (issue 49): a `path:line` copied from a
file read (no search) is a place, refused as one with the read that shows the value; and
the refusal of a name the task itself writes offers the next search from the line that
defines what the task names, the latest such, not from whichever hit came last."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call
from warmloop.messages import Message, ToolResult, UserText
from warmloop.workspace import Workspace, workspace_tools
from warmloop.workspace.grounding import unread_answer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


class Answer(BaseModel):
    answer: str


def refusal(task: str, answer: str, *results: tuple[str, str]) -> str:
    """The check's refusal of `answer` after the tool `results` (name, output)."""
    messages: list[Message] = [
        UserText(task),
        *(ToolResult(f"call_{n}", tool, text) for n, (tool, text) in enumerate(results)),
    ]
    problem = unread_answer(Answer(answer=answer), messages)
    assert problem is not None, answer
    return problem


def test_a_place_copied_from_a_file_read_is_refused_as_a_place_with_the_read_of_its_line() -> None:
    read = Workspace(EXAMPLE).read_file("config.toml")
    assert '12 | featured = "hinges"' in read  # read only: no search ever named the file
    for copied in ("config.toml:12", 'config.toml:12: featured = "hinges"'):
        problem = refusal("Which item does the shop show first?", copied, ("read_file", read))
        assert "where a line is, not the answer" in problem
        action = json.loads(problem.split("Read the line first: ")[1].split(", then")[0])
        assert action == {
            "tool": "read_file",
            "arguments": {"path": "config.toml", "start_line": 10, "end_line": 22},
        }


def test_an_agent_that_copies_a_place_from_its_read_is_told_so_and_submits_the_value() -> None:
    """Where a user meets it: the answer check on a run (`check_outputs`), the refusal going
    back to the model as the submit's error."""
    model = ScriptedModel(
        [
            call("read_file", path="config.toml"),
            call("submit", answer="config.toml:12"),
            call("submit", answer="hinges"),
        ]
    )
    agent = Agent(model, workspace_tools(EXAMPLE), outputs=Answer, check_outputs=unread_answer)
    run = agent.run_sync("Which item does the shop show first?")
    assert run.output.answer == "hinges"
    refused = [
        m for m in run.transcript if isinstance(m, ToolResult) and m.name == "submit" and m.is_error
    ]
    assert len(refused) == 1
    assert '"config.toml:12" is a file and a line: where a line is' in refused[0].content


ENCODER_TASK = (
    "json/__init__.py makes _default_encoder from a class; which file defines that class?"
)
SUBJECT = "json/__init__.py:110: _default_encoder = JSONEncoder("
"""The line that defines what the task names: it leads to JSONEncoder."""


def test_a_name_the_task_writes_leads_on_from_the_line_defining_it_not_the_last_hit() -> None:
    later = "json/decoder.py:5: from json.scanner import make_scanner"  # a search after
    problem = refusal(ENCODER_TASK, "json/__init__.py", ("search", SUBJECT), ("search", later))
    assert "is named in the task itself" in problem
    assert f"Its line `{SUBJECT.split(': ', 1)[1]}` names JSONEncoder" in problem
    assert problem.endswith('{"tool": "search", "arguments": {"pattern": "JSONEncoder"}}.')


def test_of_two_lines_defining_what_the_task_names_the_latest_leads_on() -> None:
    """The run searched again and found where the name is really set: that line leads on,
    not the placeholder it saw first."""
    placeholder = "json/__init__.py:99: _default_encoder = None"
    problem = refusal(
        ENCODER_TASK, "json/__init__.py", ("search", placeholder), ("search", SUBJECT)
    )
    assert problem.endswith('{"tool": "search", "arguments": {"pattern": "JSONEncoder"}}.')
