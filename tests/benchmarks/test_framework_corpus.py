"""The framework corpus's own parts: the loopback API answers the task script in shapes the
official SDKs parse, the truth follows its stated rules on made-up conversations, and each
stored truth file is what the truth computes from the log beside it."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import openai
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.framework_corpus.script import (
    ARGUMENT,
    STEPS,
    final_answer,
    run_tool,
    step_call,
    task_prompt,
)
from benchmarks.framework_corpus.truth import PROVIDERS, Request, price
from benchmarks.framework_corpus.truth import truth as truth_of
from benchmarks.framework_corpus.upstream import Upstream, serve

CORPUS = Path(__file__).parents[1] / "audit" / "corpus"
CHAT_TOOLS: Any = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ARGUMENT
    if n != "delegate"
]


def test_every_stored_truth_is_what_the_truth_computes_from_its_log() -> None:
    logs = sorted(CORPUS.glob("*.jsonl.gz"))
    assert len(logs) >= 4
    for log in logs:
        stored = log.with_name(log.name.removesuffix(".jsonl.gz") + ".truth.json")
        assert json.loads(json.dumps(truth_of(log))) == json.loads(stored.read_text()), log


def test_chat_completions_follow_the_script_then_answer() -> None:
    with serve(Upstream()) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": task_prompt("t")}]
        previous = 0
        for step in range(STEPS):
            reply = client.chat.completions.create(
                model="gpt-5", messages=messages, tools=CHAT_TOOLS
            )
            calls = reply.choices[0].message.tool_calls or []
            tool, argument = step_call("t", step)
            assert calls[0].type == "function"
            assert calls[0].function.name == tool
            assert json.loads(calls[0].function.arguments) == {ARGUMENT[tool]: argument}
            previous = reply.usage.prompt_tokens if reply.usage else 0
            messages += [
                reply.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": calls[0].id, "content": run_tool(tool, argument)},
            ]
        last = client.chat.completions.create(model="gpt-5", messages=messages, tools=CHAT_TOOLS)
    assert last.choices[0].message.content == final_answer("t")
    details = last.usage.prompt_tokens_details if last.usage else None
    assert details is not None
    # It extends the request before it: all of that is read, in 128-token increments.
    assert details.cached_tokens == previous // 128 * 128


def test_responses_answer_a_function_call_with_cached_tokens() -> None:
    tools: Any = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    with serve(Upstream()) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        reply = client.responses.create(model="gpt-5", input=task_prompt("r"), tools=tools)
    item = reply.output[0]
    assert item.type == "function_call"
    assert (item.name, json.loads(item.arguments)) == ("read_file", {"path": "src/r/part_00.py"})
    assert reply.usage is not None
    assert reply.usage.input_tokens_details.cached_tokens == 0


def test_anthropic_messages_answer_whole_and_streamed_alike() -> None:
    tools: Any = [{"name": "read_file", "input_schema": {"type": "object"}}]
    messages: Any = [{"role": "user", "content": task_prompt("a")}]
    with serve(Upstream()) as url:
        client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)
        whole = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=100, messages=messages, tools=tools
        )
        with client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=100, messages=messages, tools=tools
        ) as stream:
            streamed = stream.get_final_message()
    for message in (whole, streamed):
        block = message.content[0]
        assert block.type == "tool_use"
        assert (block.name, block.input) == ("read_file", {"path": "src/a/part_00.py"})
        assert message.stop_reason == "tool_use"
        # no cache_control was sent: Anthropic caches nothing
        assert message.usage.cache_read_input_tokens == 0
        assert message.usage.cache_creation_input_tokens == 0


def _fields_prompt(done: int, fields: list[str]) -> str:
    """A DSPy ChatAdapter user message: the task, `done` observations, then the closing line
    that names the output fields it parses."""
    observations = "".join(
        f"\n\n[[ ## observation_{k} ## ]]\n{run_tool(*step_call('d', k))}" for k in range(done)
    )
    asked = ", then ".join(f"`[[ ## {name} ## ]]`" for name in fields)
    return (
        f"[[ ## task ## ]]\n{task_prompt('d')}\n\n[[ ## trajectory ## ]]{observations}\n\n"
        f"Respond with the corresponding output fields, starting with the field {asked}, "
        "and then ending with the marker for `[[ ## completed ## ]]`."
    )


def test_a_prompt_asking_for_fields_gets_the_script_in_those_fields() -> None:
    """DSPy's ReAct: the step's tool and JSON arguments in its fields, `finish` once the task
    has its answers; its extraction's fields (any other signature) carry the answer."""
    react = ["next_thought", "next_tool_name", "next_tool_args"]
    asked = [(3, react), (STEPS, react), (STEPS, ["reasoning", "answer"])]
    with serve(Upstream()) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        replies = [
            client.chat.completions.create(
                model="gpt-5", messages=[{"role": "user", "content": _fields_prompt(done, f)}]
            )
            .choices[0]
            .message.content
            or ""
            for done, f in asked
        ]
    tool, argument = step_call("d", 3)
    marked = re.compile(r"\[\[ ## (\w+) ## \]\]\n(.*?)(?=\n\n\[\[ ## )", re.S)
    step, finish, extraction = (dict(marked.findall(reply)) for reply in replies)
    assert step["next_tool_name"] == tool
    assert json.loads(step["next_tool_args"]) == {ARGUMENT[tool]: argument}
    assert (finish["next_tool_name"], json.loads(finish["next_tool_args"])) == ("finish", {})
    assert extraction["answer"] == final_answer("d")
    assert all(reply.endswith("[[ ## completed ## ]]") for reply in replies)


