"""Views instead of copies (`wire.views.Prefix`): a render's items and a stream's pieces
share the lists under them with earlier steps, so what an earlier step handed out must read
the same forever after, and every view must equal the full computation (a tuple built
from scratch), whatever the steps: growing, views extended twice, rewrites, joined turns."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.wire.test_stream_proof import RENDERERS, TOOLS, actions, pieces, step
from warmloop.messages import Message, UserText
from warmloop.providers.base import Rendered
from warmloop.providers.render import Growing
from warmloop.transcript import Transcript
from warmloop.wire.stream import Canonicalizer, WireLayout, canonical_stream
from warmloop.wire.views import Prefix

# Each op: extend a view held earlier (by its number, modulo how many) with new elements.
ops = st.lists(
    st.tuples(st.integers(0, 50), st.lists(st.integers(0, 99), max_size=4)),
    min_size=1,
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(ops=ops, cut=st.integers(-8, 8), stride=st.sampled_from([1, 2, -1]))
def test_a_view_reads_what_it_read_when_made_whatever_grows_after(
    ops: list[tuple[int, list[int]]], cut: int, stride: int
) -> None:
    views: list[Prefix[int]] = [Prefix([])]
    expected: list[tuple[int, ...]] = [()]
    for which, new in ops:
        number = which % len(views)
        views.append(views[number].extended(new))
        expected.append(expected[number] + tuple(new))
    for view, full in zip(views, expected, strict=True):
        assert len(view) == len(full)
        assert tuple(view) == full
        assert view == full
        assert view == list(full)
        assert full == view
        assert view[cut:] == full[cut:]
        assert view[:cut] == full[:cut]
        assert view[::stride] == full[::stride]
        assert view.to_list() == list(full)
        for index in (0, -1, cut):
            if -len(full) <= index < len(full):
                assert view[index] == full[index]
    assert [len(v) for v in views] == [len(e) for e in expected]


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.integers(0, 50),
            st.lists(st.integers(0, 99), max_size=3),
            st.none() | st.integers(100, 199),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_growing_items_equal_the_tuple_rebuilt_and_earlier_items_never_change(
    ops: list[tuple[int, list[int], int | None]],
) -> None:
    """`Growing` as a wire format uses it: from an earlier result, append some items and
    maybe replace the last one (a joined turn)."""
    results: list[tuple[Sequence[int], tuple[int, ...]]] = [((), ())]
    for which, new, last in ops:
        source, full = results[which % len(results)]
        growing: Growing[int] = Growing(source)
        growing.extend(new)
        if last is not None and growing:
            growing.last = last
            full = (*(*full, *new)[:-1], last)
        else:
            full = (*full, *new)
        results.append((growing.items(), full))
    for items, full in results:
        assert tuple(items) == full


LAYOUT = WireLayout("test", ("messages",))
messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "n": st.integers()}),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(st.tuples(st.integers(0, 6), messages), min_size=1, max_size=15))
def test_canonical_streams_equal_the_full_derivation_and_stay_as_derived(
    steps: list[tuple[int, list[dict[str, object]]]],
) -> None:
    """Each step keeps all but the last `drop` items of the payload before (the same
    objects: a rewrite when it drops any) and adds new ones."""
    canon = Canonicalizer(LAYOUT)
    items: list[object] = []
    derived = []
    for drop, new in steps:
        items = items[: max(len(items) - drop, 0)] + list(new)
        payload = {"model": "m", "messages": list(items)}
        stream = canon.stream(payload)
        fresh = canonical_stream(payload, LAYOUT)
        assert pieces(stream) == pieces(fresh)
        assert stream.text == fresh.text
        derived.append((stream, pieces(fresh), fresh.text))
    for stream, full, text in derived:
        assert pieces(stream) == full
        assert stream.text == text


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wire=st.sampled_from(sorted(RENDERERS)),
    steps=st.lists(st.tuples(step(), actions), min_size=1, max_size=12),
)
def test_every_render_and_stream_reads_as_it_did_when_handed_out(
    wire: str, steps: list[tuple[list[Message], str]]
) -> None:
    """A renderer's payloads and streams, kept across later steps (growing, joined turns,
    rewrites), still equal what they were, and each stream the one derived from scratch."""
    renderer = RENDERERS[wire]()
    transcript = Transcript([UserText("Start.")])
    kept: list[tuple[Rendered, list[object], tuple[object, ...]]] = []
    conversation = renderer.layout.conversation[0]
    for messages, action in steps:
        transcript.extend(messages)
        if action == "rewrite":
            users = [i for i, m in enumerate(transcript) if isinstance(m, UserText)]
            transcript.replace_content({users[-1]: f"rewritten {transcript.revision}"})
        rendered = renderer.render(transcript, TOOLS)
        fresh = canonical_stream(rendered.payload, renderer.layout)
        if action != "render-underived":
            assert pieces(rendered.wire) == pieces(fresh)
        kept.append((rendered, list(rendered.payload[conversation]), pieces(fresh)))
    for rendered, sent, full in kept:
        assert list(rendered.payload[conversation]) == sent
        assert pieces(rendered.wire) == full
