"""OpenAI's records: the Chat Completions and Responses wire formats, and the providers that
speak them (`openai:` on Responses; `openai-chat:`, `deepseek:`, `xai:` and
`openai-compatible:` on Chat Completions), registered through the same calls a third party
makes (docs/adding-a-provider.md).

Answer minimums: Chat Completions `max_completion_tokens` 1; Responses `max_output_tokens`
16 (the API's floor).
"""

from __future__ import annotations

from warmloop.providers.model_settings import Place
from warmloop.providers.openai import readers
from warmloop.providers.openai.cache import TTLS, opening_breakpoint, with_prewarm, with_ttl
from warmloop.providers.records import ProviderRecord, RoutingKey, WireFormat
from warmloop.providers.registry import register_provider, register_wire_format
from warmloop.wire.stream import WireLayout

CACHE_KEY_FIELD = "prompt_cache_key"
"""OpenAI's routing key field ("Prompt caching > prompt_cache_key")."""
SESSION_HEADER = "X-Session-ID"
"""The header a self-hosted router hashes first (vLLM's router), where a conversation's key
travels to an OpenAI-compatible server."""
XAI_HEADER = "x-grok-conv-id"
"""xAI's conversation header ("Prompt caching > Maximizing cache hits")."""

CHAT = WireLayout(
    "openai-chat", ("messages",), ("tools",), system_roles=frozenset({"system", "developer"})
)
RESPONSES = WireLayout(
    "openai-responses",
    ("input",),
    ("tools",),
    ("instructions",),
    unprompted=(("prompt_cache_options", "ttl"), ("prompt_cache_options", "prewarm")),
)
"""`prompt_cache_options.ttl` is "the minimum lifetime applied to every implicit and
explicit cache breakpoint written by the request" (the official SDK's API reference,
`ResponseCreateParams.PromptCacheOptions.ttl`): how long what a request writes lives, not
what it reads, so a request written for `12h` after one written for `30m` is the same
prompt (as Anthropic's `cache_control` TTLs are). `prompt_cache_options.prewarm` "prepares
the prompt cache without generating output": whether an answer is generated, not the
prompt."""

COMPARISON: tuple[str, str] = ("prompt_cache_options", "comparison_response_id")
"""OpenAI's cache-diagnostics baseline: which response to compare with, not the prompt."""

CHAT_FORMAT = WireFormat(
    CHAT.name,
    CHAT,
    provider="openai",
    answer=("max_completion_tokens",),
    endpoint=r"/chat/completions$",
    read_usage=readers.chat_usage,
    detect=readers.detect_chat,
    claims_usage=readers.claims_chat_usage,
    written_ttl=readers.written_ttl,
    place_breakpoints=opening_breakpoint("messages", "text"),
    renderer="warmloop.providers.openai.chat_format:ChatRenderer",
)
RESPONSES_FORMAT = WireFormat(
    RESPONSES.name,
    RESPONSES,
    provider="openai",
    answer=("max_output_tokens",),
    least_answer=16,
    per_request_ttls=frozenset(TTLS),
    write_ttl=with_ttl,
    prewarm=with_prewarm,
    endpoint=r"/responses$",
    diagnostics_host="api.openai.com",
    diagnostics_field=COMPARISON,
    logged_unprompted=(COMPARISON,),
    read_usage=readers.responses_usage,
    detect=readers.detect_responses,
    claims_usage=readers.claims_responses_usage,
    read_verdict=readers.read_verdict,
    written_ttl=readers.written_ttl,
    server_tools=readers.server_tools,
    place_breakpoints=opening_breakpoint("input", "input_text"),
)

# "Responses > Create a model response": temperature, top_p, max_output_tokens,
# reasoning.effort, parallel_tool_calls; the Responses API has no stop and no seed.
RESPONSES_SETTINGS = (
    Place("temperature", ("temperature",)),
    Place("top_p", ("top_p",)),
    Place("max_tokens", ("max_output_tokens",)),
    Place("reasoning_effort", ("reasoning", "effort")),
    Place("parallel_tool_calls", ("parallel_tool_calls",)),
)
# "Chat Completions > Create chat completion": temperature, top_p, max_completion_tokens
# (max_tokens is deprecated there), stop, seed, reasoning_effort, parallel_tool_calls; no
# thinking budget.
CHAT_SETTINGS = (
    Place("temperature", ("temperature",)),
    Place("top_p", ("top_p",)),
    Place("max_tokens", ("max_completion_tokens",)),
    Place("stop", ("stop",)),
    Place("seed", ("seed",)),
    Place("reasoning_effort", ("reasoning_effort",)),
    Place("parallel_tool_calls", ("parallel_tool_calls",)),
)
# DeepSeek, "API Reference > Create Chat Completion": temperature, top_p, max_tokens, stop;
# it documents no seed, no reasoning effort and no parallel_tool_calls.
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

_CHAT_MODELS = "warmloop.providers.openai.chat"
_OPTIONS = "warmloop.providers.openai.options"
_CLIENT = "openai:AsyncOpenAI"
_ERRORS = f"{_CHAT_MODELS}:ERRORS"
_CACHE_KEY = RoutingKey(field=CACHE_KEY_FIELD)

RECORDS = (
    ProviderRecord(
        "openai",
        "warmloop.providers.openai.responses:OpenAIResponsesModel",
        RESPONSES.name,
        key_variables=("OPENAI_API_KEY",),
        client=_CLIENT,
        errors=_ERRORS,
        routing=_CACHE_KEY,
        display_name="OpenAI",
        families=("gpt", "o1", "o3", "o4", "codex"),
        tokenizer="o200k_base",
        example="openai:gpt-5",
        options=f"{_OPTIONS}:OpenAIOptions",
        settings=RESPONSES_SETTINGS,
        hosts=("api.openai.com",),
        audit_reference="openai:gpt-5",
    ),
    ProviderRecord(
        "openai-chat",
        f"{_CHAT_MODELS}:OpenAIChatModel",
        CHAT.name,
        key_variables=("OPENAI_API_KEY",),
        client=_CLIENT,
        errors=_ERRORS,
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
        "deepseek",
        f"{_CHAT_MODELS}:DeepSeekModel",
        CHAT.name,
        key_variables=("DEEPSEEK_API_KEY",),
        client=_CLIENT,
        errors=_ERRORS,
        display_name="DeepSeek",
        families=("deepseek",),
        example="deepseek:deepseek-chat",
        options=f"{_OPTIONS}:ChatOptions",
        settings=DEEPSEEK_SETTINGS,
        hosts=("api.deepseek.com",),
        audit_reference="deepseek:deepseek-flash",
    ),
    ProviderRecord(
        "xai",
        f"{_CHAT_MODELS}:XAIModel",
        CHAT.name,
        key_variables=("XAI_API_KEY",),
        client=_CLIENT,
        errors=_ERRORS,
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
        f"{_CHAT_MODELS}:OpenAICompatibleModel",
        CHAT.name,
        key_variables=("OPENAI_COMPATIBLE_API_KEY",),
        client=_CLIENT,
        errors=_ERRORS,
        routing=RoutingKey(header=SESSION_HEADER),
        example="openai-compatible:http://host:port/v1",
        options=f"{_OPTIONS}:OpenAICompatibleOptions",
        settings=COMPATIBLE_SETTINGS,
    ),
)

register_wire_format(CHAT_FORMAT)
register_wire_format(RESPONSES_FORMAT)
for _record in RECORDS:
    register_provider(_record)
