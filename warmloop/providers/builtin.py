"""warmloop's own providers and wire formats: data the registry loads through the same
`register_provider` / `register_wire_format` a third party calls (docs/adding-a-provider.md).

Answer minimums: Anthropic `max_tokens` 1, and above `thinking.budget_tokens` when thinking
is on (the API requires it; the thinking settings are part of the cache key, so they stay);
Chat Completions `max_completion_tokens` 1; Responses `max_output_tokens` 16 (the API's
floor); Gemini `config.max_output_tokens` 1.
"""

from __future__ import annotations

from warmloop.providers import anthropic_cache, openai_cache
from warmloop.providers.records import ProviderRecord, RoutingKey, WireFormat
from warmloop.providers.routing import CACHE_KEY_FIELD, SESSION_HEADER, XAI_HEADER
from warmloop.wire.stream import ANTHROPIC, CHAT, GEMINI_HTTP, GEMINI_SDK, RESPONSES
from warmloop.wire.usage import anthropic_usage, chat_usage, gemini_usage, responses_usage
from warmloop.wire.verdict import ANTHROPIC_BETA

COMPARISON: tuple[str, str] = ("prompt_cache_options", "comparison_response_id")
"""OpenAI's cache-diagnostics baseline: which response to compare with, not the prompt."""

WIRE_FORMATS = (
    WireFormat(
        ANTHROPIC.name,
        ANTHROPIC,
        provider="anthropic",
        answer=("max_tokens",),
        thinking_budget=("thinking", "budget_tokens"),
        explicit_breakpoints=True,
        per_request_ttls="any",
        write_ttl=anthropic_cache.with_ttl,
        endpoint=r"/messages$",
        diagnostics_host="api.anthropic.com",
        diagnostics_field=("diagnostics", "previous_message_id"),
        diagnostics_beta=ANTHROPIC_BETA,
        asks_without_baseline=True,
        silence_is_unchanged=True,
        read_usage=anthropic_usage,
    ),
    WireFormat(
        CHAT.name,
        CHAT,
        provider="openai",
        answer=("max_completion_tokens",),
        endpoint=r"/chat/completions$",
        read_usage=chat_usage,
    ),
    WireFormat(
        RESPONSES.name,
        RESPONSES,
        provider="openai",
        answer=("max_output_tokens",),
        least_answer=16,
        per_request_ttls=frozenset(openai_cache.TTLS),
        write_ttl=openai_cache.with_ttl,
        prewarm=openai_cache.with_prewarm,
        endpoint=r"/responses$",
        diagnostics_host="api.openai.com",
        diagnostics_field=COMPARISON,
        logged_unprompted=(COMPARISON,),
        read_usage=responses_usage,
    ),
    WireFormat(
        GEMINI_SDK.name,
        GEMINI_SDK,
        provider="gemini",
        answer=("config", "max_output_tokens"),
        logged_layout=GEMINI_HTTP,
        endpoint=r"/models/([^/:]+):(?:stream)?[gG]enerateContent",
        read_usage=gemini_usage,
    ),
)
"""In the order a logged path is matched against their endpoints."""

_COMPATIBLE = "warmloop.providers.openai_compatible"
_OPENAI = "openai:AsyncOpenAI"
_OPENAI_ERRORS = f"{_COMPATIBLE}:ERRORS"
_CACHE_KEY = RoutingKey(field=CACHE_KEY_FIELD)
PROVIDERS = (
    ProviderRecord(
        "local",
        "warmloop.providers.local:LocalModel",
        needs_name=None,
        extra="local",
        example="local",
        in_process=True,
        priced=False,
    ),
    ProviderRecord(
        "anthropic",
        "warmloop.providers.anthropic:AnthropicModel",
        ANTHROPIC.name,
        extra="anthropic",
        key_variables=("ANTHROPIC_API_KEY",),
        client="anthropic:AsyncAnthropic",
        errors="warmloop.providers.anthropic:ERRORS",
        display_name="Anthropic",
        families=("claude",),
        example="anthropic:claude-sonnet-4-5",
    ),
    ProviderRecord(
        "openai",
        "warmloop.providers.openai_responses:OpenAIResponsesModel",
        RESPONSES.name,
        key_variables=("OPENAI_API_KEY",),
        client=_OPENAI,
        errors=_OPENAI_ERRORS,
        routing=_CACHE_KEY,
        display_name="OpenAI",
        families=("gpt", "o1", "o3", "o4", "codex"),
        tokenizer="o200k_base",
        example="openai:gpt-5",
    ),
    ProviderRecord(
        "openai-chat",
        f"{_COMPATIBLE}:OpenAIChatModel",
        CHAT.name,
        key_variables=("OPENAI_API_KEY",),
        client=_OPENAI,
        errors=_OPENAI_ERRORS,
        routing=_CACHE_KEY,
        telemetry_name="openai",
        display_name="OpenAI",
        tokenizer="o200k_base",
        example="openai-chat:gpt-5",
    ),
    ProviderRecord(
        "gemini",
        "warmloop.providers.gemini:GeminiModel",
        GEMINI_SDK.name,
        extra="gemini",
        key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        client="google.genai:Client",
        errors="warmloop.providers.gemini_retry:GEMINI_ERRORS",
        telemetry_name="gcp.gemini",
        display_name="Gemini",
        families=("gemini",),
        example="gemini:gemini-2.5-flash",
    ),
    ProviderRecord(
        "deepseek",
        f"{_COMPATIBLE}:DeepSeekModel",
        CHAT.name,
        key_variables=("DEEPSEEK_API_KEY",),
        client=_OPENAI,
        errors=_OPENAI_ERRORS,
        display_name="DeepSeek",
        families=("deepseek",),
        example="deepseek:deepseek-chat",
    ),
    ProviderRecord(
        "xai",
        f"{_COMPATIBLE}:XAIModel",
        CHAT.name,
        key_variables=("XAI_API_KEY",),
        client=_OPENAI,
        errors=_OPENAI_ERRORS,
        routing=RoutingKey(header=XAI_HEADER),
        telemetry_name="x_ai",
        display_name="xAI",
        example="xai:grok-4",
    ),
    ProviderRecord(
        "openai-compatible",
        f"{_COMPATIBLE}:OpenAICompatibleModel",
        CHAT.name,
        key_variables=("OPENAI_COMPATIBLE_API_KEY",),
        client=_OPENAI,
        errors=_OPENAI_ERRORS,
        routing=RoutingKey(header=SESSION_HEADER),
        example="openai-compatible:http://host:port/v1",
        priced=False,
    ),
    ProviderRecord(
        "scripted",
        "warmloop.providers.scripted:ScriptedModel",
        CHAT.name,
        needs_name=None,
        priced=False,
        listed=False,
    ),
)
"""In the order the selection error lists them."""
