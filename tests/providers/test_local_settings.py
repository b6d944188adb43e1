"""ModelSettings on the embedded model: each setting the local record places reaches the
sampler llama.cpp would run (its `Llama.generate` arguments, its seed, where a step ends),
and none changes the prompt's tokens, so the KV prefix is reused with any setting. The
mapping is tested without the engine; one small `engine` test runs Gemma 3 270M."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests.support.scenario import TOOLS
from warmloop import Agent
from warmloop.errors import ConfigurationError, ContextWindowExceeded
from warmloop.messages import SystemText, UserText
from warmloop.outputs import Outputs
from warmloop.providers.applied_settings import with_settings
from warmloop.providers.local.chat_template import TemplatePrompt, prompt_tokens
from warmloop.providers.local.model import LocalModel
from warmloop.providers.local.sampling import Sampling, sampling_of, step_tokens
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

SPECS: tuple[ToolSpec, ...] = (*(t.spec for t in TOOLS), Outputs().spec)
TRANSCRIPT = Transcript([SystemText("You are a careful agent."), UserText("Find k1.")], id="t")


def prompt_of(model: object) -> TemplatePrompt:
    render = getattr(model, "render")  # noqa: B009 - LocalModel or its settings wrapper
    prompt = render(TRANSCRIPT, SPECS).payload
    assert isinstance(prompt, TemplatePrompt)
    return prompt


def test_each_setting_reaches_the_sampler_llama_would_run() -> None:
    model = LocalModel("gemma-3-270m", max_tokens=96, seed=1234)
    settings = {"temperature": 0.7, "top_p": 0.9, "max_tokens": 40, "stop": "Observation:"}
    placed = with_settings(model, {**settings, "seed": 7})
    sampling = model.sampling(prompt_of(placed))
    assert sampling == Sampling(
        max_tokens=40, seed=7, temperature=0.7, top_p=0.9, stop=("Observation:",)
    )
    # Only temperature and top_p act, as OpenAI's do (llama.cpp's top_k, min_p and
    # typical_p off).
    assert sampling.generate_arguments() == {
        "temp": 0.7,
        "top_p": 0.9,
        "top_k": 0,
        "min_p": 0.0,
        "typical_p": 1.0,
    }
    # Its facts keep max_tokens for the answer; the window is the engine's n_ctx.
    assert placed.facts.output_reserve == 40
    assert placed.facts.context_window == model.n_ctx


def test_without_settings_the_engine_stays_greedy_on_its_own_limit_and_seed() -> None:
    model = LocalModel("gemma-3-270m", max_tokens=96, seed=1234)
    assert model.sampling(prompt_of(model)) == Sampling(max_tokens=96, seed=1234)
    assert Sampling(max_tokens=96, seed=1234).generate_arguments()["temp"] == 0.0


def test_top_p_alone_samples_at_openais_default_temperature() -> None:
    sampling = sampling_of((("top_p", 0.5),), max_tokens=64, seed=1)
    assert (sampling.temperature, sampling.top_p) == (1.0, 0.5)
    # A temperature of 0 given with it stays greedy: the user asked for it.
    both = sampling_of((("top_p", 0.5), ("temperature", 0.0)), max_tokens=64, seed=1)
    assert both.temperature == 0


def test_a_run_setting_replaces_the_agents_in_the_prompt() -> None:
    prompt = prompt_of(with_settings(LocalModel("gemma-3-270m"), {"seed": 1}))
    again = prompt.with_setting(("seed",), 2)
    assert dict(again.sampling) == {"seed": 2}
    assert again.turns == prompt.turns


def test_settings_the_embedded_model_cannot_honour_are_refused_naming_it() -> None:
    model = LocalModel("gemma-3-270m")
    with pytest.raises(ConfigurationError, match=r"provider .*\(local:\) does not take"):
        Agent(model, model_settings={"reasoning_effort": "low"})


def test_no_setting_changes_the_prompt_tokens(vocab: Any) -> None:
    """The KV prefix reused is the same with any setting: they go to the sampler only."""
    model = LocalModel("gemma-3-270m")
    plain = prompt_tokens(vocab, prompt_of(model))
    every = {"temperature": 1.3, "top_p": 0.2, "max_tokens": 17, "stop": ["\n\n"], "seed": 9}
    assert prompt_tokens(vocab, prompt_of(with_settings(model, every))) == plain


END = 0


def spelt(ids: Sequence[int]) -> str:
    return "".join(chr(ord("a") + i - 1) for i in ids)  # 1 -> "a", 2 -> "b", ...


def steps(stream: list[int], sampling: Sampling) -> str:
    return spelt(list(step_tokens(stream, sampling, is_end=lambda t: t == END, text_of=spelt)))


def test_a_step_ends_at_its_stop_string_its_limit_or_the_end_token() -> None:
    stream = [1, 2, 3, 4, 5, 6, END, 7]  # "abcdef", then the end token
    assert steps(stream, Sampling(max_tokens=99, seed=0)) == "abcdef"
    assert steps(stream, Sampling(max_tokens=4, seed=0)) == "abcd"
    # The token completing a stop string ends the step, kept (the KV cache holds it).
    assert steps(stream, Sampling(max_tokens=99, seed=0, stop=("zz", "cd"))) == "abcd"
    assert steps(stream, Sampling(max_tokens=99, seed=0, stop=("zz",))) == "abcdef"


@pytest.mark.engine
def test_gemma_ends_its_step_at_the_max_tokens_setting() -> None:
    pytest.importorskip("llama_cpp")
    model = LocalModel("gemma-3-270m", n_ctx=1024, max_tokens=96, n_threads=1, openings=False)
    try:
        # The window check holds the setting's room for the answer, not the model's own.
        with pytest.raises(ContextWindowExceeded, match="up to 1000 more may be generated"):
            model.complete(prompt_of(with_settings(model, {"max_tokens": 1000})))
        _text, generated, usage = model.complete(
            prompt_of(with_settings(model, {"max_tokens": 5, "temperature": 0.8, "seed": 3}))
        )
        assert usage.output_tokens == len(generated) == 5
        again = model.complete(
            prompt_of(with_settings(model, {"max_tokens": 5, "temperature": 0.8, "seed": 3}))
        )
        assert len(again[1]) == 5
        assert model.engine()._seed == 3  # the sampler `generate` builds draws from it
        # The settings changed no prompt token: all but the one token sampling needs
        # evaluated is reused from the KV cache.
        assert again[2].cache_read_tokens == usage.prompt_tokens - 1
    finally:
        model.close()
