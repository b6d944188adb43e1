"""warmloop's own providers and wire formats: data the registry loads through the same
`register_provider` / `register_wire_format` a third party calls (docs/adding-a-provider.md).

Answer minimums: Anthropic `max_tokens` 1, and above `thinking.budget_tokens` when thinking
is on (the API requires it; the thinking settings are part of the cache key, so they stay);
Chat Completions `max_completion_tokens` 1; Responses `max_output_tokens` 16 (the API's
floor); Gemini `config.max_output_tokens` 1.
"""

from __future__ import annotations

from warmloop.messages import JsonValue
from warmloop.providers import anthropic_cache, openai_cache
from warmloop.providers.model_settings import Place
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


def _anthropic_thinking(budget: int) -> JsonValue:
    return {"type": "disabled"} if budget == 0 else {"type": "enabled", "budget_tokens": budget}


def _anthropic_tool_choice(parallel: bool) -> JsonValue:
    return {"type": "auto", "disable_parallel_tool_use": not parallel}


# Where each provider's API reference puts each ModelSettings field (model_settings.py).
# Anthropic, "Messages > Create a Message" (anthropic 2.14's `messages.create`): max_tokens,
# stop_sequences, output_config.effort (low, medium, high, xhigh), thinking ({"type":
# "enabled", "budget_tokens": N} or {"type": "disabled"}) and
# tool_choice.disable_parallel_tool_use; no temperature, top_p or seed any more. Thinking
# and tool choice are part of its cache key ("Prompt caching > What invalidates the cache").
ANTHROPIC_SETTINGS = (
    Place("max_tokens", ("max_tokens",)),
    Place(
        "reasoning_effort",
        ("output_config", "effort"),
        values=("low", "medium", "high", "xhigh"),
    ),
    Place("stop", ("stop_sequences",)),
    Place("thinking_budget", ("thinking",), _anthropic_thinking, keys_cache=True),
    Place("parallel_tool_calls", ("tool_choice",), _anthropic_tool_choice, keys_cache=True),
)
# OpenAI, "Responses > Create a model response": temperature, top_p, max_output_tokens,
# reasoning.effort, parallel_tool_calls; the Responses API has no stop and no seed.
RESPONSES_SETTINGS = (
    Place("temperature", ("temperature",)),
    Place("top_p", ("top_p",)),
    Place("max_tokens", ("max_output_tokens",)),
    Place("reasoning_effort", ("reasoning", "effort")),
    Place("parallel_tool_calls", ("parallel_tool_calls",)),
)
# OpenAI, "Chat Completions > Create chat completion": temperature, top_p,
# max_completion_tokens (max_tokens is deprecated there), stop, seed, reasoning_effort,
# parallel_tool_calls; no thinking budget.
CHAT_SETTINGS = (
    Place("temperature", ("temperature",)),
    Place("top_p", ("top_p",)),
    Place("max_tokens", ("max_completion_tokens",)),
    Place("stop", ("stop",)),
    Place("seed", ("seed",)),
    Place("reasoning_effort", ("reasoning_effort",)),
    Place("parallel_tool_calls", ("parallel_tool_calls",)),
)
# DeepSeek, "API Reference > Create Chat Completion": temperature, top_p, max_tokens,
# stop; it documents no seed, no reasoning effort and no parallel_tool_calls.
DEEPSEEK_SETTINGS = (
    Place("temperature", ("temperature",)),
    Place("top_p", ("top_p",)),
    Place("max_tokens", ("max_tokens",)),
    Place("stop", ("stop",)),
)
# OpenAI-compatible servers (vLLM, SGLang, llama.cpp server, Ollama) take OpenAI's Chat
# Completions names with `max_tokens`, the one every such server reads (vLLM "OpenAI-
# Compatible Server > Chat API", llama.cpp server "POST /v1/chat/completions").
COMPATIBLE_SETTINGS = (
    *(p for p in CHAT_SETTINGS if p.setting != "max_tokens"),
    Place("max_tokens", ("max_tokens",)),
)
# Gemini, "GenerationConfig" (google-genai `GenerateContentConfig`): temperature, top_p,
# max_output_tokens, stop_sequences, seed, thinking_config.thinking_budget; Gemini has no
# parallel tool call switch, and thinking_level (Gemini 3) is no effort of OpenAI's scale.
GEMINI_SETTINGS = (
    Place("temperature", ("config", "temperature")),
    Place("top_p", ("config", "top_p")),
    Place("max_tokens", ("config", "max_output_tokens")),
    Place("stop", ("config", "stop_sequences")),
    Place("seed", ("config", "seed")),
    Place("thinking_budget", ("config", "thinking_config", "thinking_budget")),
)
# The embedded model (llama-cpp-python's `Llama.generate` and its sampler): each setting
# goes to the sampler through the prompt (`TemplatePrompt.sampling`), never into its
# tokens (providers/local_sampling.py). It has no reasoning and calls one tool a step.
LOCAL_SETTINGS = tuple(
    Place(name, (name,)) for name in ("temperature", "top_p", "max_tokens", "stop", "seed")
)
SCRIPTED_SETTINGS = (*CHAT_SETTINGS, Place("thinking_budget", ("thinking_budget",)))
"""A scripted model takes every setting into its Chat Completions payload, for tests."""


_COMPATIBLE = "warmloop.providers.openai_compatible"
_OPTIONS = "warmloop.providers.options"
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
        options=f"{_OPTIONS}:LocalOptions",
        settings=LOCAL_SETTINGS,
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
        options=f"{_OPTIONS}:AnthropicOptions",
        settings=ANTHROPIC_SETTINGS,
        hosts=("api.anthropic.com",),
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
        options=f"{_OPTIONS}:OpenAIOptions",
        settings=RESPONSES_SETTINGS,
        hosts=("api.openai.com",),
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
        options=f"{_OPTIONS}:OpenAIChatOptions",
        settings=CHAT_SETTINGS,
        hosts=("api.openai.com",),
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
        options=f"{_OPTIONS}:GeminiOptions",
        settings=GEMINI_SETTINGS,
        hosts=("generativelanguage.googleapis.com",),
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
        options=f"{_OPTIONS}:ChatOptions",
        settings=DEEPSEEK_SETTINGS,
        hosts=("api.deepseek.com",),
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
        options=f"{_OPTIONS}:ChatOptions",
        settings=CHAT_SETTINGS,
        hosts=("api.x.ai",),
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
        options=f"{_OPTIONS}:OpenAICompatibleOptions",
        settings=COMPATIBLE_SETTINGS,
        priced=False,
    ),
    ProviderRecord(
        "scripted",
        "warmloop.providers.scripted:ScriptedModel",
        CHAT.name,
        needs_name=None,
        priced=False,
        listed=False,
        settings=SCRIPTED_SETTINGS,
    ),
)
"""In the order the selection error lists them."""
