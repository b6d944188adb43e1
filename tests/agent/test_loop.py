"""The ReAct runtime: append-only steps, submit, extract, budgets, follow-ups."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from warmloop import (
    Agent,
    ConfigurationError,
    ExtractFailed,
    RequestFailed,
    ScriptedModel,
    SyntaxBudgetExceeded,
    call,
    check_pairing,
    raw_call,
    tool,
)
from warmloop.messages import (
    AssistantTurn,
    Message,
    Notice,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.providers.base import Rendered
from warmloop.transcript import Transcript

ACTION = 'Thought: look\nAction: {"tool": "lookup", "arguments": {"key": "a"}}'
SUBMIT_TEXT = 'Thought: done\nAction: {"tool": "submit", "arguments": {"answer": "42"}}'


@tool
def lookup(key: str) -> str:
    """Look up a key."""
    return f"value:{key}"


def agent(model: ScriptedModel, **kwargs: object) -> Agent:
    return Agent(model, [lookup], **kwargs)  # type: ignore[arg-type]


def kinds(transcript: Transcript) -> list[str]:
    return [m.kind for m in transcript]


def test_a_run_seeds_once_then_appends_one_turn_and_its_results_per_step() -> None:
    seen: list[Message] = []
    model = ScriptedModel([call("lookup", key="a"), call("submit", answer="42")])
    run = agent(model, on_message=seen.append).run_sync("what is a?")
    assert run.outputs.model_dump() == {"answer": "42"}
    assert kinds(run.transcript) == [
        "system", "user", "assistant", "tool_result", "assistant", "tool_result",
    ]  # fmt: skip
    assert seen == list(run.transcript)
    assert run.steps == 2
    assert len(run.requests) == 2
    assert run.requests[1].prefix.fraction > 0.5
    assert run.requests[1].prefix.bust is None
    # the second request is exactly the first plus what happened since
    first, second = model.requests
    assert second.payload["messages"][:2] == first.payload["messages"]


def test_pairing_holds_after_every_step() -> None:
    checked: list[int] = []

    def check(rendered: Rendered) -> str:
        # each request is rendered from a transcript that pairs up
        checked.append(len(rendered.payload["messages"]))
        return 'Thought: x\nAction: {"tool": "lookup", "arguments": {"key": "k"}}'

    model = ScriptedModel([call("lookup", key="a"), call("lookup", key="b")], name="m")
    model.enqueue(raw_call("lookup", "{bad"), call("submit", answer="ok"))
    seen: list[Message] = []
    run = agent(model, on_message=seen.append).run_sync("task")
    for end in range(len(seen)):
        if not isinstance(seen[end], AssistantTurn):
            check_pairing(seen[: end + 1])
    check_pairing(run.transcript.messages)


def test_submit_validation_errors_come_back_and_the_loop_goes_on() -> None:
    class Answer(BaseModel):
        answer: str
        confidence: float

    model = ScriptedModel(
        [call("submit", answer="x"), call("submit", answer="x", confidence="high")]
    )
    model.enqueue(call("submit", answer="x", confidence=0.5))
    run = agent(model, outputs=Answer).run_sync("task")
    assert run.output == Answer(answer="x", confidence=0.5)
    results = [m for m in run.transcript if isinstance(m, ToolResult)]
    assert [r.is_error for r in results] == [True, True, False]
    assert "confidence: Field required" in results[0].content
    assert "Expected: submit(answer: string, confidence: number)" in results[0].content
    assert not run.extracted


def test_outputs_as_a_mapping_of_names_to_types() -> None:
    model = ScriptedModel([call("submit", total=3, items=["a"])])
    run = agent(model, outputs={"total": int, "items": list[str]}).run_sync("task")
    assert run.outputs.model_dump() == {"total": 3, "items": ["a"]}


def test_calls_after_a_valid_submit_are_answered_but_not_executed() -> None:
    both = AssistantTurn(
        tool_calls=(
            ToolCall("c0", "submit", '{"answer": "x"}'),
            ToolCall("c1", "lookup", '{"key": "a"}'),
        )
    )
    run = agent(ScriptedModel([both])).run_sync("task")
    last = run.transcript.messages[-1]
    assert isinstance(last, ToolResult)
    assert last.is_error
    assert "already submitted" in last.content
    check_pairing(run.transcript.messages)


def test_extract_when_the_model_answers_without_a_tool_and_the_output_is_not_text() -> None:
    model = ScriptedModel(["It is 42.", call("submit", answer="42")])
    run = agent(model, outputs={"answer": str}).run_sync("task")
    assert run.extracted
    assert run.outputs.model_dump() == {"answer": "42"}
    extract_prompt = run.transcript.messages[-3]
    assert isinstance(extract_prompt, UserText)
    assert "answered without calling a tool" in extract_prompt.text
    # same terminal shape as a normal submit
    assert kinds(run.transcript)[-2:] == ["assistant", "tool_result"]


def test_extract_when_the_step_budget_runs_out() -> None:
    model = ScriptedModel([call("lookup", key=str(i)) for i in range(3)])
    model.enqueue(call("submit", answer="late"))
    run = agent(model, max_steps=3).run_sync("task")
    assert run.extracted
    assert run.outputs.model_dump() == {"answer": "late"}
    assert run.steps == 4
    # the step counter lives only in a turn appended late, never in the seed
    assert any(isinstance(m, Notice) and "One step left" in m.text for m in run.transcript)
    assert isinstance(run.transcript[0], SystemText)
    assert "step" not in run.transcript[0].text.lower()


def test_the_extract_step_executes_only_submit() -> None:
    model = ScriptedModel([call("lookup", key="0"), call("lookup", key="again")])
    with pytest.raises(ExtractFailed) as info:
        agent(model, max_steps=1).run_sync("task")
    last = info.value.transcript[-1]
    assert isinstance(last, ToolResult)
    assert last.is_error
    assert "only submit now" in last.content
    check_pairing(info.value.transcript.messages)


def test_a_failed_extract_raises_with_the_whole_transcript() -> None:
    model = ScriptedModel(["no tools", "still no tools"])
    with pytest.raises(ExtractFailed) as info:
        agent(model, outputs={"answer": str}).run_sync("task")
    assert kinds(info.value.transcript) == ["system", "user", "assistant", "user", "assistant"]
    assert "without valid outputs" in str(info.value)


def test_repeated_tool_failures_end_in_the_extract_step() -> None:
    model = ScriptedModel([call("nope") for _ in range(4)])
    model.enqueue(call("submit", answer="gave up"))
    run = agent(model, max_tool_retries=3).run_sync("task")
    assert run.extracted
    assert run.steps == 5


def test_a_step_that_succeeds_resets_the_tool_retry_budget() -> None:
    # Two failures, a success, two failures: never more than 2 in a row, so no extract.
    model = ScriptedModel([call("nope"), call("nope"), call("lookup", key="a")])
    model.enqueue(call("nope"), call("nope"), call("submit", answer="done"))
    run = agent(model, max_tool_retries=2).run_sync("task")
    assert not run.extracted
    assert run.outputs.model_dump() == {"answer": "done"}


def test_three_consecutive_unparseable_turns_abort() -> None:
    model = ScriptedModel(["garbage", "more garbage", "Action: {"], text_protocol=True)
    with pytest.raises(SyntaxBudgetExceeded, match="3 consecutive") as info:
        agent(model).run_sync("task")
    transcript = info.value.transcript
    assert kinds(transcript) == [
        "system", "user", "assistant", "user", "assistant", "user", "assistant",
    ]  # fmt: skip
    assert transcript[2] == AssistantTurn(text="garbage")  # kept byte for byte
    assert "could not be parsed" in transcript[3].text  # type: ignore[union-attr]


def test_a_clean_turn_resets_the_syntax_budget() -> None:
    model = ScriptedModel(["bad", "bad", ACTION, "bad", "bad", SUBMIT_TEXT], text_protocol=True)
    run = agent(model).run_sync("task")
    assert run.outputs.model_dump() == {"answer": "42"}
    assert run.steps == 6


def test_the_syntax_budget_resets_when_one_agent_runs_again_after_aborting() -> None:
    model = ScriptedModel(["bad", "bad", "bad"], text_protocol=True)
    model.enqueue("bad", "bad", SUBMIT_TEXT)
    reused = agent(model, max_syntax_errors=3)
    with pytest.raises(SyntaxBudgetExceeded):
        reused.run_sync("one")  # ends with its counter at 3
    second = reused.run_sync("two")  # would abort on its first bad turn if 3 carried over
    assert second.outputs.model_dump() == {"answer": "42"}
    assert second.steps == 3


def test_the_tool_retry_budget_resets_when_one_agent_runs_again() -> None:
    model = ScriptedModel([call("nope") for _ in range(3)])  # 3 > 2: the extract step
    model.enqueue(call("nope"))  # ...fails too, so run 1 ends on 4 failed steps
    model.enqueue(call("nope"), call("nope"), call("submit", answer="b"))
    reused = agent(model, max_tool_retries=2)
    with pytest.raises(ExtractFailed):
        reused.run_sync("one")
    second = reused.run_sync("two")  # two failed steps are within a fresh budget of 2
    assert not second.extracted
    assert second.outputs.model_dump() == {"answer": "b"}


def test_a_follow_up_run_appends_to_the_previous_history() -> None:
    model = ScriptedModel([call("lookup", key="paris"), call("submit", answer="France")])
    model.enqueue(call("submit", answer="Germany"))
    first = agent(model).run_sync("Which country is Paris in?")
    second = agent(model).run_sync("And Berlin?", history=first.transcript)
    assert second.outputs.model_dump() == {"answer": "Germany"}
    assert second.transcript.messages[: len(first.transcript)] == first.transcript.messages
    assert second.transcript[len(first.transcript)] == UserText("And Berlin?")
    assert len(first.transcript) == 6  # the first run's result is not mutated
    # a new branch of the same conversation: its own id, the same routing key
    assert second.transcript.id != first.transcript.id
    assert second.transcript.meta.parent == first.transcript.id
    assert model.sessions[-1] == model.sessions[0] == first.transcript.conversation
    # the conversation's guard carries over: the follow-up's first request is checked
    assert second.requests[0].prefix.bust is None
    assert second.requests[0].prefix.reusable == model.requests[-2].length
    assert model.requests[-1].stream.startswith(model.requests[-2].stream)
    assert second.start == len(first.transcript)


def test_a_provider_failure_keeps_the_transcript_unchanged() -> None:
    model = ScriptedModel([call("lookup", key="a")])
    with pytest.raises(RequestFailed, match="no reply left") as info:
        agent(model).run_sync("task")
    assert kinds(info.value.transcript) == ["system", "user", "assistant", "tool_result"]


def test_bad_configuration_is_refused_clearly() -> None:
    @tool
    def submit(answer: str) -> str:
        """Clashes."""
        return answer

    with pytest.raises(ConfigurationError, match="reserved"):
        Agent(ScriptedModel(), [submit])
    with pytest.raises(ConfigurationError, match="max_steps"):
        agent(ScriptedModel(), max_steps=0)
    with pytest.raises(ConfigurationError, match="empty"):
        agent(ScriptedModel()).run_sync("  ")


def test_named_inputs_become_the_task_text() -> None:
    model = ScriptedModel([call("submit", answer="ok")])
    run = agent(model).run_sync({"question": "why?", "context": "none"})
    assert run.transcript[1] == UserText("question: why?\ncontext: none")


def test_a_run_reports_its_cache_hit_rate_and_cost() -> None:
    from warmloop.facts.price_table import prices_for
    from warmloop.facts.pricing import cost

    model = ScriptedModel(
        [call("lookup", key="a"), call("submit", answer="x")], name="openai:gpt-5"
    )
    run = agent(model).run_sync("task")
    usage = run.usage
    assert run.cache_hit_rate == usage.cache_read_tokens / usage.prompt_tokens > 0
    prices = prices_for("openai:gpt-5")
    assert prices is not None
    assert run.cost().total == pytest.approx(sum(cost(r.usage, prices) for r in run.requests))
    assert agent(ScriptedModel([call("submit", answer="x")])).run_sync("t").cost().total is None


def test_the_trajectory_is_derived_from_this_runs_transcript() -> None:
    from warmloop.providers.scripted import Reply

    looked = Reply(reasoning="check a", calls=(("lookup", '{"key": "a"}'),))
    model = ScriptedModel([looked, call("submit", answer="x"), call("nope")])
    model.enqueue(call("submit", answer="y"))
    first = agent(model).run_sync("task")
    assert [(s.step, s.thought, s.tool, s.arguments, s.observation) for s in first.trajectory] == [
        (1, "check a", "lookup", '{"key": "a"}', "value:a"),
        (2, "", "submit", '{"answer": "x"}', "Submitted."),
    ]
    second = agent(model).run_sync("again", history=first.transcript)
    steps = second.trajectory  # only the follow-up's own calls, numbered from its start
    assert [(s.step, s.tool, s.is_error) for s in steps] == [
        (1, "nope", True),
        (2, "submit", False),
    ]
