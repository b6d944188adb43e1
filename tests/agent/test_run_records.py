"""What a run tells its caller besides the outputs: cut results (never silent), the default
cap derived from the context window, and maintenance shown by the CLI."""

from __future__ import annotations

import io

from rich.console import Console

from warmloop import Agent, ScriptedModel, Toolbox, call, tool
from warmloop.cli.view import report
from warmloop.tools.invoke import default_result_cap


@tool
def dump(size: int) -> str:
    """Return `size` characters."""
    return "x" * size


def test_every_cut_is_recorded_on_the_run() -> None:
    model = ScriptedModel([call("dump", size=50), call("dump", size=5_000)])
    model.enqueue(call("submit", answer="ok"))
    run = Agent(model, [dump], max_result_chars=1_000).run_sync("task")
    assert [e.truncated_from for e in run.executions] == [None, 5_000]
    (cut,) = run.truncated
    assert len(cut.result.content) <= 1_000
    assert cut.result.call_id == run.executions[1].result.call_id


def test_the_default_cap_is_a_share_of_the_models_context_window() -> None:
    small, large = ScriptedModel(context_window=8_000), ScriptedModel(context_window=800_000)
    small_cap = Agent(small, [dump]).result_cap(small.facts)
    large_cap = Agent(large, [dump]).result_cap(large.facts)
    assert small_cap == default_result_cap(8_000)
    assert large_cap == default_result_cap(800_000)


def test_the_cap_is_passed_per_run_and_the_users_toolbox_is_left_alone() -> None:
    toolbox = Toolbox([dump])
    model = ScriptedModel(
        [call("dump", size=5_000), call("submit", answer="ok")], context_window=8_000
    )
    run = Agent(model, toolbox).run_sync("task")
    assert [e.truncated_from for e in run.executions] == [5_000]
    assert toolbox.max_result_chars is None


def test_none_means_no_cap_at_all() -> None:
    model = ScriptedModel([call("dump", size=300_000), call("submit", answer="ok")])
    run = Agent(model, [dump], max_result_chars=None).run_sync("task")
    assert run.truncated == []
    assert len(run.executions[0].result.content) == 300_000


def test_the_cli_report_names_cuts_and_maintenance() -> None:
    model = ScriptedModel([call("dump", size=5_000), call("submit", answer="ok")])
    run = Agent(model, [dump], max_result_chars=1_000).run_sync("task")
    buffer = io.StringIO()
    report(Console(file=buffer, width=200), run)
    call_id = run.executions[0].result.call_id
    assert f"dump ({call_id}): result cut from 5,000 to" in buffer.getvalue()


def test_the_cli_report_lists_each_rewrite() -> None:
    replies = [call("dump", size=3_000) for _ in range(4)] + [call("submit", answer="ok")]
    model = ScriptedModel(replies, context_window=4_000)
    run = Agent(model, [dump], max_result_chars=None).run_sync("task")
    assert run.maintenance
    buffer = io.StringIO()
    report(Console(file=buffer, width=300), run)
    lines = [line for line in buffer.getvalue().splitlines() if line.startswith("maintenance:")]
    assert lines == [f"maintenance: {event.describe()}" for event in run.maintenance]
