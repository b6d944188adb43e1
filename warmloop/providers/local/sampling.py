"""How the embedded model samples one step: the model settings its prompt carries
(`TemplatePrompt.sampling`, placed by the local record) as llama.cpp's sampler arguments,
and where a step ends.

Without settings the engine samples greedily, as warmloop's local eval measured it: the
step grammar constrains whichever sampler runs, so `temperature` and `top_p` choose among
tokens that still parse. A setting goes to the sampler only, never into the prompt, so the
tokens a request starts with, and the KV prefix they reuse, are the same with any setting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_TEMPERATURE = 1.0
"""The temperature `top_p` samples at when no temperature is given: OpenAI's default, the
one its API documents nucleus sampling against ("Chat Completions > top_p")."""


@dataclass(frozen=True)
class Sampling:
    """One step's sampling: `temperature` 0 is greedy; `max_tokens` ends the step after
    that many tokens; a `stop` string ends it once the generated text holds it."""

    max_tokens: int
    seed: int
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()

    def generate_arguments(self) -> dict[str, Any]:
        """Keyword arguments of llama-cpp-python's `Llama.generate` for this sampling: only
        temperature and top_p act (top_k, min_p and typical_p, whose defaults would narrow
        the choice further, are off), so a setting means what OpenAI's does."""
        return {
            "temp": self.temperature,
            "top_p": self.top_p,
            "top_k": 0,
            "min_p": 0.0,
            "typical_p": 1.0,
        }


def sampling_of(settings: Iterable[tuple[str, Any]], *, max_tokens: int, seed: int) -> Sampling:
    """The sampling a prompt's settings ask for, over the model's own `max_tokens` and
    `seed`. `top_p` without a temperature samples at `DEFAULT_TEMPERATURE`."""
    given: Mapping[str, Any] = dict(settings)
    top_p = float(given.get("top_p", 1.0))
    default = DEFAULT_TEMPERATURE if "top_p" in given else 0.0
    return Sampling(
        max_tokens=int(given.get("max_tokens", max_tokens)),
        seed=int(given.get("seed", seed)),
        temperature=float(given.get("temperature", default)),
        top_p=top_p,
        stop=tuple(given.get("stop", ())),
    )


def step_tokens(
    stream: Iterable[int],
    sampling: Sampling,
    *,
    is_end: Callable[[int], bool],
    text_of: Callable[[Sequence[int]], str],
) -> Iterator[int]:
    """The tokens of one step from the engine's `stream`: up to an end-of-generation token
    (left out), `sampling.max_tokens` of them, or the token that completes a stop string.
    The stop string stays in the step: its tokens are in the KV cache, and the next
    request starts with every token the engine holds."""
    generated: list[int] = []
    for token in stream:
        if is_end(token):
            return
        generated.append(token)
        yield token
        if len(generated) >= sampling.max_tokens:
            return
        if sampling.stop and any(s in text_of(generated) for s in sampling.stop):
            return
