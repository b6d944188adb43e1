"""The CLI against hostile text and odd usage: control characters are shown, never obeyed;
a finished run is saved before its report and survives a report that cannot be shown;
`show` refuses what no transcript is, without blocking or reading it all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tests.support.workspace_cases import hang_guard
from warmloop.cli.console import json_text, printable
from warmloop.cli.main import main
from warmloop.cli.shared import CliContext
from warmloop.cli.show import MAX_SHOW_BYTES
from warmloop.facts.usage import Usage
from warmloop.messages import ToolResult
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.scripted import Reply, ScriptedModel, call
from warmloop.transcript import Transcript

# A window title, a screen clear, a clipboard write (OSC 52), an 8-bit CSI, a bell, a
# carriage return that would overwrite the line, a right-to-left override.
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\x07\rspoof\u202etxt.exe"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def invoke(model: ScriptedModel, *args: str) -> Result:
    obj = CliContext(model_factory=lambda spec: model)
    return CliRunner().invoke(main, list(args), obj=obj, env={"COLUMNS": "200"})


def test_printable_escapes_controls_and_keeps_lines() -> None:
    assert printable("a\x1b[2Jb\tc\nd\x9b\x7f\u2066") == "a\\x1b[2Jb\tc\nd\\x9b\\x7f\\u2066"
    assert printable("plain ✓ text") == "plain ✓ text"
    assert json_text('{"a": "x\x9by\u202e"}') == '{"a": "x\\u009by\\u202e"}'


def test_file_contents_and_model_text_reach_the_terminal_escaped(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"hello {HOSTILE}\n", encoding="utf-8")
    model = ScriptedModel(
        [call("read_file", path="notes.txt"), call("submit", answer=f"done {HOSTILE}")]
    )
    saved = tmp_path / "run.json"
    ran = invoke(model, "run", "Read notes.", "--workspace", str(workspace), "--save", str(saved))
    assert ran.exit_code == 0, ran.output
    shown = CliRunner().invoke(main, ["show", str(saved)])
    assert shown.exit_code == 0, shown.output
    for output in (ran.output, shown.output):
        assert not any(raw in output for raw in RAW)
        assert "\\x1b]0;pwned" in output  # visible, as written (rich drops the bell)
    assert "\\u202etxt.exe" in shown.output
    # The transcript itself keeps the file's text as read: escaping is for the screen only.
    loaded = Transcript.load(saved.read_text("utf-8"))
    results = [m for m in loaded if isinstance(m, ToolResult)]
    assert "\x1b]0;pwned" in results[0].content


class InconsistentUsage(ScriptedModel):
    """Reports usage the price table cannot bill (more 1h writes than writes), under a
    priced model name: the report's cost line fails, the run itself is fine."""

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        response = await super().send(rendered, session_id=session_id)
        odd = Usage(100, 0, 10, 5, cache_write_1h_tokens=20)
        return ModelResponse(response.turn, odd, response.format_error)


def test_a_finished_run_is_saved_and_shown_whatever_its_usage(tmp_path: Path) -> None:
    model = InconsistentUsage(
        [call("submit", answer="forty-two")], name="anthropic:claude-sonnet-4-6"
    )
    saved = tmp_path / "run.json"
    result = invoke(model, "run", "Answer.", "--workspace", str(tmp_path), "--save", str(saved))
    assert result.exit_code == 0, result.output
    assert "forty-two" in result.output
    assert "cost unknown" in result.output
    assert f"transcript saved to {saved}" in result.output
    assert len(Transcript.load(saved.read_text("utf-8"))) == 4


def test_a_failed_save_still_shows_the_outputs(tmp_path: Path) -> None:
    target = tmp_path / "vanishing-dir" / "run.json"
    target.parent.mkdir()  # writable when --save is checked, before the run

    def answer(rendered: object) -> Reply:
        target.parent.rmdir()  # ...and gone by the time the finished run is saved
        return call("submit", answer="forty-two")

    model = ScriptedModel([answer])
    result = invoke(model, "run", "Answer.", "--workspace", str(tmp_path), "--save", str(target))
    assert result.exit_code == 1
    assert "forty-two" in result.output
    assert "could not save the transcript" in result.output


def test_show_refuses_an_oversized_file_without_reading_it(tmp_path: Path) -> None:
    forged = tmp_path / "forged.json"
    with forged.open("wb") as out:
        out.truncate(MAX_SHOW_BYTES + 1)  # sparse: no disk, no memory, only a size
    result = CliRunner().invoke(main, ["show", str(forged)])
    assert result.exit_code == 1
    assert "MiB a transcript file may have" in result.output
    assert "Traceback" not in result.output


def test_show_refuses_a_fifo_instead_of_blocking_on_it(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    with hang_guard(pytestconfig):  # before the fix, opening it waited for a writer forever
        result = CliRunner().invoke(main, ["show", str(pipe)])
    assert result.exit_code == 1
    assert "not a regular file" in result.output
