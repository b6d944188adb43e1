"""Which wire format a logged or live request is in, its model, its routing key, its cache
profile, the TTL it writes for.

The format comes from the endpoint path when there is one (each registered wire format's
`endpoint`: `/v1/messages`, `/chat/completions`, `/responses`, `:generateContent`), else
from the body's shape, as each format's record claims it (`WireFormat.detect`: the most
specific claim wins). Each format's logged layout (`logged_layout`) is read with the keys
that never reach the prompt (streaming switches, output budgets, sampling, Anthropic's
`diagnostics`, OpenAI's `prompt_cache_options.comparison_response_id`, client metadata
such as Codex's `client_metadata`) added to the keys the canonical stream leaves out, so
switching them is not reported as a bust.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache

from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import CacheProfile, profile_for
from warmloop.providers.records import Claim, WireFormat
from warmloop.providers.registry import providers, wire_formats
from warmloop.wire.pieces import Pieces
from warmloop.wire.stream import WireLayout, WireStream, canonical_stream

NOT_IN_PROMPT = frozenset(
    {
        "stream",
        "stream_options",
        "diagnostics",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "temperature",
        "top_p",
        "top_k",
        "n",
        "seed",
        "stop",
        "stop_sequences",
        "store",
        "service_tier",
        "background",
        "include",
        "prompt_cache_retention",
        "logprobs",
        "top_logprobs",
        "client_metadata",
    }
)
"""Request keys that choose how a reply is sampled or delivered, not what the prompt is,
and client metadata the model never reads (Codex's `client_metadata`, whose `turn_id`
changes every turn; Anthropic's `metadata` is a routing key already)."""


@cache
def logged_layout(wire: WireFormat) -> WireLayout:
    """How the audit reads a logged body of this format: its HTTP layout, with the keys
    that are no part of the prompt added to the ones the canonical stream leaves out."""
    layout = wire.logged_layout or wire.layout
    return replace(
        layout,
        routing=layout.routing | NOT_IN_PROMPT,
        unprompted=(*layout.unprompted, *wire.logged_unprompted),
    )


def as_read(body: Mapping[str, object], wire: WireFormat) -> Mapping[str, object]:
    """`body` as the model reads it, each part in one form (`WireFormat.normal_form`), so
    two forms a client sends of one prompt (a Messages content of one text block and the
    string it stands for) compare equal wherever a logged or live request is read."""
    return wire.normal_form(body) if wire.normal_form is not None else body


def read_stream(body: Mapping[str, object], wire: WireFormat) -> WireStream:
    """A logged or live body's canonical stream, as the model reads it (`as_read`) and with
    the keys that are no part of the prompt left out (`logged_layout`)."""
    return canonical_stream(as_read(body, wire), logged_layout(wire))


def format_from_path(path: str) -> WireFormat | None:
    """The format an endpoint path speaks, or None for paths that are not model requests."""
    path = path.split("?", 1)[0].rstrip("/")
    return next((fmt for fmt in wire_formats() if fmt.endpoint_match(path)), None)


def claimed_by(
    value: Mapping[str, object], claim: Callable[[WireFormat], Claim | None]
) -> WireFormat:
    """The registered format whose claim on `value` is highest (the first registered of
    equal claims); a ConfigurationError when none claims it."""
    best: tuple[int, WireFormat] | None = None
    for fmt in wire_formats():
        reader = claim(fmt)
        score = reader(value) if reader is not None else -1
        if score >= 0 and (best is None or score > best[0]):
            best = (score, fmt)
    if best is None:
        raise ConfigurationError("no registered wire format claims this request's shape")
    return best[1]


def detect_format(body: Mapping[str, object], path: str = "") -> WireFormat:
    """The wire format of a request body (the path decides when it names an endpoint).
    Without such a path the format is truly unknown and is guessed from the body's shape,
    as the formats' records claim it: the guess is this function's alone, and only such a
    request's usage is read by its keys (`response_facts.normalise_usage`)."""
    found = format_from_path(path) if path else None
    if found is not None:
        return found
    return claimed_by(body, lambda fmt: fmt.detect)


def model_name(body: Mapping[str, object], path: str = "") -> str:
    """The model a request asked for: the body's `model`, else the one in a Gemini path."""
    model = body.get("model")
    if isinstance(model, str) and model:
        return model.removeprefix("models/")
    path = path.split("?", 1)[0].rstrip("/")
    for fmt in wire_formats():
        found = fmt.endpoint_match(path)
        if found is not None and found.groups() and found.group(1):
            return found.group(1)
    return ""


def model_spec(wire: WireFormat, model: str) -> str:
    """A selection string (`anthropic:claude-sonnet-4-6`) for the model's provider; a model
    served on another provider's wire format (DeepSeek over Chat Completions) keeps its own."""
    lowered = model.lower()
    provider = next(
        (p.prefix for p in providers() if any(map(lowered.startswith, p.families))),
        wire.provider,
    )
    return f"{provider}:{model}" if model else f"{provider}:"


def own_profile(wire: WireFormat, model: str) -> CacheProfile:
    """The cache profile of the model a log used (the provider's defaults when unknown)."""
    try:
        return profile_for(model_spec(wire, model))
    except ConfigurationError:
        return profile_for(f"{wire.provider}:")


def routing_key(body: Mapping[str, object]) -> str | None:
    """The key a client used to keep a conversation together (`prompt_cache_key`,
    Anthropic's `metadata.user_id`, OpenAI's `user`), or None."""
    for key in ("prompt_cache_key", "user", "safety_identifier"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return f"{key}={value}"
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("user_id"), str):
        return f"metadata.user_id={metadata['user_id']}"
    return None


def written_ttl(wire: WireFormat, body: Mapping[str, object], found: Pieces) -> str | None:
    """The TTL a logged request writes for, as its format reads it (its markers', or its
    retention field's); None: the model's default."""
    return wire.written_ttl(body, found) if wire.written_ttl is not None else None
