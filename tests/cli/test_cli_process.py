"""The real `warmloop` executable in a subprocess, as a newcomer runs it: the save path is
checked first, tool errors are shown whole, a failed run still shows its requests, `show`
prints each thought once and nothing internal, `--help` and the models guide name the same
models, and a local run that would overflow its window stops early, naming `--n-ctx`.
`python -m warmloop` is the same command, and `record` stops cleanly on SIGTERM."""

from __future__ import annotations

import importlib
import os
import re
import select
import signal
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.fake_servers import Failure, Script, ToolUse, serve
from warmloop.cli.main import main
from warmloop.messages import SystemText, ToolResult, UserText
from warmloop.protocols import react_text
from warmloop.providers.local.chat_template import DETAILS_KEY
from warmloop.providers.local.models import DEFAULT_MODEL, MODELS
from warmloop.transcript import Transcript

pytestmark = pytest.mark.slow  # the real `warmloop` executable, a process per test: the slow tier

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "workspace"
WARMLOOP = str(Path(sys.executable).with_name("warmloop"))
PYTHON_M = (sys.executable, "-m", "warmloop")


HANG_GUARD = 1_200
"""Seconds after which a run counts as hung: a guard against a hang, not a speed check
(the real model on two cores shared with other work took over 120 s)."""


def environment(columns: int) -> dict[str, str]:
    """A fixed width, and no API key from the environment."""
    return {**os.environ, "COLUMNS": str(columns), "OPENAI_COMPATIBLE_API_KEY": ""}


def warmloop(
    *args: str, columns: int = 100, command: Sequence[str] = (WARMLOOP,)
) -> subprocess.CompletedProcess[str]:
    """Run the installed executable (or `command`, e.g. PYTHON_M)."""
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=environment(columns),
        timeout=HANG_GUARD,
        check=False,
    )


def run_on(
    url: str, *extra: str, columns: int = 100, command: Sequence[str] = (WARMLOOP,)
) -> subprocess.CompletedProcess[str]:
    task = "Which function computes the order total?"
    spec = f"openai-compatible:{url}"
    return warmloop(
        "run",
        task,
        "--model",
        spec,
        "--workspace",
        str(EXAMPLE),
        *extra,
        columns=columns,
        command=command,
    )


def test_an_unwritable_save_path_fails_before_any_request(tmp_path: Path) -> None:
    script = Script([ToolUse("submit", {"answer": "order_total"})])
    target = tmp_path / "missing" / "run.json"
    with serve(script) as url:
        result = run_on(url, "--save", str(target))
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: could not save the transcript to {target}")
    assert "--save path in a writable directory" in result.stderr
    assert script.received == []  # nothing was sent: the check came first


def test_the_live_view_shows_a_tool_error_whole(tmp_path: Path) -> None:
    missing = "inventory/" + "no_such_module_" * 6 + ".py"  # longer than a line, not cut
    script = Script(
        [ToolUse("read_file", {"path": missing}), ToolUse("submit", {"answer": "not found"})]
    )
    with serve(script) as url:
        result = run_on(url, columns=60)
    assert result.returncode == 0, result.stderr
    expected = f"read_file failed: WorkspaceError: {missing!r} does not exist in the workspace"
    assert f"{expected}; call list_files" in result.stdout


def test_a_failed_run_still_prints_its_request_table(tmp_path: Path) -> None:
    saved = tmp_path / "failed.json"
    script = Script([ToolUse("list_files", {}), ToolUse("search", {"pattern": "total"}), Failure()])
    with serve(script) as url:
        result = run_on(url, "--save", str(saved))
    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    rows = [line for line in result.stdout.splitlines() if re.match(r"│ +\d+ │", line)]
    assert len(rows) == 2  # the two requests that were answered
    assert "total: 2 requests, 200 prompt tokens" in result.stdout
    assert f"transcript saved to {saved}" in result.stdout


def test_show_prints_each_thought_once_and_no_provider_details(tmp_path: Path) -> None:
    thought = "The total is computed in orders, so I search for it"
    text = f"{react_text.THOUGHT} {thought}\n{react_text.ACTION} " + react_text.action_json(
        "search", {"pattern": "def order_total"}
    )
    details = {DETAILS_KEY: {"tokens": [90210, 31337, 4242]}}
    turn = replace(react_text.parse(text, 0), provider_details=details)
    transcript = Transcript([SystemText("Be brief."), UserText("Where is the total?"), turn])
    transcript.append(ToolResult(turn.tool_calls[0].id, "search", "inventory/orders.py:19: hit"))
    saved = tmp_path / "run.json"
    saved.write_text(transcript.dump(), encoding="utf-8")
    result = warmloop("show", str(saved))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(thought) == 1
    assert '→ search {"pattern":"def order_total"}' in result.stdout
    for internal in ("provider details", "tokens", "90210", DETAILS_KEY + ":"):
        assert internal not in result.stdout


