"""Gemini's record: its wire format (the google-genai SDK's keyword arguments, and the REST
body a log holds) and the `gemini:` provider, registered through the same calls a third
party makes (docs/adding-a-provider.md). The answer's least size is
`config.max_output_tokens` 1."""

from __future__ import annotations

from warmloop.providers.gemini import readers
from warmloop.providers.model_settings import Place
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.providers.registry import register_provider, register_wire_format
from warmloop.wire.stream import WireLayout

SDK_LAYOUT = WireLayout(
    "gemini", ("contents",), ("config", "tools"), ("config", "system_instruction")
)
"""The keyword arguments warmloop hands to google-genai's `generate_content`."""
HTTP_LAYOUT = WireLayout("gemini-http", ("contents",), ("tools",), ("systemInstruction",))
"""The REST body of `models.generateContent`."""

FORMAT = WireFormat(
    SDK_LAYOUT.name,
    SDK_LAYOUT,
    provider="gemini",
    answer=("config", "max_output_tokens"),
    logged_layout=HTTP_LAYOUT,
    endpoint=r"/models/([^/:]+):(?:stream)?[gG]enerateContent",
    read_usage=readers.read_usage,
    detect=readers.detect,
    claims_usage=readers.claims_usage,
    server_tools=readers.server_tools,
)

# "GenerationConfig" (google-genai `GenerateContentConfig`): temperature, top_p,
# max_output_tokens, stop_sequences, seed, thinking_config.thinking_budget; Gemini has no
# parallel tool call switch, and thinking_level (Gemini 3) is no effort of OpenAI's scale.
SETTINGS = (
    Place("temperature", ("config", "temperature")),
    Place("top_p", ("config", "top_p")),
    Place("max_tokens", ("config", "max_output_tokens")),
    Place("stop", ("config", "stop_sequences")),
    Place("seed", ("config", "seed")),
    Place("thinking_budget", ("config", "thinking_config", "thinking_budget")),
)

RECORD = ProviderRecord(
    "gemini",
    "warmloop.providers.gemini.model:GeminiModel",
    SDK_LAYOUT.name,
    extra="gemini",
    key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    client="google.genai:Client",
    errors="warmloop.providers.gemini.retry:GEMINI_ERRORS",
    telemetry_name="gcp.gemini",
    display_name="Gemini",
    families=("gemini",),
    example="gemini:gemini-2.5-flash",
    options="warmloop.providers.gemini.options:GeminiOptions",
    settings=SETTINGS,
    hosts=("generativelanguage.googleapis.com",),
    audit_reference="gemini:gemini-2.5-flash",
)

register_wire_format(FORMAT)
register_provider(RECORD)
