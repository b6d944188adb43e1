"""When automatic folding pauses: after `max_futile_folds` folds in a row that left the
prompt over the trigger, where a summary request that fails counts as one that did not help
and a helpful fold starts the count again; a summary given only as reasoning is still a
summary; the planner never folds (a paid request) under the trigger; and the protected tail
a prune keeps by default scales with the window."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.maintenance.test_maintenance import KEEPING, keep, last_tool_content
from warmloop import Agent, ScriptedModel, call
from warmloop.errors import ProviderError
from warmloop.facts.profiles import profile_for
from warmloop.maintenance.fold import summarise
from warmloop.maintenance.planner import MaintenancePolicy, Situation, decide
from warmloop.maintenance.prune import DEFAULT_TAIL_TOKENS, PrunePolicy
from warmloop.messages import UserText
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.scripted import Reply
from warmloop.transcript import Transcript

HELPS = Reply(text="I kept the files; each repeats its name.")
DOES_NOT_HELP = Reply(text="s" * 12_000)  # longer than all it replaces


def folding_run(summary: Callable[[int], Reply | None], files: str) -> tuple[int, list[str]]:
    """A run that keeps one large file per step; `summary(k)` answers the k-th summary
    request (None: the request fails). How many summaries were asked, and the folds."""
    model = ScriptedModel([call("keep", path=p) for p in files], context_window=3_000)
    model.enqueue(call("submit", answer="done"))
    asked = 0
    original_send = model.send

    async def send(rendered: Rendered, *, session_id: str) -> ModelResponse:
        nonlocal asked
        if "Context maintenance" in last_tool_content(rendered):
            asked += 1
            reply = summary(asked)
            if reply is None:
                raise ProviderError("the summary request failed")
            model._queue.insert(0, reply)
        return await original_send(rendered, session_id=session_id)

    model.send = send  # type: ignore[method-assign]
    agent = Agent(
        model, [keep], maintenance=KEEPING, max_steps=len(files) + 2, max_result_chars=None
    )
    run = agent.run_sync("Keep every file.")
    return asked, [e.kind for e in run.maintenance]


FILES = "abcdef" * 2


def test_folds_that_leave_the_prompt_over_the_trigger_pause_folding() -> None:
    asked, folds = folding_run(lambda k: DOES_NOT_HELP, FILES)
    assert asked == 2
    assert folds == ["fold", "fold"]


def test_failed_summary_requests_count_as_folds_that_did_not_help() -> None:
    asked, folds = folding_run(lambda k: None, FILES)
    assert asked == 2  # then folding pauses: the run is not a retry loop of paid requests
    assert folds == []


def test_a_fold_that_helps_starts_the_count_again() -> None:
    # Fails, helps, then fails for good: with the count restarted by the helpful fold, two
    # more failures are tried before folding pauses (four asks, not three).
    asked, folds = folding_run(lambda k: HELPS if k == 2 else None, FILES)
    assert asked == 4
    assert folds == ["fold"]


async def test_a_summary_given_only_as_reasoning_is_the_summary() -> None:
    transcript = Transcript()
    transcript.append(UserText("Keep every file."))
    model = ScriptedModel([Reply(reasoning="  The files a to d repeat their names.  ")])
    folded = await summarise(model, transcript, [])
    assert folded.text == "The files a to d repeat their names."
    empty = ScriptedModel([Reply()])
    with pytest.raises(ProviderError, match="without text"):
        await summarise(empty, transcript, [])


@given(
    prompt=st.integers(0, 200_000),
    window=st.one_of(st.none(), st.integers(1_000, 200_000)),
    idle=st.one_of(st.none(), st.floats(0, 100_000)),
    remaining=st.integers(1, 500),
    rewrite=st.integers(0, 200_000),
    excess=st.floats(0, 1e7),
)
def test_the_planner_never_folds_under_the_trigger(
    prompt: int,
    window: int | None,
    idle: float | None,
    remaining: int,
    rewrite: int,
    excess: float,
) -> None:
    # A fold is a paid request: only a prompt at the trigger, with nothing left to prune,
    # ever asks for one, warm or cold.
    policy = MaintenancePolicy()
    for provider in ("anthropic", "openai", "local"):
        decision = decide(
            Situation(prompt, window, idle, remaining, 0, rewrite, excess),
            profile_for(provider),
            policy,
        )
        if decision.action == "fold":
            assert window is not None
            assert prompt >= policy.trigger * window


def test_the_default_protected_tail_is_a_quarter_of_a_small_window_at_most() -> None:
    default = PrunePolicy()
    assert default.for_window(None).tail_tokens == DEFAULT_TAIL_TOKENS
    assert default.for_window(4_000).tail_tokens == 1_000
    assert default.for_window(10_000_000).tail_tokens == DEFAULT_TAIL_TOKENS
    assert PrunePolicy(tail_tokens=123).for_window(4_000).tail_tokens == 123  # told wins
