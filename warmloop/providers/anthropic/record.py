"""Anthropic's record: the Messages wire format and the `anthropic:` provider, registered
through the same calls a third party makes (docs/adding-a-provider.md).

The answer's least size is `max_tokens` 1, and above `thinking.budget_tokens` when thinking
is on (the API requires it; the thinking settings are part of the cache key, so they stay).
"""

from __future__ import annotations

from warmloop.messages import JsonValue
from warmloop.providers.anthropic import readers
from warmloop.providers.anthropic.cache import placed_for_client, with_ttl
from warmloop.providers.model_settings import Place
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.providers.registry import register_provider, register_wire_format
from warmloop.wire.stream import ROUTING_KEYS, WireLayout

LAYOUT = WireLayout(
    "anthropic", ("messages",), ("tools",), ("system",), routing=ROUTING_KEYS | {"container"}
)
"""`container` names the code-execution container a request runs in, not what it reads from
the cache: recorded traffic reads 97% of the prompt from cache across a changed container,
so a change there is not a bust (issue 19). `tool_choice` and thinking settings are."""

FORMAT = WireFormat(
    LAYOUT.name,
    LAYOUT,
    provider="anthropic",
    answer=("max_tokens",),
    thinking_budget=("thinking", "budget_tokens"),
    explicit_breakpoints=True,
    per_request_ttls="any",
    write_ttl=with_ttl,
    endpoint=r"/messages$",
    diagnostics_host="api.anthropic.com",
    diagnostics_field=("diagnostics", "previous_message_id"),
    diagnostics_beta=readers.BETA,
    beta_header="anthropic-beta",
    asks_without_baseline=True,
    silence_is_unchanged=True,
    read_usage=readers.read_usage,
    detect=readers.detect,
    claims_usage=readers.claims_usage,
    read_verdict=readers.read_verdict,
    pieces=readers.lookback_pieces,
    written_ttl=readers.written_ttl,
    server_tools=readers.server_tools,
    place_breakpoints=placed_for_client,
    normal_form=readers.normal_form,
)


def _thinking(budget: int) -> JsonValue:
    return {"type": "disabled"} if budget == 0 else {"type": "enabled", "budget_tokens": budget}


def _tool_choice(parallel: bool) -> JsonValue:
    return {"type": "auto", "disable_parallel_tool_use": not parallel}


# "Messages > Create a Message" (anthropic 2.14's `messages.create`): max_tokens,
# stop_sequences, output_config.effort (low, medium, high, xhigh), thinking ({"type":
# "enabled", "budget_tokens": N} or {"type": "disabled"}) and
# tool_choice.disable_parallel_tool_use; no temperature, top_p or seed any more. Thinking
# and tool choice are part of its cache key ("Prompt caching > What invalidates the cache").
SETTINGS = (
    Place("max_tokens", ("max_tokens",)),
    Place(
        "reasoning_effort",
        ("output_config", "effort"),
        values=("low", "medium", "high", "xhigh"),
    ),
    Place("stop", ("stop_sequences",)),
    Place("thinking_budget", ("thinking",), _thinking, keys_cache=True),
    Place("parallel_tool_calls", ("tool_choice",), _tool_choice, keys_cache=True),
)

RECORD = ProviderRecord(
    "anthropic",
    "warmloop.providers.anthropic.model:AnthropicModel",
    LAYOUT.name,
    extra="anthropic",
    key_variables=("ANTHROPIC_API_KEY",),
    client="anthropic:AsyncAnthropic",
    errors="warmloop.providers.anthropic.model:ERRORS",
    display_name="Anthropic",
    families=("claude",),
    example="anthropic:claude-sonnet-4-5",
    options="warmloop.providers.anthropic.options:AnthropicOptions",
    settings=SETTINGS,
    hosts=("api.anthropic.com",),
    audit_reference="anthropic:claude-sonnet-4-6",
)

register_wire_format(FORMAT)
register_provider(RECORD)
