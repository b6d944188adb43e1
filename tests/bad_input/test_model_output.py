"""Bad model output, native tools and the text protocol: malformed or missing arguments,
wrong types, unknown tools, empty replies, hundreds of parallel calls, huge arguments,
invalid Unicode and text-protocol garbage. The model sees a tool error or a correction and
the run goes on, or it ends with a clear WarmloopError; the harness checks the rest."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.bad_input.harness import check_outcome, exercise, expect
from warmloop import Agent, AssistantTurn, Reply, ScriptedModel, call, raw_call, tool
from warmloop.providers.scripted import Script


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}"


@tool
def count(n: int) -> int:
    """Count to n.

    Args:
        n: How far.
    """
    return n


@dataclass(frozen=True)
class Case:
    replies: Sequence[Script]
    expect: str = "ok"
    also: str = ""  # a second expectation, e.g. the tool error seen before finishing
    text: bool = False
    max_steps: int = 20
    options: dict[str, object] = field(default_factory=dict)


SUBMIT = call("submit", answer="done")
ACT = 'Action: {"tool": "submit", "arguments": {"answer": "done"}}'


def then_submit(*replies: Script, expect: str = "ok", also: str = "") -> Case:
    return Case([*replies, SUBMIT], expect, also)


def text(*replies: str, expect: str = "ok", also: str = "") -> Case:
    return Case([*replies, ACT], expect, also, text=True)


def parallel(n: int) -> Reply:
    return Reply(calls=tuple(("lookup", json.dumps({"key": f"k{i}"})) for i in range(n)))


CASES: dict[str, Case] = {
    # Arguments that are not a JSON object: a tool error naming the problem.
    "args-not-json": then_submit(raw_call("lookup", "{"), also="tool:not valid JSON"),
    "args-truncated": then_submit(raw_call("lookup", '{"key": "a'), also="tool:not valid JSON"),
    "args-array": then_submit(raw_call("lookup", "[1]"), also="tool:must be a JSON object"),
    "args-string": then_submit(raw_call("lookup", '"a"'), also="tool:must be a JSON object"),
    "args-number": then_submit(raw_call("lookup", "42"), also="tool:must be a JSON object"),
    "args-null": then_submit(raw_call("lookup", "null"), also="tool:Field required"),
    "args-empty": then_submit(raw_call("lookup", ""), also="tool:Field required"),
    "args-blank": then_submit(raw_call("lookup", " \n\t "), also="tool:Field required"),
    "args-deep-open": then_submit(raw_call("lookup", "[" * 100_000), also="tool:nested too deeply"),
    "args-deep-valid": then_submit(
        raw_call("lookup", '{"key": ' + "[" * 5_000 + "]" * 5_000 + "}"),
        also="tool:nested too deeply",
    ),
    "args-nan": then_submit(raw_call("count", '{"n": NaN}'), also="tool:Invalid arguments"),
    "output-nan": Case(
        [raw_call("submit", '{"score": NaN}'), raw_call("submit", '{"score": 0.5}')],
        also="tool:not a JSON value",
        options={"outputs": {"score": float}},
    ),
    "output-infinity": Case(
        [raw_call("submit", '{"score": -Infinity}'), raw_call("submit", '{"score": 0.5}')],
        also="tool:not a JSON value",
        options={"outputs": {"score": float}},
    ),
    "output-float-overflow": Case(
        [raw_call("submit", '{"score": 1e999}'), raw_call("submit", '{"score": 0.5}')],
        also="tool:too large to be a finite number",
        options={"outputs": {"score": float}},
    ),
    "args-trailing-garbage": then_submit(
        raw_call("lookup", '{"key": "a"} extra'), also="tool:not valid JSON"
    ),
    "args-duplicate-keys": then_submit(raw_call("lookup", '{"key": "a", "key": "b"}')),
    # Wrong types and shapes: pydantic's account, per field.
    "type-int-for-str": then_submit(raw_call("lookup", '{"key": 5}'), also="tool:key"),
    "type-list-for-str": then_submit(raw_call("lookup", '{"key": ["a"]}'), also="tool:key"),
    "type-str-for-int": then_submit(raw_call("count", '{"n": "many"}'), also="tool:n"),
    "type-float-for-int": then_submit(raw_call("count", '{"n": 1.5}'), also="tool:n"),
    "type-huge-int": then_submit(raw_call("count", '{"n": ' + "9" * 5000 + "}")),
    "missing-required": then_submit(call("lookup"), also="tool:Field required"),
    "extra-field": then_submit(raw_call("lookup", '{"key": "a", "zzz": 1}')),
    # Tools that do not exist.
    "unknown-tool": then_submit(call("delete_everything"), also="tool:Unknown tool"),
    "empty-tool-name": then_submit(raw_call("", "{}"), also="tool:Unknown tool"),
    "control-chars-in-name": then_submit(raw_call("look\x00up\x1b[2J", "{}"), also="tool:Unknown"),
    "huge-tool-name": then_submit(raw_call("x" * 100_000, "{}"), also="tool:Unknown tool"),
    # Invalid Unicode and control characters: made encodable, never a failed save.
    "escaped-lone-surrogate": then_submit(raw_call("lookup", '{"key": "\\ud800"}')),
    "raw-lone-surrogate": then_submit(raw_call("lookup", '{"key": "\ud800\udfff\ud800"}')),
    "nul-in-arguments": then_submit(raw_call("lookup", '{"key": "a\\u0000b"}')),
    "surrogate-in-text": then_submit(Reply(text="bad \udcff text", calls=(("lookup", "{}"),))),
    "huge-arguments": then_submit(call("lookup", key="x" * 2_000_000)),
    # Empty and tool-less replies: the extract step asks for the outputs; text is the answer.
    "empty-turn": then_submit(AssistantTurn()),
    "empty-text": then_submit(Reply(text="")),
    "text-only": then_submit(Reply(text="The answer is 4.")),
    "reasoning-only": then_submit(AssistantTurn(reasoning="Hmm.")),
    "huge-text-only": then_submit(Reply(text="blah " * 200_000)),
    # With named outputs a reply in words is no answer (with the default text, it is).
    "never-calls-a-tool": Case(
        [Reply(text="no"), Reply(text="still no")],
        "ExtractFailed:",
        options={"outputs": {"answer": str}},
    ),
    # Many calls at once, submits in odd places.
    "three-hundred-parallel-calls": then_submit(parallel(300)),
    "submit-then-more-calls": Case(
        [Reply(calls=(("submit", '{"answer": "x"}'), ("lookup", '{"key": "a"}')))],
        also="tool:already submitted",
    ),
    "two-submits-in-one-turn": Case(
        [Reply(calls=(("submit", '{"answer": "x"}'), ("submit", '{"answer": "y"}')))],
        also="tool:already submitted",
    ),
    "submit-wrong-field": then_submit(call("submit", wrong=1), also="tool:answer"),
    "submit-wrong-type": then_submit(call("submit", answer=[1]), also="tool:answer"),
    "only-unknown-tools-until-extract": Case(
        [call("nope")] * 3 + [SUBMIT], also="tool:Unknown tool", options={"max_tool_retries": 2}
    ),
    "step-budget-exhausted": Case([call("lookup", key="a")] * 3 + [SUBMIT], max_steps=3),
    "script-runs-out": Case([call("lookup", key="a")], "RequestFailed:no reply left"),
    # The text protocol: a correction per unparseable turn, three in a row end the run.
    "tp-no-action": text("I do not know."),
    "tp-bad-json": text("Thought: t\nAction: {bad"),
    "tp-array-action": text("Action: [1, 2]"),
    "tp-tool-not-a-string": text('Action: {"tool": 5}'),
    "tp-trailing-text": text(ACT + "\nObservation: I made this up"),
    "tp-arguments-a-string": text('Action: {"tool": "lookup", "arguments": "k"}'),
    "tp-unknown-tool": text('Action: {"tool": "nope", "arguments": {}}', also="tool:Unknown tool"),
    "tp-thought-mentions-action": text(
        'Thought: I write the Action: line now.\nAction: {"tool": "lookup", "arguments": {}}',
        also="tool:Field required",
    ),
    "tp-binary-garbage": text("\x00\xff\ufffd\x1b[2J" * 1000),
    "tp-many-action-markers": text("Action: {" * 20_000),
    "tp-huge-garbage": text("x" * 500_000),
    "tp-surrogate-in-action": text('Action: {"tool": "lookup", "arguments": {"key": "\\udc80"}}'),
    "tp-three-garbage-turns": Case(["no", "still no", "nope"], "SyntaxBudgetExceeded:", text=True),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_bad_model_output(name: str) -> None:
    case = CASES[name]
    model = ScriptedModel(list(case.replies), text_protocol=case.text)
    options: dict[str, object] = {"max_steps": case.max_steps, **case.options}
    agent = Agent(model, tools=[lookup, count], **options)  # type: ignore[arg-type]
    outcome = await exercise(agent)
    check_outcome(outcome, model=model)
    expect(outcome, case.expect)
    if case.also:
        expect(outcome, case.also)


# Round three (issue 37): grammar. A local model that loops inside one string (a search
# pattern repeating its own words) ran out of output tokens with the JSON open, three turns
# in a row, and the run ended with no answer. The step grammar now bounds every string, so
# no such step can be generated: each degenerate step here is refused by llama.cpp's
# sampler over the real Gemma vocabulary, in a workspace too big to enumerate its paths.
DEGENERATE_LOOP = "parse_value in _parser.py.*named group.*regular expression.*"
DEGENERATE_STEPS: dict[str, tuple[str, dict[str, object]]] = {
    "search-pattern-loop": ("search", {"pattern": DEGENERATE_LOOP * 6}),
    "search-path-loop": ("search", {"pattern": "x", "path": "src/" * 100}),
    "read-path-loop": ("read_file", {"path": "inventory/" * 40}),
    "list-path-loop": ("list_files", {"path": "a/b/" * 100}),
    "answer-loop": ("submit", {"answer": "the value is the value " * 30}),
}


@pytest.fixture(scope="module")
def gemma_vocab() -> Iterator[Any]:
    llama_cpp = pytest.importorskip("llama_cpp")
    from warmloop.providers.local.gemma import gemma_path
    from warmloop.providers.local.model import quiet_llama_logs

    quiet_llama_logs()
    llama = llama_cpp.Llama(str(gemma_path()), vocab_only=True, verbose=False)
    yield llama
    llama.close()


@pytest.mark.parametrize("name", list(DEGENERATE_STEPS))
def test_the_local_grammar_refuses_a_string_that_never_closes(name: str, gemma_vocab: Any) -> None:
    from dataclasses import replace
    from pathlib import Path

    from tests.providers.test_local import grammar_accepts, step_text
    from warmloop.outputs import Outputs
    from warmloop.protocols.grammar import action_grammar
    from warmloop.workspace import workspace_tools

    example = Path(__file__).resolve().parents[2] / "examples" / "workspace"
    specs = [replace(t.spec, grammar_parameters=None) for t in workspace_tools(example)]
    grammar = action_grammar([*specs, Outputs().spec])
    tool_name, arguments = DEGENERATE_STEPS[name]
    assert not grammar_accepts(gemma_vocab, grammar, step_text("x", tool_name, arguments))
    # The same step within the bound is a step the grammar allows.
    first = next(iter(arguments))
    short = {**arguments, first: str(arguments[first])[:100]}
    if "path" in arguments:
        short["path"] = str(arguments["path"])[:100]
    assert grammar_accepts(gemma_vocab, grammar, step_text("x", tool_name, short))


# Issue 37: the embedded model's answer check (places copied from a hit, the task's own words)

RAISE_HIT = 'decoder.py:85 in py_scanstring: raise JSONDecodeError("Unterminated string")'
ENCODER_HIT = "json/__init__.py:110: _default_encoder = JSONEncoder("
ENCODER_TASK = "json/__init__.py makes _default_encoder from a class; which file defines it?"
CHECKED_ANSWERS: dict[str, tuple[str, str, str, str]] = {
    # name: (task, the hit the run saw, the answer submitted, what the refusal offers)
    "place": (
        "Which function raises 'Unterminated string'?",
        RAISE_HIT,
        "decoder.py:85",
        "py_scanstring",
    ),
    "whole-hit": (
        "Which function raises 'Unterminated string'?",
        RAISE_HIT,
        RAISE_HIT,
        "py_scanstring",
    ),
    "hit-with-spaces": (
        "Which function raises 'Unterminated string'?",
        RAISE_HIT,
        f"  `{RAISE_HIT}`. ",
        "py_scanstring",
    ),
    "task-file": (ENCODER_TASK, ENCODER_HIT, "json/__init__.py", "JSONEncoder"),
    "task-name": (ENCODER_TASK, ENCODER_HIT, "_default_encoder", "JSONEncoder"),
    "name-for-file": (ENCODER_TASK, ENCODER_HIT, "JSONEncoder", "JSONEncoder"),
}


@pytest.mark.parametrize("name", list(CHECKED_ANSWERS))
def test_the_answer_check_refuses_a_place_or_the_tasks_own_words(name: str) -> None:
    from pydantic import BaseModel

    from warmloop.messages import ToolResult, UserText
    from warmloop.workspace.grounding import unread_answer

    class Answer(BaseModel):
        answer: str

    task, hit, answer, offered = CHECKED_ANSWERS[name]
    problem = unread_answer(
        Answer(answer=answer), [UserText(task), ToolResult("c1", "search", hit)]
    )
    assert problem is not None
    assert problem.startswith("Not accepted yet")
    assert json.dumps(offered) in problem  # the name to submit or to search for next