def _requests(texts: list[list[str]], anthropic: bool = False) -> list[Request]:
    """Requests of these blocks (after an empty parameter block); Anthropic ones carry the
    top-level marker, which marks their last block."""
    return [
        Request(n + 1, ("{}", *blocks), frozenset({len(blocks) + 1}), anthropic)
        for n, blocks in enumerate(texts)
    ]


block = st.builds(str.__mul__, st.sampled_from("ab\u00e9{"), st.integers(1, 4000)) | st.text(
    min_size=1, max_size=40
)
growth = st.lists(st.lists(block, min_size=1, max_size=3), min_size=1, max_size=8)
"""Requests that each add one to three blocks (a few characters to 4,000)."""


@given(growth)
def test_an_append_only_conversation_loses_nothing_under_any_rule_set(
    steps: list[list[str]],
) -> None:
    texts: list[list[str]] = []
    for added in steps:
        texts.append([*(texts[-1] if texts else []), *added])
    for spec in PROVIDERS:
        for actual, perfect in price(spec, _requests(texts)):
            assert actual == perfect, spec
    # Anthropic's automatic marker moves to the last block: a few blocks a step stay within
    # the lookback, so it reads all the previous request wrote.
    for actual, perfect in price("anthropic:claude-sonnet-4-6", _requests(texts, True)):
        assert actual == perfect


@given(growth)
def test_an_anthropic_request_without_a_marker_caches_nothing(steps: list[list[str]]) -> None:
    texts: list[list[str]] = []
    for added in steps:
        texts.append([*(texts[-1] if texts else []), *added])
    unmarked = [replace(r, marks=frozenset()) for r in _requests(texts, True)]
    for actual, _ in price("anthropic:claude-sonnet-4-6", unmarked):
        assert actual.read == actual.written == 0


@given(growth, st.integers(min_value=0), st.text(min_size=1, max_size=50))
def test_a_rewritten_block_reads_only_the_common_prefix_under_openai(
    steps: list[list[str]], where: int, insert: str
) -> None:
    texts: list[list[str]] = []
    for added in steps:
        texts.append([*(texts[-1] if texts else []), *added])
    last = list(texts[-1])
    at = where % len(last)
    last[at] = insert + last[at]
    texts.append(last)
    requests = _requests(texts)
    actual, perfect = price("openai:gpt-5", requests)[-1]
    before, now = requests[-2].text, requests[-1].text
    common = len(os.path.commonprefix([before, now])) // 4  # noqa: RUF071 (characters)
    previous = -(-len(before) // 4)
    expected = common // 128 * 128 if min(common, previous) >= 1024 else 0
    assert actual.read == (perfect.read if now.startswith(before) else expected)
    assert actual.read + actual.uncached == perfect.read + perfect.uncached
