"""The cost simulator: hand-computed examples for each provider's rules, then properties.

Every example works its numbers out in the docstring or comments. Block sizes are in
tokens; `bp` is the TTL of an explicit breakpoint on the block.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warmloop.errors import ConfigurationError
from warmloop.facts.price_table import Prices, Rates, prices_for
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.facts.usage import Usage
from warmloop.simulate import (
    Block,
    CacheSimulator,
    SimRequest,
    blocks_from_texts,
    simulate,
    summary,
)

SONNET = profile_for("anthropic:claude-sonnet-4-5")  # minimum 1024, 5m and 1h TTLs
GPT5 = profile_for("openai:gpt-5")  # 1024 then 128-token steps, in-memory 300 s
GPT56 = profile_for("openai:gpt-5.6-terra")  # billed writes, whole entries, 30 min
DEEPSEEK = profile_for("deepseek:deepseek-chat")  # 64-token units, whole entries
GEMINI = profile_for("gemini:gemini-2.5-flash")  # minimum 2048, no increments
LOCAL = profile_for("local")


def b(tokens: int, key: str, bp: str | None = None) -> Block:
    return Block(tokens, key, bp)


def req(at: float, *blocks: Block, out: int = 0) -> SimRequest:
    return SimRequest(at, blocks, out)


def usages(profile: CacheProfile, *requests: SimRequest) -> list[Usage]:
    return [o.usage for o in simulate(requests, profile)]


def u(miss: int = 0, read: int = 0, write: int = 0, write_1h: int = 0, out: int = 0) -> Usage:
    return Usage.of_parts(miss, read, write, out, cache_write_1h_tokens=write_1h)


# --- explicit breakpoints (Anthropic) -------------------------------------------------------


def test_first_request_writes_to_the_last_breakpoint_and_the_tail_is_input() -> None:
    """system 3000 (bp) + user 500 (bp) + 200 unmarked: write 3500, miss 200.

    Cost at Sonnet 4.5 prices: 3500 * $3.75/M + 200 * $3/M + 50 output * $15/M
    = 0.013125 + 0.0006 + 0.00075 = $0.014475.
    """
    prices = prices_for("anthropic:claude-sonnet-4-5")
    blocks = (b(3000, "sys", "5m"), b(500, "user", "5m"), b(200, "tail"))
    [outcome] = simulate([req(0, *blocks, out=50)], SONNET, prices)
    assert outcome.usage == u(miss=200, write=3500, out=50)
    assert outcome.cost is not None
    assert outcome.cost.total == pytest.approx(0.014475)


def test_a_request_within_the_ttl_reads_what_the_previous_one_wrote() -> None:
    """The newest breakpoint (block 3) looks back 2 blocks to the write at block 1:
    read 3000 + 500 = 3500, write the new 400 + 300 = 700."""
    first = req(0, b(3000, "sys"), b(500, "user", "5m"))
    second = req(60, b(3000, "sys"), b(500, "user"), b(400, "asst"), b(300, "obs", "5m"))
    assert usages(SONNET, first, second)[1] == u(read=3500, write=700)


def test_an_entry_expires_ttl_after_its_last_use() -> None:
    """Written at t=0 with a 300 s TTL: at t=299.9 it is read, at t=300 it is gone."""
    first = req(0, b(2000, "sys", "5m"))
    again = b(2000, "sys", "5m")
    assert usages(SONNET, first, req(299.9, again))[1] == u(read=2000)
    assert usages(SONNET, first, req(300, again))[1] == u(write=2000)


def test_a_hit_refreshes_the_entry_it_read() -> None:
    """t=200 reads A through the lookback (expiry 300 -> 500) and writes B; t=450 looks
    back from C, finds A still live and reads it. Without the t=200 read A is gone."""
    a = b(2000, "A", "5m")
    r1, r3 = req(0, a), req(450, b(2000, "A"), b(100, "C", "5m"))
    r2 = req(200, b(2000, "A"), b(100, "B", "5m"))
    assert usages(SONNET, r1, r2, r3)[2] == u(read=2000, write=100)
    assert usages(SONNET, r1, r3)[1] == u(write=2100)


def _wide_step(new_blocks: int) -> list[Usage]:
    first = req(0, b(1500, "base", "5m"))
    grown = [b(1500, "base")] + [b(10, f"n{i}") for i in range(new_blocks)]
    grown[-1] = replace(grown[-1], breakpoint="5m")
    return usages(SONNET, first, req(10, *grown))


def test_lookback_finds_a_write_19_blocks_back() -> None:
    """Breakpoint at block 19, write at block 0: 19 - 0 < 20, read 1500, write 19 * 10."""
    assert _wide_step(19)[1] == u(read=1500, write=190)


def test_lookback_misses_a_write_20_blocks_back() -> None:
    """Breakpoint at block 20, write at block 0: 20 - 0 is not < 20, so everything
    (1500 + 20 * 10 = 1700) is written again."""
    assert _wide_step(20)[1] == u(write=1700)


def test_a_breakpoint_on_the_previous_end_keeps_wide_steps_warm() -> None:
    """The renderer's second marker: block 0 finds its own write (0 - 0 < 20)."""
    first = req(0, b(1500, "base", "5m"))
    wide = [b(1500, "base", "5m")] + [b(10, f"n{i}") for i in range(30)]
    wide[-1] = replace(wide[-1], breakpoint="5m")
    assert usages(SONNET, first, req(10, *wide))[1] == u(read=1500, write=300)


