"""What a tool's return value becomes: capped only when asked, every cut reported, anything
unprintable turned into a tool error, and text always encodable as UTF-8."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator

from warmloop import ConfigurationError, Toolbox, tool
from warmloop.messages import ToolCall, ToolResult
from warmloop.tools.invoke import cap_text, default_result_cap, encodable
from warmloop.transcript import Transcript


@tool
def big(n: int) -> str:
    """Returns n characters."""
    return "x" * n


@tool(errors_to_model=True)
def fail_loudly(n: int) -> str:
    """Raises an error with an n-character message."""
    raise RuntimeError("e" * n)


@tool
def echo(text: str) -> str:
    """Returns its argument."""
    return text


def make_call(name: str, **arguments: object) -> ToolCall:
    return ToolCall("c1", name, json.dumps(arguments))


async def test_none_means_no_cap() -> None:
    execution = await Toolbox([big], max_result_chars=None).run(make_call("big", n=50_000))
    assert execution.result.content == "x" * 50_000
    assert execution.truncated_from is None


@pytest.mark.parametrize("bad", [0, -5, True, 2.5, "100", 99])
def test_a_cap_that_is_not_a_sensible_positive_int_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="max_result_chars"):
        Toolbox([big], max_result_chars=bad)
    toolbox = Toolbox([big])
    with pytest.raises(ConfigurationError, match="max_result_chars"):
        toolbox.max_result_chars = bad


async def test_every_cut_is_reported_beside_the_result() -> None:
    toolbox = Toolbox([big], max_result_chars=100)
    execution = await toolbox.run(make_call("big", n=250))
    content = execution.result.content
    assert execution.truncated_from == 250
    assert len(content) <= 100
    assert content.startswith("x" * 10)
    assert content.endswith("of 250 characters; ask for a smaller part]")
    assert not execution.result.is_error
    assert await toolbox.execute(make_call("big", n=250)) == execution.result


async def test_a_result_that_fits_is_not_cut() -> None:
    execution = await Toolbox([big], max_result_chars=100).run(make_call("big", n=100))
    assert execution.result.content == "x" * 100
    assert execution.truncated_from is None


async def test_error_results_obey_the_cap_too() -> None:
    toolbox = Toolbox([fail_loudly], max_result_chars=1_000)
    execution = await toolbox.run(make_call("fail_loudly", n=5_000_000))
    assert execution.result.is_error
    assert len(execution.result.content) <= 1_000
    assert execution.result.content.startswith("fail_loudly failed: RuntimeError: eee")
    assert execution.truncated_from is not None
    assert execution.truncated_from > 5_000_000


def test_the_default_cap_is_a_quarter_of_the_window() -> None:
    assert default_result_cap(128_000) == 32_000
    assert default_result_cap(200_000) == 50_000


@pytest.mark.parametrize("bad", [0, -1, 399, True, 1.5e5])
def test_a_window_too_small_or_not_an_int_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="context window"):
        default_result_cap(bad)


any_text = st.text(st.characters(codec="utf-8"), max_size=3_000)


@settings(max_examples=200, deadline=None)
@given(text=any_text, window=st.integers(400, 4_000))
def test_one_capped_result_never_overflows_the_window(text: str, window: int) -> None:
    """Byte-level tokenizers spend at most one token per UTF-8 byte: bytes bound tokens."""
    shown, cut_from = cap_text(text, default_result_cap(window))
    assert len(shown.encode("utf-8")) <= window
    assert (cut_from is None) == (shown == text)


broken_text = st.text(st.characters(codec=None, categories=["Cs", "L", "N", "P", "Zs"]))


@given(text=broken_text)
def test_encodable_text_always_encodes_and_keeps_what_was_valid(text: str) -> None:
    fixed = encodable(text)
    fixed.encode("utf-8")
    assert encodable(fixed) == fixed
    assert len(fixed) <= len(text)
    if not any("\ud800" <= c <= "\udfff" for c in text):
        assert fixed == text


class Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text for you")

    __repr__ = __str__


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")


def circular() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    "value",
    [{(1, 2): "tuple key"}, circular(), Unprintable(), [Unprintable()]],
    ids=["tuple-keys", "circular", "str-raises", "nested-str-raises"],
)
async def test_a_result_that_cannot_be_shown_is_a_tool_error(value: object) -> None:
    @tool
    def weird() -> object:
        """Returns something awkward."""
        return value

    result = await Toolbox([weird]).execute(make_call("weird"))
    assert result.is_error
    assert result.content.startswith("weird returned a value that cannot be shown as text:")


async def test_an_exception_whose_message_raises_is_still_a_tool_error() -> None:
    @tool(errors_to_model=True)
    def grumpy() -> str:
        """Raises an exception that cannot describe itself."""
        raise UnprintableError

    result = await Toolbox([grumpy]).execute(make_call("grumpy"))
    assert result.is_error
    assert result.content == "grumpy failed: UnprintableError (its message cannot be shown)"


def reject_with_type_error(value: int) -> int:
    raise TypeError("validators should raise ValueError, this one did not")


async def test_a_validator_raising_type_error_is_a_tool_error() -> None:
    @tool
    def checked(n: Annotated[int, AfterValidator(reject_with_type_error)]) -> str:
        """Has a validator that raises the wrong kind of error."""
        return str(n)

    result = await Toolbox([checked]).execute(make_call("checked", n=1))
    assert result.is_error
    assert "Invalid arguments for checked" in result.content
    assert "TypeError: validators should raise ValueError" in result.content


async def answer_later() -> str:
    await asyncio.sleep(0)
    return "the awaited answer"


async def test_a_sync_tool_returning_a_coroutine_is_awaited() -> None:
    @tool
    def deferred() -> object:
        """A sync function that hands back a coroutine."""
        return answer_later()

    result = await Toolbox([deferred]).execute(make_call("deferred"))
    assert result == ToolResult("c1", "deferred", "the awaited answer")


async def test_lone_surrogates_from_a_tool_are_replaced_deterministically() -> None:
    @tool
    def mangled() -> str:
        """Returns text with a lone surrogate and a split pair."""
        return "report-\udcff.txt and \ud83d\ude00"

    toolbox = Toolbox([mangled])
    first = await toolbox.execute(make_call("mangled"))
    assert first.content == "report-\ufffd.txt and \U0001f600"
    assert await toolbox.execute(make_call("mangled")) == first


async def test_lone_surrogates_from_model_arguments_never_reach_a_saved_transcript(
    tmp_path: Any,
) -> None:
    toolbox = Toolbox([echo])
    echoed = await toolbox.execute(ToolCall("c1", "echo", '{"text": "a\\ud800b"}'))
    unknown = await toolbox.execute(ToolCall("c2", "nope", '{"\\udfff": 1}'))
    bad_args = await toolbox.execute(ToolCall("c3", "echo", '{"\\udfff": 1}'))
    assert echoed.content == "a\ufffdb"
    for result in (echoed, unknown, bad_args):
        result.content.encode("utf-8")
    transcript = Transcript([echoed, bad_args])
    path = tmp_path / "t.json"
    path.write_text(transcript.dump(), encoding="utf-8")


async def test_missing_arguments_are_an_empty_object() -> None:
    @tool
    def ping(message: str = "pong") -> str:
        """Replies."""
        return message

    result = await Toolbox([ping]).execute(ToolCall("c1", "ping", None))  # type: ignore[arg-type]
    assert result == ToolResult("c1", "ping", "pong")
