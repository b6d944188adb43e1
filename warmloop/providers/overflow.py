"""A provider's rejection of a prompt that is longer than the context window, recognised.

Each provider says it its own way (shapes as their APIs return them):
- Anthropic: 400 `invalid_request_error`, "prompt is too long: 208656 tokens > 200000
  maximum";
- OpenAI, DeepSeek, vLLM: 400 with `code: "context_length_exceeded"` and "This model's
  maximum context length is 128000 tokens. However, your messages resulted in 204308
  tokens";
- Gemini: 400 `INVALID_ARGUMENT`, "The input token count (1200293) exceeds the maximum
  number of tokens allowed (1048576).";
- llama.cpp server: `type: "exceed_context_size_error"` with `n_prompt_tokens` and
  `n_ctx`, "the request exceeds the available context size".
The loop treats the result as a forced maintenance point (prune, then fold) and one retry.
"""

from __future__ import annotations

import json
import re
from typing import Any

from warmloop.errors import ContextWindowExceeded

_PATTERNS = (
    # (regex, group of the prompt size, group of the window)
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum"), 1, 2),
    (
        re.compile(
            r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)"
        ),
        1,
        2,
    ),
    (
        re.compile(
            r"maximum context length is (\d+) tokens\. However, "
            r"(?:your messages resulted in|you requested) (\d+) tokens"
        ),
        2,
        1,
    ),
    (
        re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)"),
        1,
        2,
    ),
)
_PHRASES = (
    "context_length_exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "prompt is too long",
    "maximum context length",
)


def _find(body: Any, key: str) -> Any:
    """The first value of `key` anywhere in a JSON-like body."""
    if isinstance(body, dict):
        if key in body:
            return body[key]
        for value in body.values():
            found = _find(value, key)
            if found is not None:
                return found
    elif isinstance(body, list):
        for value in body:
            found = _find(value, key)
            if found is not None:
                return found
    return None


def context_overflow(provider: str, message: str, body: Any = None) -> ContextWindowExceeded | None:
    """The ContextWindowExceeded a rejection means, or None when it is something else."""
    text = f"{message} {json.dumps(body, default=str) if body is not None else ''}"
    sizes: tuple[int | None, int | None] = (None, None)
    for pattern, prompt_group, window_group in _PATTERNS:
        match = pattern.search(text)
        if match:
            sizes = (int(match.group(prompt_group)), int(match.group(window_group)))
            break
    else:
        if not any(phrase in text for phrase in _PHRASES):
            return None
        prompt, window = _find(body, "n_prompt_tokens"), _find(body, "n_ctx")
        if isinstance(prompt, int) and isinstance(window, int):
            sizes = (prompt, window)
    prompt_tokens, window = sizes
    size = (
        f"the prompt has {prompt_tokens:,} tokens, more than the context window of {window:,}"
        if prompt_tokens is not None and window is not None
        else "the prompt is longer than the model's context window"
    )
    return ContextWindowExceeded(
        f"{provider}: {size}. With maintenance on (the default) warmloop prunes and folds "
        "the conversation and retries once; otherwise shorten the task, lower "
        "max_result_chars, or use a model with a larger window",
        prompt_tokens=prompt_tokens,
        window=window,
    )
