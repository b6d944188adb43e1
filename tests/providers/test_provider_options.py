"""Each provider's options as a typed dict (issue 32): the dict names exactly the keyword
options its model class takes, and `resolve_model` (and so the CLI's `--option`) refuses a
value of the wrong type naming the option, before the model is made."""

from __future__ import annotations

import re
from typing import Any

import pytest

from warmloop import ConfigurationError, resolve_model
from warmloop.cli.model_options import model_options
from warmloop.providers.anthropic.options import AnthropicOptions
from warmloop.providers.records import load
from warmloop.providers.registry import providers
from warmloop.providers.select import options_of


@pytest.mark.parametrize("record", list(providers()), ids=lambda r: r.prefix)
def test_each_providers_typed_options_are_exactly_its_models_options(record: Any) -> None:
    assert record.options is not None
    typed = load(record.options)
    model_class = load(record.model)
    assert sorted(typed.__annotations__) == sorted(options_of(model_class))


def test_typed_options_reach_the_model_as_given() -> None:
    options: AnthropicOptions = {"cache_ttl": "1h", "max_tokens": 2000, "api_key": "sk-test"}
    model = resolve_model("anthropic:claude-sonnet-4-5", **options)
    assert model.facts.output_reserve == 2000


BAD: list[tuple[str, tuple[str, ...], str]] = [
    ("anthropic:claude-sonnet-4-5", ("cache_ttl=2h",), "option cache_ttl must be"),
    ("anthropic:claude-sonnet-4-5", ("max_tokens=lots",), "option max_tokens must be"),
    ("openai:gpt-5", ("diagnose=yes",), "option diagnose must be"),
    ("gemini:gemini-2.5-flash", ("retry_delay=soon",), "option retry_delay must be"),
    ("deepseek:deepseek-chat", ("params=[1]",), "option params must be"),
    ("openai-chat:gpt-5", ("text_protocol=1",), "option text_protocol must be"),
]


@pytest.mark.parametrize(("spec", "pairs", "says"), BAD)
def test_an_option_of_the_wrong_type_is_refused_naming_it(
    spec: str, pairs: tuple[str, ...], says: str
) -> None:
    chosen = model_options(spec, pairs)
    prefix = spec.split(":")[0]
    with pytest.raises(ConfigurationError, match=re.escape(f"model '{prefix}': {says}")):
        resolve_model(spec, api_key="sk-test", **chosen)


def test_a_setting_name_that_is_also_the_providers_option_stays_its_option() -> None:
    # LocalModel takes max_tokens and seed itself; Anthropic takes max_tokens.
    assert model_options("local", ("max_tokens=512", "seed=3")) == {"max_tokens": 512, "seed": 3}
    assert model_options("anthropic:claude-sonnet-4-5", ("max_tokens=900", 'stop=["X"]')) == {
        "max_tokens": 900,
        "model_settings": {"stop": ["X"]},
    }
