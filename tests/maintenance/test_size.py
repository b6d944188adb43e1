"""The next prompt's size, known before it is sent: the last request's exact tokens plus the
new part, counted with the provider's tokenizer where one is installed, else calibrated."""

from __future__ import annotations

import math

from warmloop.maintenance.size import MARGIN, PromptSizer, TokenCounter, exact_counter


def test_without_a_tokenizer_the_ratio_is_learned_from_real_requests() -> None:
    counter = TokenCounter("anthropic:claude-sonnet-4-6")
    assert counter.exact is None  # no Anthropic tokenizer is installable
    assert counter.count("x" * 400) == 100  # the default: four characters a token
    counter.calibrate(chars=3_000, tokens=1_000)
    assert counter.count("x" * 300) == 100


def test_an_installed_openai_tokenizer_counts_exactly() -> None:
    exact = exact_counter("openai:gpt-5")  # the dev install ships an offline o200k_base
    assert exact is not None
    counter = TokenCounter("openai:gpt-5")
    assert counter.count("hello world") == exact("hello world") == 2


def test_the_estimate_is_the_last_exact_size_plus_the_new_part_with_a_margin() -> None:
    sizer = PromptSizer(TokenCounter("anthropic:x", exact=lambda text: len(text) // 2))
    first = "a" * 1_000
    assert sizer.estimate(first) == math.ceil(500 * MARGIN)  # nothing known yet
    sizer.observed(first, 480)  # what the provider reported
    assert sizer.estimate(first + "b" * 200) == 480 + math.ceil(100 * MARGIN)
    # a stream that does not extend the last one (a rewrite) is counted whole
    assert sizer.estimate("c" * 600) == math.ceil(300 * MARGIN)
