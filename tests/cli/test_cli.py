"""The `warmloop` CLI through click's runner, with a scripted model injected via CliContext."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from warmloop.agent.result import Run
from warmloop.cli import run as run_command
from warmloop.cli.main import main
from warmloop.cli.shared import CliContext
from warmloop.cli.view import message_lines, report
from warmloop.facts.usage import Usage
from warmloop.messages import AssistantTurn, ToolResult, UserText
from warmloop.outputs import Outputs, submitted
from warmloop.providers.anthropic.record import LAYOUT as ANTHROPIC
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.local.model import LocalModel
from warmloop.providers.scripted import Script, ScriptedModel, call
from warmloop.tools.invoke import cap_text
from warmloop.transcript import Transcript
from warmloop.wire.guard import PrefixGuard
from warmloop.wire.request_record import RequestRecord
from warmloop.wire.stream import canonical_stream
from warmloop.workspace.grounding import unread_answer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
TASK = "Which items need reordering?"


class RecordingModel(ScriptedModel):
    """A scripted model that also keeps the usage it reported, to check the table against."""

    def __init__(self, replies: list[Script], *, text_protocol: bool = False) -> None:
        super().__init__(replies, text_protocol=text_protocol)
        self.usages: list[Usage] = []

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        response = await super().send(rendered, session_id=session_id)
        self.usages.append(response.usage)
        return response


def invoke(model: ScriptedModel | None, *args: str, specs: list[str] | None = None) -> Result:
    """Run the CLI; with a model, every --model string resolves to it (recorded in `specs`)."""
    obj = None
    if model is not None:

        def factory(spec: str) -> ScriptedModel:
            if specs is not None:
                specs.append(spec)
            return model

        obj = CliContext(model_factory=factory)
    # A wide console, so live lines are not cut to 80 columns.
    return CliRunner().invoke(main, list(args), obj=obj, env={"COLUMNS": "200"})


def exploring_model() -> RecordingModel:
    return RecordingModel(
        [
            call("list_files"),
            call("read_file", path="nope.txt"),
            call("search", pattern=r"threshold\s*="),
            call("submit", answer="A200, B300 and D500 [red]are low[/red]"),
        ]
    )


def table_rows(output: str) -> list[list[str]]:
    """The body rows of the rich request table, cell by cell."""
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in output.splitlines()
        if line.startswith("│")
    ]


def test_run_shows_steps_outputs_and_request_table() -> None:
    model = exploring_model()
    specs: list[str] = []
    result = invoke(model, "run", TASK, "--workspace", str(EXAMPLE), specs=specs)
    assert result.exit_code == 0, result.output
    assert specs == ["local"]  # the default model
    out = result.stdout
    assert "step 1 → list_files {}" in out
    assert "← list_files: README.md (+6 lines)" in out
    assert "✗ read_file: read_file failed: WorkspaceError: 'nope.txt' does not exist" in out
    assert "← search: config.toml:7: threshold = 5" in out
    # Model text is shown as written, never interpreted as rich markup.
    assert "answer  A200, B300 and D500 [red]are low[/red]" in out

    guard = PrefixGuard()
    stable = [guard.check(r.wire).fraction for r in model.requests]
    expected = [
        [
            str(n),
            f"{u.prompt_tokens:,}",
            f"{u.cache_read_tokens:,}",
            f"{100 * u.cache_hit_rate:.1f}",
            "-" if n == 1 else f"{100 * stable[n - 1]:.1f}",
        ]
        for n, u in enumerate(model.usages, start=1)
    ]
    rows = table_rows(out)
    assert [row[:5] for row in rows] == expected
    assert len(rows) == 4
    assert all(float(row[5]) >= 0 for row in rows)
    prompt = sum(u.prompt_tokens for u in model.usages)
    reused = sum(u.cache_read_tokens for u in model.usages)
    assert reused > 0
    assert f"total: 4 requests, {prompt:,} prompt tokens, {reused:,} reused" in out


def test_save_writes_a_loadable_transcript(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    result = invoke(
        exploring_model(), "run", TASK, "--workspace", str(EXAMPLE), "--save", str(saved)
    )
    assert result.exit_code == 0, result.output
    assert f"transcript saved to {saved}" in result.stdout
    transcript = Transcript.load(saved.read_text(encoding="utf-8"))
    assert transcript.messages[1] == UserText(TASK)
    calls = [c.name for m in transcript if isinstance(m, AssistantTurn) for c in m.tool_calls]
    assert calls == ["list_files", "read_file", "search", "submit"]
    assert transcript.messages[-1] == ToolResult("call_3_0", "submit", "Submitted.")


def test_max_steps_reaches_the_extract_step() -> None:
    model = RecordingModel([call("list_files"), call("submit", answer="from memory")])
    result = invoke(model, "run", TASK, "--workspace", str(EXAMPLE), "--max-steps", "1")
    assert result.exit_code == 0, result.output
    assert "Outputs (from the extract step)" in result.stdout
    assert "answer  from memory" in result.stdout
    assert "user The step budget is used up." in result.stdout


def test_run_checks_answers_for_the_embedded_model_only() -> None:
    assert run_command.answer_check(LocalModel()) is unread_answer
    assert run_command.answer_check(ScriptedModel([])) is None  # a paid API: no extra request


def test_run_refuses_each_answer_no_file_line_it_saw_holds_until_the_step_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(run_command, "answer_check", lambda model: unread_answer)  # as if local
    made_up = call("submit", answer="made up")
    model = RecordingModel([call("list_files"), made_up, made_up, made_up])
    result = invoke(model, "run", TASK, "--workspace", str(EXAMPLE), "--max-steps", "3")
    assert result.exit_code == 0, result.output
    refusal = '✗ submit: Not accepted yet: answer "made up" is not written'
    assert result.stdout.count(refusal) == 2  # steps 2 and 3; the extract step is not checked
    assert "answer  made up" in result.stdout


def test_text_protocol_turn_is_shown_as_thought_and_call() -> None:
    model = RecordingModel(
        [
            'Thought: look around\nAction: {"tool": "list_files", "arguments": {}}',
            'Thought: done\nAction: {"tool": "submit", "arguments": {"answer": "README.md"}}',
        ],
        text_protocol=True,
    )
    result = invoke(model, "run", TASK, "--workspace", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert "step 1 look around\nstep 1 → list_files {}\n" in result.stdout
    assert "Action:" not in result.stdout


def test_bad_model_string_exits_2_with_one_clear_line() -> None:
    result = invoke(None, "run", TASK, "--model", "nonsense:x", "--workspace", str(EXAMPLE))
    assert result.exit_code == 2  # bad usage
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: unknown model 'nonsense:x'; use one of: local,")
    assert "Traceback" not in result.output


def test_missing_workspace_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = invoke(exploring_model(), "run", TASK, "--workspace", str(missing))
    assert result.exit_code == 2  # bad usage
    assert (
        result.stderr == f"error: workspace {missing} does not exist; pass an existing directory\n"
    )


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ([call("list_files")], "has no reply left for request 2"),
        (["", " "], "the run ended without valid outputs"),  # no words: no text answer
    ],
    ids=["request-failed", "extract-failed"],
)
def test_failed_run_saves_its_transcript_and_exits_1(
    tmp_path: Path, replies: list[Script], message: str
) -> None:
    saved = tmp_path / "failed.json"
    model = RecordingModel(replies)
    result = invoke(model, "run", TASK, "--workspace", str(EXAMPLE), "--save", str(saved))
    assert result.exit_code == 1
    assert message in result.stderr
    assert result.stderr.startswith("error: ")
    assert len(result.stderr.splitlines()) == 1
    transcript = Transcript.load(saved.read_text(encoding="utf-8"))
    assert transcript.messages[1] == UserText(TASK)
    turns = [m for m in transcript if isinstance(m, AssistantTurn)]
    assert len(turns) == len(replies)  # every reply the model gave is kept


def test_unwritable_save_path_is_a_clear_error(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir.json"
    result = invoke(
        exploring_model(), "run", TASK, "--workspace", str(EXAMPLE), "--save", str(target)
    )
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: could not save the transcript to {target}")


def test_show_prints_every_message(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    invoke(exploring_model(), "run", TASK, "--workspace", str(EXAMPLE), "--save", str(saved))
    transcript = Transcript.load(saved.read_text(encoding="utf-8"))
    result = invoke(None, "show", str(saved))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith(f"transcript {transcript.id}, revision 0, {len(transcript)} messages\n")
    for index, message in enumerate(transcript):
        assert f"[{index}] " in out, message
    assert "[1] user\n    Which items need reordering?" in out
    assert "[5] tool error read_file (call_1_0)" in out
    assert '→ search {"pattern": "threshold\\\\s*="}' in out
    assert "    inventory/stock.py\n" in out  # the full list_files result, not a preview
    assert "[red]are low[/red]" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not a readable warmloop transcript (transcript is not valid JSON"),
        (json.dumps({"format": "other"}), "is not a readable warmloop transcript (not a warmloop"),
        (None, "cannot read"),
    ],
    ids=["not-json", "other-format", "missing"],
)
def test_show_refuses_what_is_not_a_transcript(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "file.json"
    if content is not None:
        path.write_text(content)
    result = invoke(None, "show", str(path))
    assert result.exit_code == 1
    assert message in result.stderr
    assert "pass a file written by warmloop run --save" in result.stderr


def test_report_names_a_cache_bust_and_its_cause() -> None:
    guard = PrefixGuard()
    payloads = [
        {"system": system, "messages": [{"role": "user", "content": "hi"}]}
        for system in ("You are an agent.", "You are a helper.")
    ]
    checks = [guard.check(canonical_stream(p, ANTHROPIC)) for p in payloads]
    run = Run(
        outputs=submitted(Outputs().model(answer="x")),
        transcript=Transcript(),
        requests=[RequestRecord(Usage(input_tokens=5), 0.5, check) for check in checks],
        steps=2,
    )
    buffer = io.StringIO()
    report(Console(file=buffer, width=200), run)
    out = buffer.getvalue()
    bust = checks[1].bust
    assert bust is not None
    assert f"request 2: cache bust at character {bust.position} (system): the system" in out
    assert f"prefix-stable {100 * checks[1].fraction:.1f}%" in out
    assert checks[1].fraction < 1


def test_a_priced_model_gets_a_cost_column_and_a_cost_line() -> None:
    from warmloop.facts.price_table import prices_for
    from warmloop.facts.pricing import cost

    model = RecordingModel([call("list_files"), call("submit", answer="README.md")])
    model.name = "anthropic:claude-sonnet-4-5"
    result = invoke(model, "run", TASK, "--workspace", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    prices = prices_for(model.name)
    assert prices is not None
    rows = table_rows(result.stdout)
    assert [row[6] for row in rows] == [f"{cost(u, prices):.5f}" for u in model.usages]
    total = sum(cost(u, prices) for u in model.usages)
    assert f"${total:.4f} over 2 requests" in result.stdout


def test_an_unpriced_model_says_its_cost_is_unknown() -> None:
    result = invoke(exploring_model(), "run", TASK, "--workspace", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert all(len(row) == 6 for row in table_rows(result.stdout))
    assert "cost unknown: no price for 'scripted'" in result.stdout


def test_a_cut_result_is_shown_live_as_what_the_model_received() -> None:
    text, total = cap_text("\n".join(f"line {n}: " + "x" * 60 for n in range(100)), 2000)
    assert total is not None
    shown = message_lines(ToolResult("call_0_0", "search", text), 1, 200)
    kept = len(text.split("\n[truncated")[0])
    assert shown[0].plain.endswith(f"(showing {kept:,} of {total:,} chars)")
    whole = message_lines(ToolResult("call_0_0", "search", "a\nb\nc"), 1, 200)
    assert whole[0].plain.endswith("(+2 lines)")
