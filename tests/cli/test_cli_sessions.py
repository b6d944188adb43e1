"""The session commands through click's runner: `run --session`, `resume`, `sessions`,
`show NAME` (and `show FILE` still), `export`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import EXAMPLE, TASK, invoke
from warmloop.providers.scripted import ScriptedModel, call
from warmloop.sessions.sqlite import SQLiteStore
from warmloop.transcript import Transcript, scratch_copy

SONNET = "anthropic:claude-sonnet-4-6"


def model(*answers: str, name: str = "scripted") -> ScriptedModel:
    """Lists files, then submits each answer in turn (one run per answer)."""
    replies = [call("list_files"), call("submit", answer=answers[0])]
    replies += [call("submit", answer=a) for a in answers[1:]]
    return ScriptedModel(replies, name=name)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "sessions.db")


def start(db: str, scripted: ScriptedModel, name: str = "demo") -> None:
    args = ["run", TASK, "--workspace", str(EXAMPLE), "--session", name, "--store", db]
    result = invoke(scripted, *args)
    assert result.exit_code == 0, result.output
    assert f"new session {name}" in result.stdout
    assert f"session {name} stored in {db}" in result.stdout


def stored(db: str, name: str = "demo") -> Transcript:
    store = SQLiteStore(db)
    found = store.load(name)
    store.close()
    assert found is not None
    assert found.transcript is not None
    return found.transcript


def test_resume_continues_the_session_and_says_it_was_idle(db: str) -> None:
    scripted = model("first", "second")
    start(db, scripted)
    before = stored(db)
    result = invoke(scripted, "resume", "demo", "And now?", "--store", db)
    assert result.exit_code == 0, result.output
    assert "resuming session demo (6 messages, 2 requests): idle 0 s" in result.stdout
    assert "cache expected warm (it never expires)" in result.stdout  # the scripted profile
    assert "answer  second" in result.stdout
    after = stored(db)
    assert after.id == before.id
    assert after.messages[: len(before)] == before.messages


def test_resume_says_whether_the_providers_cache_is_warm_or_cold(db: str) -> None:
    scripted = model("first", "warm", "cold", name=SONNET)
    start(db, scripted)
    warm = invoke(scripted, "resume", "demo", "Again?", "--store", db)
    assert "cache expected warm (cold after 6 min)" in warm.stdout, warm.output
    store = SQLiteStore(db)
    store.raw("UPDATE sessions SET last_request_at = last_request_at - 7200")
    store.close()
    cold = invoke(scripted, "resume", "demo", "Later?", "--store", db)
    assert "idle 2 h; cache expected cold (cold after 6 min)" in cold.stdout, cold.output


def test_sessions_lists_model_steps_tokens_cost_idle_and_cache(db: str) -> None:
    start(db, model("x", name=SONNET), "priced")
    start(db, model("y"), "local-ish")
    result = invoke(None, "sessions", "--store", db)
    assert result.exit_code == 0, result.output
    rows = {
        cells[0]: cells
        for line in result.stdout.splitlines()
        if line.startswith("│")
        for cells in [[c.strip() for c in line.split("│")[1:-1]]]
    }
    priced, plain = rows["priced"], rows["local-ish"]
    assert priced[1:3] == [SONNET, "2"]
    assert int(priced[3].replace(",", "")) > 0
    assert float(priced[4]) > 0
    assert priced[5:7] == ["0 s", "warm"]
    assert plain[4] == "-"
    assert plain[6] == "warm"  # the scripted profile never expires


def test_show_name_prints_each_requests_usage_and_each_rewrite_point(db: str) -> None:
    start(db, model("x"))
    store = SQLiteStore(db)
    lease = store.acquire("demo")
    found = store.load("demo")
    assert found is not None
    assert found.transcript is not None
    after = scratch_copy(found.transcript)
    store.rewrite(lease, after, after.replace_content({3: "[pruned: list_files]"}))
    store.release(lease)
    store.close()
    result = invoke(None, "show", "demo", "--store", db)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "session demo: model scripted, 2 requests, revision 1, 1 archived original(s)" in out
    assert out.index("[2] assistant") < out.index("request 1:") < out.index("[3] tool result")
    assert "request 2:" in out
    assert "(replaced at revision 1; the original is archived)" in out
    assert "── rewrite, revision 1: replaced the content of 1 message(s) in 3-3" in out
    assert "[pruned: list_files]" in out


def test_show_file_still_shows_a_saved_transcript(db: str, tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    result = invoke(model("x"), "run", TASK, "--workspace", str(EXAMPLE), "--save", str(saved))
    assert result.exit_code == 0, result.output
    shown = invoke(None, "show", str(saved))
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("transcript t_")


def test_export_prints_a_loadable_transcript_or_everything_with_full(db: str) -> None:
    start(db, model("x"))
    result = invoke(None, "export", "demo", "--store", db)
    assert result.exit_code == 0, result.output
    assert Transcript.load(result.stdout) == stored(db)
    full = json.loads(invoke(None, "export", "demo", "--full", "--store", db).stdout)
    assert full["format"] == "warmloop.session/1"
    assert Transcript.load(json.dumps(full["transcript"])) == stored(db)
    assert [r["position"] for r in full["requests"]] == [2, 4]
    assert full["archive"] == []


def test_an_unknown_session_is_a_clear_one_line_error(db: str) -> None:
    for args in (["resume", "nope", "hi?"], ["show", "nope"], ["export", "nope"]):
        result = invoke(None, *args, "--store", db)
        assert result.exit_code == 1
        assert "error: no session 'nope' in" in result.stderr


def test_a_busy_session_is_a_one_line_error_and_nothing_runs(db: str) -> None:
    start(db, model("x"))
    holder = SQLiteStore(db)
    holder.acquire("demo")
    scripted = model("y")
    result = invoke(scripted, "resume", "demo", "Again?", "--store", db)
    holder.close()
    assert result.exit_code == 1
    assert "error: session 'demo' is in use by" in result.stderr
    assert scripted.requests == []


def test_an_unsafe_session_name_is_refused(db: str) -> None:
    result = invoke(model("x"), "run", TASK, "--session", "../x", "--store", db)
    assert result.exit_code == 2  # bad usage
    assert "session id '../x' is not allowed" in result.stderr


@pytest.mark.parametrize(
    ("column", "value"),
    [("length", "many"), ("revision", "x1"), ("created_at", "yesterday"), ("updated_at", "?")],
)
@pytest.mark.parametrize("command", ["sessions", "show", "export"])
def test_a_damaged_store_is_one_clear_line_not_a_traceback(
    db: str, column: str, value: str, command: str
) -> None:
    start(db, model("first"))
    store = SQLiteStore(db)
    store.raw(f"UPDATE sessions SET {column} = ? WHERE id = 'demo'", (value,))
    store.close()
    args = [command, "--store", db] if command == "sessions" else [command, "demo", "--store", db]
    result = invoke(None, *args)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"session 'demo': {column} holds {value!r}" in result.output


def test_resume_takes_the_model_options_run_takes(db: str) -> None:
    from click.testing import CliRunner

    from warmloop.cli.main import main
    from warmloop.cli.shared import CliContext

    scripted = model("first", "second")
    start(db, scripted)
    asked: list[dict[str, object]] = []

    def factory(spec: str, **options: object) -> ScriptedModel:
        asked.append(options)
        return scripted

    flags = ["--base-url", "http://127.0.0.1:9/v1", "--option", "timeout=30"]
    flags += ["--context-window", "50000"]
    result = CliRunner().invoke(
        main, ["resume", "demo", "And now?", "--store", db, *flags], obj=CliContext(factory)
    )
    assert result.exit_code == 0, result.output
    assert asked == [{"timeout": 30, "base_url": "http://127.0.0.1:9/v1", "context_window": 50000}]


# Round three (issue 32): resume. A session made in Python with its own tools and outputs is
# refused by `resume` (which runs the CLI's workspace tools), naming what it was made with.
def test_resume_refuses_a_session_made_with_other_tools_and_outputs(db: str) -> None:
    from warmloop.agent.agent import Agent

    def lookup(key: str) -> str:
        """Look a key up."""
        return key.upper()

    made = ScriptedModel([call("lookup", key="a"), call("submit", count=1)])
    agent = Agent(made, [lookup], outputs={"count": int})
    store = SQLiteStore(db)
    agent.run_sync("Count them.", session="demo", store=store)
    store.close()
    before = stored(db)
    result = invoke(model("second"), "resume", "demo", "And now?", "--store", db)
    assert result.exit_code == 1, result.output
    assert f"tools fingerprint {agent.fingerprint}" in result.output
    assert "it called lookup; its outputs: count)" in result.output
    assert "list_files" in result.output
    assert "outputs answer" in result.output
    assert "continue it with the agent that made it: --agent MODULE:ATTR" in result.output
    assert stored(db).messages == before.messages  # nothing was run or stored


def test_resume_goes_on_with_a_cli_session_whose_tool_descriptions_changed(db: str) -> None:
    """A session the CLI made under another warmloop version (its workspace tools described
    otherwise, so another fingerprint) called only the CLI's tools and gave only `answer`:
    it goes on, with a warning that its cache is re-written, rather than being refused."""
    import sqlite3

    start(db, model("first"))
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE sessions SET tools_fingerprint = 'an-older-cli' WHERE id = 'demo'")
    result = invoke(model("second"), "resume", "demo", "And now?", "--store", db)
    assert result.exit_code == 0, result.output
    assert "other descriptions of the CLI's tools (fingerprint an-older-cli" in result.output
    assert "session demo stored in" in result.stdout


def test_resume_runs_with_the_context_window_run_was_given(db: str) -> None:
    from click.testing import CliRunner

    from warmloop.cli.main import main
    from warmloop.cli.shared import CliContext

    replies = [call("list_files"), call("submit", answer="first"), call("submit", answer="2")]
    made: list[ScriptedModel] = []

    def factory(spec: str, context_window: int | None = None) -> ScriptedModel:
        scripted = ScriptedModel(replies[len(made) * 2 :], name=spec, context_window=context_window)
        made.append(scripted)
        return scripted

    def cli(*args: str) -> str:
        result = CliRunner().invoke(main, list(args), obj=CliContext(factory))
        assert result.exit_code == 0, result.output
        return result.output

    spec = "openai-compatible:mystery"  # a model whose window no table knows
    flags = ["--workspace", str(EXAMPLE), "--store", db, "--model", spec]
    told = cli("run", TASK, "--session", "demo", *flags, "--context-window", "50000")
    assert "context window is unknown" not in told
    assert "context window is unknown" not in cli("resume", "demo", "And now?", "--store", db)
    info = SQLiteStore(db).info("demo")
    assert info is not None
    assert info.meta.told_window == 50_000