def test_more_than_four_breakpoints_is_rejected_and_changes_nothing() -> None:
    simulator = CacheSimulator(SONNET)
    simulator.request(req(0, b(2000, "sys", "5m")))
    five = [b(2000, "sys", "5m")] + [b(10, f"m{i}", "5m") for i in range(4)]
    with pytest.raises(ConfigurationError, match="at most 4"):
        simulator.request(req(5, *five))
    assert simulator.request(req(10, b(2000, "sys", "5m"))) == u(read=2000)


def test_below_the_minimum_nothing_is_read_or_written_at_that_breakpoint() -> None:
    """Minimum 1024. A breakpoint at 1000 tokens does nothing; with a second one at 2000,
    only that one writes, and it writes its whole prefix (2000)."""
    small = req(0, b(1000, "sys", "5m"), b(50, "q"))
    assert usages(SONNET, small, small) == [u(miss=1050), u(miss=1050)]
    two = req(0, b(1000, "sys", "5m"), b(1000, "doc", "5m"), b(50, "q"))
    assert usages(SONNET, two)[0] == u(miss=50, write=2000)


def test_writes_split_by_the_ttl_of_the_breakpoint_whose_segment_holds_them() -> None:
    """tools 2000 (bp 1h) + system 1000 (bp 5m) + 300: write 3000, 2000 of them at 1h.

    Cost: 2000 * $6/M + 1000 * $3.75/M + 300 * $3/M = 0.012 + 0.00375 + 0.0009 = $0.01665.
    At t=400 the 5m entry is gone and the 1h one lives: read 2000, write the system
    segment (1000) and the new one (300 + 200), all at 5m.
    """
    prices = prices_for("anthropic:claude-sonnet-4-5")
    first = req(0, b(2000, "tools", "1h"), b(1000, "sys", "5m"), b(300, "q"))
    later = req(400, b(2000, "tools", "1h"), b(1000, "sys", "5m"), b(300, "q"), b(200, "a", "5m"))
    outcomes = simulate([first, later], SONNET, prices)
    assert outcomes[0].usage == u(miss=300, write=3000, write_1h=2000)
    assert outcomes[0].cost is not None
    assert outcomes[0].cost.total == pytest.approx(0.01665)
    assert outcomes[1].usage == u(read=2000, write=1500)


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ((b(2000, "sys", "5m"), b(100, "doc", "1h")), "longer TTLs must come first"),
        ((b(2000, "sys", "24h"),), "no cache TTL '24h'"),
    ],
)
def test_breakpoints_the_api_would_reject_are_errors(
    blocks: tuple[Block, ...], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        simulate([req(0, *blocks)], SONNET)


def test_a_request_without_breakpoints_caches_nothing() -> None:
    plain = req(0, b(5000, "sys"), b(100, "q"))
    assert usages(SONNET, plain, replace(plain, at=1)) == [u(miss=5100), u(miss=5100)]


# --- automatic caching (OpenAI, Gemini, DeepSeek) ------------------------------------------


def test_openai_reads_the_common_prefix_rounded_to_128_token_steps() -> None:
    """Common prefix 2000 + 100 = 2100 -> 1024 + floor(1076 / 128) * 128 = 2048 read,
    2600 - 2048 = 552 miss. Unbilled writes: nothing is counted as written."""
    first = req(0, b(2000, "sys"), b(100, "q"))
    second = req(30, b(2000, "sys"), b(100, "q"), b(500, "a"))
    assert usages(GPT5, first, second)[1] == u(miss=552, read=2048)


def test_openai_caches_nothing_below_1024_tokens() -> None:
    """1000 tokens: not cached. 1500 then: nothing to read. 1600 then: common 1500 ->
    1024 + floor(476 / 128) * 128 = 1408 read, 192 miss."""
    r1 = req(0, b(1000, "sys"))
    r2 = req(1, b(1000, "sys"), b(500, "q"))
    r3 = req(2, b(1000, "sys"), b(500, "q"), b(100, "a"))
    assert usages(GPT5, r1, r2, r3) == [u(miss=1000), u(miss=1500), u(miss=192, read=1408)]


def test_openai_matches_a_partial_prefix_of_another_prompt() -> None:
    """A(1500)+B and A(1500)+C share 1500 tokens -> 1408 read (rounded as above)."""
    first = req(0, b(1500, "A"), b(600, "B"))
    second = req(5, b(1500, "A"), b(600, "C"))
    assert usages(GPT5, first, second)[1] == u(miss=692, read=1408)


def test_openai_in_memory_entries_expire_and_refresh() -> None:
    """300 s lifetime: t=299 reads (and refreshes to 599), t=598 reads; t=300 alone does not."""
    p = (b(1024, "sys"),)
    assert usages(GPT5, req(0, *p), req(299, *p), req(598, *p))[2] == u(read=1024)
    assert usages(GPT5, req(0, *p), req(300, *p))[1] == u(miss=1024)


def test_gpt_5_6_bills_writes_and_matches_only_whole_entries() -> None:
    """r1 A(3000)+B(500): write 3500. r2 A+C(500): A alone was never an entry, so
    nothing is read and 3500 is written again. With a breakpoint on A, r1 also writes
    an entry at A, and r2 reads 3000 and writes 500.

    Cost of that r2 at a GPT-5.6-shaped table ($2.5 input, 0.1x read, 1.25x write):
    3000 * 0.25 + 500 * 3.125 = 750 + 1562.5 -> $0.0023125.
    """
    r1, r2 = req(0, b(3000, "A"), b(500, "B")), req(60, b(3000, "A"), b(500, "C"))
    assert usages(GPT56, r1, r2) == [u(write=3500), u(write=3500)]
    marked = req(0, b(3000, "A", "30m"), b(500, "B"))
    rates = Rates(2.5, 0.25, 15, (("30m", 3.125), ("12h", 6.25)))
    prices = Prices("openai:gpt-5.6-terra", rates, "test", date(2026, 11, 22))
    outcome = simulate([marked, r2], GPT56, prices)[1]
    assert outcome.usage == u(read=3000, write=500)
    assert outcome.cost is not None
    assert outcome.cost.total == pytest.approx(0.0023125)


def test_whole_entry_hits_refresh_the_entry_they_read() -> None:
    """30 min lifetime: A written at 0 is read at 1000 (expiry 1800 -> 2800), so A+C at
    2000 reads it; without the read at 1000 it expired at 1800."""
    a = b(2000, "A")
    r1, r2, r3 = req(0, a), req(1000, a, b(100, "B")), req(2000, a, b(100, "C"))
    assert usages(GPT56, r1, r2, r3)[2] == u(read=2000, write=100)
    assert usages(GPT56, r1, r3)[1] == u(write=2100)


def test_gpt_5_6_12h_writes_are_billed_at_the_long_rate() -> None:
    long = replace(GPT56, ttl="12h")
    twelve = Usage(0, 0, 2000, 0, cache_write_12h_tokens=2000)
    assert usages(long, req(0, b(2000, "A"))) == [twelve]
    rates = Rates(2.5, 0.25, 15, (("30m", 3.125), ("12h", 6.25)))
    prices = Prices("openai:gpt-5.6-terra", rates, "test", date(2026, 11, 22))
    outcome = simulate([req(0, b(2000, "A"))], long, prices)[0]
    assert outcome.cost is not None
    assert outcome.cost.total == pytest.approx(2000 * 6.25 / 1e6)


def test_a_request_may_ask_for_a_longer_retention_than_the_profiles() -> None:
    """GPT-5.6 (30m default): a request asking for 12h writes at the 12h rate and its
    entry outlives the 30 minutes; the same request at the default has expired."""
    first = replace(req(0, b(2000, "A")), retention="12h")
    later = req(3_600, b(2000, "A"), b(100, "B"))
    assert usages(GPT56, first, later)[1] == u(read=2000, write=100)
    assert usages(GPT56, req(0, b(2000, "A")), later)[1] == u(write=2100)
    assert usages(GPT56, first)[0].cache_write_12h_tokens == 2000


def test_a_keep_alive_is_a_read_that_refreshes_the_entry() -> None:
    """Anthropic 5m: the last request again at 270 s with a one-token answer reads it all
    and keeps it alive, so the request after an eight-minute pause reads it too."""
    last = req(0, b(5000, "A", "5m"))
    ping = replace(last, at=270.0, output_tokens=1)
    after = req(480, b(5000, "A", "5m"), b(200, "B", "5m"))
    with_ping = usages(SONNET, last, ping, after)
    assert with_ping[1] == u(read=5000, out=1)
    assert with_ping[2] == u(read=5000, write=200)
    assert usages(SONNET, last, after)[1] == u(write=5200)


def test_deepseek_reads_whole_units_in_64_token_steps_and_learns_common_prefixes() -> None:
    """r1 A(1000)+B(500). r2 = r1 + C(300): the unit A+B (1500) matches whole,
    64 * floor(1500 / 64) = 1472 read, 328 miss. r3 A+D(200): A alone is no unit yet, 0
    read; the common prefix A is persisted. r4 A+E(100): reads A, 64 * 15 = 960.

    Cost of r2 at deepseek-chat prices: 1472 * $0.028/M + 328 * $0.28/M = $0.000133056.
    """
    a = b(1000, "A")
    requests = [
        req(0, a, b(500, "B")),
        req(10, a, b(500, "B"), b(300, "C")),
        req(20, a, b(200, "D")),
        req(30, a, b(100, "E")),
    ]
    outcomes = simulate(requests, DEEPSEEK, prices_for("deepseek:deepseek-chat"))
    assert [o.usage for o in outcomes] == [
        u(miss=1500),
        u(miss=328, read=1472),
        u(miss=1200),
        u(miss=140, read=960),
    ]
    assert outcomes[1].cost is not None
    assert outcomes[1].cost.total == pytest.approx(0.000133056)


def test_gemini_reads_exact_common_prefixes_from_its_minimum() -> None:
    """Minimum 2048, no steps: 2000 is not cached; 2100 is; 2150 then reads 2100."""
    r1 = req(0, b(2000, "A"))
    r2 = req(1, b(2000, "A"), b(100, "B"))
    r3 = req(2, b(2000, "A"), b(100, "B"), b(50, "C"))
    assert usages(GEMINI, r1, r2, r3) == [u(miss=2000), u(miss=2100), u(miss=50, read=2100)]


# --- local engine ------------------------------------------------------------------------


def test_a_local_engine_holds_exactly_the_previous_request_forever() -> None:
    """X, then Y evicts X, so X+Z reads nothing; X+Z+W a year later reads X+Z (150)."""
    year = 365 * 86400.0
    result = usages(
        LOCAL,
        req(0, b(100, "X")),
        req(1, b(100, "Y")),
        req(2, b(100, "X"), b(50, "Z")),
        req(year, b(100, "X"), b(50, "Z"), b(10, "W")),
    )
    assert result == [u(miss=100), u(miss=100), u(miss=150), u(miss=10, read=150)]


# --- plumbing ----------------------------------------------------------------------------


def test_requests_must_come_in_time_order() -> None:
    with pytest.raises(ConfigurationError, match="time order"):
        simulate([req(10, b(1, "a")), req(5, b(1, "a"))], GPT5)


@pytest.mark.parametrize("profile", [SONNET, GPT5, DEEPSEEK, LOCAL], ids=lambda p: p.entry)
def test_a_copy_prices_an_alternative_without_touching_the_original(
    profile: CacheProfile,
) -> None:
    a, x = b(2048, "A", "5m"), b(1024, "X", "5m")
    simulator = CacheSimulator(profile)
    simulator.request(req(0, a))
    twin = simulator.copy()
    assert twin.request(req(1, a, x)).cache_read_tokens == 2048
    # The twin's A+X entry must not leak back: the original still reads A only.
    assert simulator.request(req(2, a, x)).cache_read_tokens == 2048


def test_blocks_from_texts_hashes_each_piece_and_marks_breakpoints() -> None:
    blocks = blocks_from_texts(["abcdefgh", "xyz"], breakpoints={-1: "5m"})
    assert [x.tokens for x in blocks] == [2, 1]  # ceil(8 / 4), ceil(3 / 4)
    assert blocks[0].key == hashlib.sha256(b"abcdefgh").hexdigest()
    assert [x.breakpoint for x in blocks] == [None, "5m"]
    assert blocks_from_texts(["a b c"], count=lambda t: len(t.split()))[0].tokens == 3
    with pytest.raises(ConfigurationError, match="outside 2 pieces"):
        blocks_from_texts(["a", "b"], breakpoints={2: "5m"})


def test_summary_totals_reads_writes_misses_dollars_and_hit_rate() -> None:
    """From the 1h/5m example: prompts 3300 + 3500 = 6800, read 2000, written 4500,
    missed 300; hit rate 2000 / 6800."""
    first = req(0, b(2000, "tools", "1h"), b(1000, "sys", "5m"), b(300, "q"))
    later = req(400, b(2000, "tools", "1h"), b(1000, "sys", "5m"), b(300, "q"), b(200, "a", "5m"))
    total = summary(simulate([first, later], SONNET, prices_for("anthropic:claude-sonnet-4-5")))
    assert (total.requests, total.prompt_tokens, total.reads) == (2, 6800, 2000)
    assert (total.writes, total.writes_1h, total.misses) == (4500, 2000, 300)
    assert total.hit_rate == pytest.approx(2000 / 6800)
    # 0.01665 + 2000 * 0.3/M + 1500 * 3.75/M = 0.01665 + 0.0006 + 0.005625
    assert total.dollars == pytest.approx(0.022875)
    assert summary(simulate([first], SONNET)).dollars is None


# --- properties --------------------------------------------------------------------------

PROFILES = [SONNET, GPT5, GPT56, DEEPSEEK, GEMINI, LOCAL]


@st.composite
def sessions(draw: st.DrawFn) -> list[SimRequest]:
    """Requests over a small key alphabet (so prefixes overlap), up to 4 breakpoints
    with 1h ones first, and random gaps that sometimes outlive the TTLs."""
    requests, now = [], 0.0
    for _ in range(draw(st.integers(1, 6))):
        keys = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=12))
        sizes = draw(st.lists(st.integers(0, 900), min_size=len(keys), max_size=len(keys)))
        marks = sorted(draw(st.sets(st.integers(0, len(keys) - 1), max_size=4)))
        n_long = draw(st.integers(0, len(marks)))
        ttl = {i: ("1h" if rank < n_long else "5m") for rank, i in enumerate(marks)}
        blocks = tuple(
            Block(s, k, ttl.get(i)) for i, (k, s) in enumerate(zip(keys, sizes, strict=True))
        )
        now += draw(st.sampled_from([0.0, 10.0, 290.0, 400.0, 4000.0]))
        requests.append(SimRequest(now, blocks, draw(st.integers(0, 100))))
    return requests


