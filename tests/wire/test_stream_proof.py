"""The renderer's proof (`ItemsProof`) lets the canonical stream skip the identity scan of the
whole history each step: the stream it derives must equal the one derived from scratch, in
every wire format, whatever the steps (turns that join the last item, rewrites, renders
never derived, older renders derived late, a payload edited in place after rendering)."""

from __future__ import annotations

import json
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from warmloop.messages import AssistantTurn, Message, Notice, ToolCall, ToolResult, UserText
from warmloop.providers.anthropic.format import AnthropicRenderer
from warmloop.providers.base import Rendered
from warmloop.providers.gemini.format import GeminiRenderer
from warmloop.providers.openai.chat_format import ChatRenderer
from warmloop.providers.openai.responses_format import ResponsesRenderer
from warmloop.providers.render import Renderer
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import WireStream, canonical_stream

RENDERERS: dict[str, Callable[[], Renderer]] = {  # type: ignore[type-arg]
    "chat": lambda: ChatRenderer("m"),
    "responses": lambda: ResponsesRenderer("m", {}),
    "anthropic": lambda: AnthropicRenderer({"model": "m", "max_tokens": 16}, {"type": "ephemeral"}),
    "gemini": lambda: GeminiRenderer("m"),
}
TOOLS = (ToolSpec("echo", "Echo a value.", {"type": "object", "properties": {}}),)
words = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


@st.composite
def step(draw: st.DrawFn) -> list[Message]:
    """One step's messages: a turn with 0-2 calls and their results, or a user's text or a
    notice (which join the open user turn in some formats)."""
    kind = draw(st.sampled_from(["turn", "user", "notice"]))
    if kind == "user":
        return [UserText(draw(words))]
    if kind == "notice":
        return [Notice(draw(words))]
    n = draw(st.integers(0, 2))
    tag = draw(st.integers(0, 10**9))
    calls = tuple(
        ToolCall(f"c{tag}_{i}", "echo", json.dumps({"value": draw(words)})) for i in range(n)
    )
    results: list[Message] = [ToolResult(c.id, "echo", draw(words)) for c in calls]
    return [AssistantTurn(text=draw(words), tool_calls=calls), *results]


def pieces(stream: WireStream) -> tuple[object, ...]:
    return stream.head, stream.items, stream.item_ends, stream.system_items


actions = st.sampled_from(["render", "render-underived", "rewrite", "derive-old", "tamper"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wire=st.sampled_from(sorted(RENDERERS)),
    steps=st.lists(st.tuples(step(), actions), min_size=1, max_size=12),
)
def test_the_proven_stream_equals_the_stream_derived_from_scratch(
    wire: str, steps: list[tuple[list[Message], str]]
) -> None:
    renderer = RENDERERS[wire]()
    transcript = Transcript([UserText("Start.")])
    kept: list[Rendered] = []
    for messages, action in steps:
        transcript.extend(messages)
        if action == "rewrite":
            users = [i for i, m in enumerate(transcript) if isinstance(m, UserText)]
            transcript.replace_content({users[-1]: f"rewritten {transcript.revision}"})
        rendered = renderer.render(transcript, TOOLS)
        kept.append(rendered)
        if action == "render-underived":
            continue
        if action == "tamper":  # an earlier item replaced in the payload's own list
            conversation = rendered.payload[renderer.layout.conversation[0]]
            conversation[0] = {"role": "user", "content": "tampered"}
        target = kept[0] if action == "derive-old" else rendered
        fresh = canonical_stream(target.payload, renderer.layout)
        assert pieces(target.wire) == pieces(fresh)
        assert target.wire.text == fresh.text
