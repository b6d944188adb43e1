"""The keyword options of the OpenAI-wire providers' models, typed (checked by `resolve_model`)."""

from __future__ import annotations

from collections.abc import Mapping

from warmloop.messages import JsonValue
from warmloop.providers.option_check import CommonOptions


class OpenAIOptions(CommonOptions, total=False):
    """`openai:`, the Responses API (`OpenAIResponsesModel`)."""

    prompt_cache_retention: str | None
    reasoning: dict[str, JsonValue] | None
    max_retries: int | None
    diagnose: bool
    cache_key: bool | None


class ChatOptions(CommonOptions, total=False):
    """`deepseek:` and `xai:` (Chat Completions hosts)."""

    max_retries: int
    text_protocol: bool
    params: Mapping[str, JsonValue] | None


class OpenAIChatOptions(ChatOptions, total=False):
    """`openai-chat:` (`OpenAIChatModel`)."""

    prompt_cache_retention: str | None
    cache_key: bool | None


class OpenAICompatibleOptions(ChatOptions, total=False):
    """`openai-compatible:` (vLLM, SGLang, llama.cpp server, Ollama, gateways)."""

    cache_key: bool
    session_header: str | None
    cache_rules: str | None
    parent_session_header: str | None