@settings(max_examples=150, deadline=None)
@given(sessions(), st.sampled_from(PROFILES))
def test_every_prompt_token_is_read_written_or_missed_and_cost_is_never_negative(
    requests: list[SimRequest], profile: CacheProfile
) -> None:
    prices = prices_for(profile.entry) if profile.mode != "engine" else None
    for request, outcome in zip(requests, simulate(requests, profile, prices), strict=True):
        usage = outcome.usage
        assert usage.prompt_tokens == request.prompt_tokens
        assert min(usage.uncached_tokens, usage.cache_read_tokens, usage.cache_write_tokens) >= 0
        assert 0 <= usage.cache_write_1h_tokens <= usage.cache_write_tokens
        assert outcome.cost is None or outcome.cost.total >= 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 19), min_size=1, max_size=8),
    st.lists(st.floats(0, 299), min_size=8, max_size=8),
    st.booleans(),
)
def test_append_only_with_a_breakpoint_on_the_newest_block_reads_all_the_last_one_wrote(
    steps: list[int], gaps: list[float], one_hour: bool
) -> None:
    """Steps of 1-19 new blocks stay inside the 20-block lookback; gaps stay inside 5 min."""
    ttl = "1h" if one_hour else "5m"
    history = [Block(5000, "seed")]
    requests = [SimRequest(0.0, (Block(5000, "seed", ttl),))]
    now = 0.0
    for n, (new, gap) in enumerate(zip(steps, gaps, strict=False)):
        history += [Block(37 * (i + 1), f"{n}.{i}") for i in range(new)]
        now += gap
        requests.append(SimRequest(now, (*history[:-1], replace(history[-1], breakpoint=ttl))))
    outcomes = simulate(requests, SONNET)
    for previous, outcome in zip(requests, outcomes[1:], strict=False):
        assert outcome.usage.cache_read_tokens == previous.prompt_tokens
        assert outcome.usage.uncached_tokens == 0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 3000), min_size=2, max_size=10))
def test_append_only_under_openai_reads_the_previous_prompt_rounded_down(sizes: list[int]) -> None:
    history: list[Block] = []
    requests = []
    for n, size in enumerate(sizes):
        history.append(Block(size, f"m{n}"))
        requests.append(SimRequest(n * 10.0, tuple(history)))
    later = usages(GPT5, *requests)[1:]
    for previous, request, usage in zip(requests, requests[1:], later, strict=False):
        expected = GPT5.cacheable(previous.prompt_tokens) if request.prompt_tokens >= 1024 else 0
        assert usage.cache_read_tokens == expected
