"""`warmloop run --json` and `resume --json`: one JSON object on stdout when the run ends,
nothing else there, the exit code unchanged (issue 32)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_cli import EXAMPLE, TASK, exploring_model, invoke
from tests.cli.test_cli_sessions import model as session_model
from warmloop.providers.scripted import ScriptedModel, call


def only_object(stdout: str) -> dict[str, Any]:
    """stdout holds exactly one JSON object, on one line, and nothing else."""
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    data = json.loads(lines[0])
    assert isinstance(data, dict)
    return data


def test_run_json_prints_one_object_with_outputs_and_each_request() -> None:
    scripted = exploring_model()
    result = invoke(scripted, "run", TASK, "--workspace", str(EXAMPLE), "--json")
    assert result.exit_code == 0, result.output
    data = only_object(result.stdout)
    assert data["outputs"] == {"answer": "A200, B300 and D500 [red]are low[/red]"}
    assert data["error"] is None
    assert data["session"] is None
    assert [r["usage"]["prompt_tokens"] for r in data["requests"]] == [
        u.prompt_tokens for u in scripted.usages
    ]
    assert [r["usage"]["cache_read_tokens"] for r in data["requests"]] == [
        u.cache_read_tokens for u in scripted.usages
    ]
    assert data["usage"]["prompt_tokens"] == sum(u.prompt_tokens for u in scripted.usages)
    assert "cost" in data
    assert result.stderr == ""


def test_run_without_json_keeps_the_human_view() -> None:
    result = invoke(exploring_model(), "run", TASK, "--workspace", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert "step 1 → list_files {}" in result.stdout
    assert "Requests" in result.stdout


def test_failed_run_json_carries_the_error_and_exits_1(tmp_path: Path) -> None:
    saved = tmp_path / "failed.json"
    scripted = ScriptedModel([call("list_files")])
    args = ["run", TASK, "--workspace", str(EXAMPLE), "--json", "--save", str(saved)]
    result = invoke(scripted, *args)
    assert result.exit_code == 1
    data = only_object(result.stdout)
    assert data["error"]["kind"] == "run_failed"
    assert data["error"]["type"] == "RequestFailed"
    assert "has no reply left for request 2" in data["error"]["message"]
    assert data["outputs"] is None
    assert len(data["requests"]) == 1  # the request sent before it failed
    assert result.stderr.startswith("error: ")
    assert saved.exists()


def test_resume_json_names_the_session(tmp_path: Path) -> None:
    db = str(tmp_path / "sessions.db")
    scripted = session_model("first", "second")
    args = ["run", TASK, "--workspace", str(EXAMPLE), "--session", "demo", "--store", db]
    assert invoke(scripted, *args, "--json").exit_code == 0
    result = invoke(scripted, "resume", "demo", "And now?", "--store", db, "--json")
    assert result.exit_code == 0, result.output
    data = only_object(result.stdout)
    assert data["session"] == "demo"
    assert data["outputs"] == {"answer": "second"}
    assert len(data["requests"]) == 1
