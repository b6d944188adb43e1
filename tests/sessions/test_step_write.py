"""What a stored step writes for each message: `dumps_message` takes pydantic's JSON in one
call where no float can occur, and must give exactly the text `json.dumps` gives of the
message's JSON form, whatever the message (every kind, any text, lone surrogates, control
characters, provider details with floats, nested values)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from warmloop.messages import (
    AnnouncedTool,
    AssistantTurn,
    Message,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.transcript_file import dumps_message, message_to_json

text = st.text(st.characters(codec="utf-8") | st.characters(categories=["Cs", "Cc"]), max_size=20)
keys = st.text(st.characters(codec="utf-8"), max_size=8)
"""A lone surrogate in a key fails `message_to_json` itself (a transcript never holds one)."""
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.floats(-1e-4, 1e-4)  # written `1e-05` by json, `0.00001` by pydantic
    | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
calls = st.builds(ToolCall, text, text, text)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(SystemText, text),
    st.builds(UserText, text, text),
    st.builds(
        AssistantTurn,
        text,
        text,
        st.lists(calls, max_size=2).map(tuple),
        st.dictionaries(keys, json_values, max_size=3),
    ),
    st.builds(ToolResult, text, text, text, st.booleans()),
    st.builds(
        Notice,
        text,
        text,
        st.lists(st.builds(AnnouncedTool, text, text, text), max_size=2).map(tuple),
    ),
    st.builds(Summary, text, st.integers(0, 10**6), st.integers(0, 10**6)),
)


@settings(max_examples=400, deadline=None)
@given(message=messages)
def test_a_message_text_is_json_dumps_of_its_json_form(message: Message) -> None:
    full = json.dumps(message_to_json(message), ensure_ascii=False, separators=(",", ":"))
    assert dumps_message(message) == full