def test_help_and_readme_name_the_same_local_models() -> None:
    result = warmloop("run", "--help", columns=400)
    assert result.returncode == 0
    help_text = " ".join(result.stdout.split())
    readme = (ROOT / "docs" / "guides" / "models.md").read_text(encoding="utf-8")  # the table
    default = MODELS[DEFAULT_MODEL].title
    assert f"`local` is the embedded {default}" in help_text
    assert f"| `local` | in-process llama.cpp, {default}" in readme
    for name in MODELS:
        if name != DEFAULT_MODEL:
            assert f"local:{name}" in help_text
            assert f"`local:{name}`" in readme
    named = set(re.findall(r"`local:([\w.-]+)`", readme))
    assert named <= set(MODELS)


def test_n_ctx_is_refused_for_a_remote_model_before_any_request() -> None:
    script = Script([ToolUse("submit", {"answer": "order_total"})])
    with serve(script) as url:
        result = run_on(url, "--n-ctx", "4096")
    assert result.returncode == 2  # bad usage
    assert result.stderr.startswith("error: --n-ctx applies to local models only")
    assert script.received == []


def test_python_m_warmloop_is_the_warmloop_command() -> None:
    module = warmloop("--help", command=PYTHON_M)
    assert module.returncode == 0, module.stderr
    assert module.stdout.startswith("Usage: warmloop [OPTIONS] COMMAND [ARGS]...")
    assert module.stdout == warmloop("--help").stdout
    verb = warmloop("run", "--help", command=PYTHON_M)
    assert verb.stdout.startswith("Usage: warmloop run [OPTIONS] TASK")


def test_python_m_warmloop_runs_a_task_and_shows_it(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    script = Script([ToolUse("search", {"pattern": "total"}), ToolUse("submit", {"answer": "x"})])
    with serve(script) as url:
        result = run_on(url, "--save", str(saved), command=PYTHON_M)
    assert result.returncode == 0, result.stderr
    assert "total: 2 requests" in result.stdout
    assert f"transcript saved to {saved}" in result.stdout
    shown = warmloop("show", str(saved), command=PYTHON_M)
    assert shown.returncode == 0, shown.stderr
    assert "→ search" in shown.stdout


def test_the_installed_command_is_the_cli_group() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    module, _, name = pyproject["project"]["scripts"]["warmloop"].partition(":")
    assert getattr(importlib.import_module(module), name) is main


def test_record_stops_on_sigterm_and_says_where_the_log_is(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    command = [WARMLOOP, "record", "--upstream", "http://127.0.0.1:9", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--out", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(200),
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], HANG_GUARD)
        assert ready, "record never said it was listening"
        assert process.stdout.readline().startswith(f"recording to {log}")
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=HANG_GUARD)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert f"stopped; requests are in {log}" in stdout


@pytest.mark.engine
# Gemma's engine is the one whose loading logs llama.cpp's full-size SWA cache notice.
@pytest.mark.parametrize("spec", ["local", "local:gemma-3-270m"])
def test_a_local_run_that_would_overflow_stops_early_naming_n_ctx(spec: str) -> None:
    # The opening prompt (instructions, taught protocol, tools, task) is about 800 tokens:
    # with 256 reserved for the reply it does not fit 512, and nothing is evaluated.
    task = "Which function computes the order total?"
    result = warmloop("run", task, "--model", spec, "--workspace", str(EXAMPLE), "--n-ctx", "512")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # one clear line; no llama.cpp log noise
    assert lines[0].startswith("error: the local context window is full")
    found = re.search(r"prompt has (\d+) tokens .* `warmloop run --n-ctx (\d+)`", lines[0])
    assert found is not None, lines[0]
    prompt, suggested = int(found.group(1)), int(found.group(2))
    assert prompt + 256 <= suggested < 2 * (prompt + 256)  # enough, and not wildly more


@pytest.mark.engine
def test_the_demo_question_gets_the_right_answer_with_nothing_on_stderr() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    task = re.search(r'"\$\{1:-(.+?)\}"', demo)
    assert task is not None
    result = warmloop(
        "run", task.group(1), "--workspace", str(EXAMPLE), "--max-steps", "6", columns=200
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    answer = re.search(r"^ answer +(.+)$", result.stdout, re.MULTILINE)
    assert answer is not None, result.stdout
    assert "order_total" in answer.group(1)
    assert "search" in result.stdout  # found, not guessed: submit needs an observation first


BLOCKED_LLAMA = (
    "import sys; sys.modules['llama_cpp'] = None; "
    "from warmloop.cli.main import main; main(prog_name='warmloop')"
)
"""The command with llama-cpp-python unimportable, as after `pip install warmloop`."""


def test_the_default_local_model_without_its_extra_is_one_line_naming_it() -> None:
    done = warmloop("run", "What is here?", command=(sys.executable, "-c", BLOCKED_LLAMA))
    assert done.returncode == 5  # not set up: a missing extra
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'warmloop[local]'" in lines[0]
    assert "unexpected" not in done.stdout + done.stderr
