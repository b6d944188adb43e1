"""`python -m benchmarks overhead`: the usage it feeds the maintainer grows with the prompt
as a provider's would (a fixed usage made the calibrated ratio climb with the history),
and a short run samples every part at every size without a rewrite or a bust."""

from __future__ import annotations

from benchmarks.overhead import PARTS, measure, provider_usage


def test_the_usage_grows_with_the_prompt_and_reads_the_earlier_prompt_from_cache() -> None:
    first = provider_usage(4_000, 0)
    assert (first.prompt_tokens, first.cache_read_tokens) == (1_000, 0)
    later = provider_usage(40_000, first.prompt_tokens)
    assert later.prompt_tokens == 10_000
    assert later.cache_read_tokens == 1_000
    assert 40_000 / later.prompt_tokens == 4  # the ratio the maintainer calibrates


def test_a_short_run_samples_every_part_at_every_size() -> None:
    """Past 600 messages a prune would pay were the step not its run's last (the run
    asserts that none is made)."""
    samples, new_kib = measure((20, 700))
    assert new_kib > 0.5
    for size in (20, 700):
        assert set(samples[size]) == set(PARTS)
        assert all(len(samples[size][part]) >= 5 for part in PARTS)
