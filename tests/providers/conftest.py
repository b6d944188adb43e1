"""Fixtures the provider tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from warmloop.providers.local.gemma import gemma_path


@pytest.fixture(scope="module")
def vocab() -> Iterator[Any]:
    """A vocabulary-only llama.cpp model: real tokenizer, no weights, loads in ~0.5 s."""
    llama_cpp = pytest.importorskip("llama_cpp")
    llama = llama_cpp.Llama(str(gemma_path()), vocab_only=True, verbose=False)
    yield llama
    llama.close()
