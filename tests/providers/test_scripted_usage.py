"""The scripted model's usage, a perfect prefix cache keyed by session, is read from the
wire stream's proof where the request extends the last one (no join of the whole stream a
step): it must equal the counts read from the streams' text, whatever the steps (growing,
rewrites, joined turns, other sessions between)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.wire.test_stream_proof import TOOLS, step
from warmloop import ScriptedModel
from warmloop.facts.usage import Usage
from warmloop.messages import Message, UserText
from warmloop.transcript import Transcript
from warmloop.wire.guard import common_prefix_length

CHARS = 4


def from_text(previous: str, stream: str) -> Usage:
    """The counts as the model computed them from text before."""
    reused = (
        len(previous) if stream.startswith(previous) else common_prefix_length(previous, stream)
    )
    total = -(-len(stream) // CHARS)
    cached = min(reused // CHARS, total)
    return Usage(input_tokens=total, cache_read_tokens=cached, output_tokens=1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(step(), st.sampled_from(["a", "b"]), st.booleans()), min_size=1, max_size=12
    )
)
def test_scripted_usage_equals_the_counts_from_the_streams_text(
    steps: list[tuple[list[Message], str, bool]],
) -> None:
    model = ScriptedModel()
    transcript = Transcript([UserText("Start.")])
    last: dict[str, str] = {}
    for messages, session, rewrite in steps:
        transcript.extend(messages)
        if rewrite:
            users = [i for i, m in enumerate(transcript) if isinstance(m, UserText)]
            transcript.replace_content({users[-1]: f"rewritten {transcript.revision}"})
        rendered = model.render(transcript, TOOLS)
        expected = from_text(last.get(session, ""), rendered.stream)
        last[session] = rendered.stream
        assert model._usage(rendered, session) == expected
