"""The CLI's exit codes by kind of failure, and `--json`'s error object (issue 45): bad
usage 2, a missing key or extra 5, a provider that stayed unavailable 6, a limit reached
7 (`--max-cost`: the request that would pass it is never sent), a run that failed 1 (each
also `error.kind` in the JSON object). Through the command itself, with CliRunner; a
provider through its official SDK against a loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import EXAMPLE, TASK, invoke
from tests.support.fake_servers import Failure, Script, serve
from warmloop.providers.scripted import ScriptedModel, call

PRICED = "anthropic:claude-sonnet-4-6"


def failed_json(stdout: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stdout)
    assert data["outputs"] is None
    error = data["error"]
    assert isinstance(error, dict)
    assert set(error) == {"kind", "type", "message"}
    return data


def test_a_bad_option_is_bad_usage() -> None:
    result = invoke(None, "run", TASK, "--model", "nonsense:x", "--json")
    assert result.exit_code == 2
    assert failed_json(result.stdout)["error"]["kind"] == "usage"


def test_a_missing_key_is_not_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = invoke(None, "run", TASK, "--model", PRICED, "--workspace", str(EXAMPLE), "--json")
    assert result.exit_code == 5
    error = failed_json(result.stdout)["error"]
    assert error["kind"] == "missing_key"
    assert error["type"] == "MissingApiKey"
    assert "ANTHROPIC_API_KEY" in error["message"]
    assert "--option api_key=KEY" in result.stderr


def test_a_provider_that_stays_unavailable_is_its_own_code() -> None:
    script = Script([Failure(503, "overloaded")] * 3)
    with serve(script) as url:
        spec = f"openai-compatible:{url}#served"
        args = ["--model", spec, "--option", "max_retries=0", "--workspace", str(EXAMPLE)]
        result = invoke(None, "run", TASK, *args, "--json")
    assert result.exit_code == 6, result.output
    error = failed_json(result.stdout)["error"]
    assert error["kind"] == "provider_unavailable"
    assert error["type"] == "RequestFailed"


def test_max_cost_stops_before_the_request_that_would_pass_it(tmp_path: Path) -> None:
    def model() -> ScriptedModel:
        replies = [call("list_files"), call("read_file", path="inventory.py")]
        return ScriptedModel([*replies, call("submit", answer="A200")], name=PRICED)

    whole = invoke(model(), "run", TASK, "--workspace", str(EXAMPLE), "--json")
    assert whole.exit_code == 0, whole.output
    first = json.loads(whole.stdout)["requests"][0]["cost"]
    scripted = model()
    saved = tmp_path / "stopped.json"
    args = ["--workspace", str(EXAMPLE), "--max-cost", f"{first * 2}", "--save", str(saved)]
    result = invoke(scripted, "run", TASK, *args, "--json")
    assert result.exit_code == 7, result.output
    assert len(scripted.requests) == 1  # the second would pass the limit: never sent
    data = failed_json(result.stdout)
    assert data["error"]["kind"] == "limit_reached"
    assert data["error"]["type"] == "UsageLimitExceeded"
    assert data["cost"] == pytest.approx(first)
    assert "cost_limit" in result.stderr
    assert saved.exists()


def test_a_run_that_fails_is_1_with_its_kind() -> None:
    result = invoke(ScriptedModel([call("list_files")]), "run", TASK, "--json")
    assert result.exit_code == 1
    assert failed_json(result.stdout)["error"]["kind"] == "run_failed"


def test_max_cost_must_be_positive() -> None:
    result = invoke(None, "run", TASK, "--max-cost", "0")
    assert result.exit_code == 2
    assert "--max-cost" in result.stderr
