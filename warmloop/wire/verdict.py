"""The provider's own verdict on a request's cache reuse, and whether it agrees with ours.

Both large providers compare a request with an earlier response of the caller's choosing
and say why the prefix could not be reused:

- Anthropic, "Cache diagnostics"
  (https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics; beta header
  `cache-diagnosis-2026-04-07`, `anthropic` SDK 2.13 `types/diagnostics.py` and
  `types/cache_miss_*.py`): the request carries `diagnostics.previous_message_id` (null
  on a first turn, to opt in); the response's `diagnostics.cache_miss_reason.type` is
  `model_changed`, `system_changed`, `tools_changed`, `messages_changed` (each with
  `cache_missed_input_tokens`), `previous_message_not_found` (the API holds no record of
  that request: "this doesn't mean that this request changed") or `unavailable`; a null
  reason means the comparison was still running; `diagnostics: null` on a request that
  named a previous message means no divergence was found.
- OpenAI, "Prompt cache diagnostics"
  (https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics; Responses
  API, GPT-5.6 and later; `openai` SDK 3.57 `types/responses/response.py`): the request
  carries `prompt_cache_options.comparison_response_id`; the response's
  `prompt_cache_diagnostics.type` is `cache_hit`, `cache_miss` (with `reason`:
  `model_changed`, `prompt_cache_key_changed`, `tools_changed`, `text_format_changed`,
  `reasoning_effort_changed`, `verbosity_changed`, `context_compacted`, `input_changed`,
  `service_tier_changed`; and `cache_missed_tokens`), `comparison_response_not_found` or
  `unavailable`.

A verdict's `kind` puts both vocabularies on one scale with the guard's own reading of the
same request (`reading`): which part of the request moved. `agreement` says whether the two
readings agree, or None where the provider gives no opinion on the request's content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ANTHROPIC_BETA = "cache-diagnosis-2026-04-07"
"""The beta header value Anthropic's cache diagnostics are asked for with."""

UNCHANGED = "unchanged"
MODEL = "model"
PARAMETERS = "parameters"
TOOLS = "tools"
SYSTEM = "system"
MESSAGES = "messages"
PROMPT = "prompt"
"""OpenAI's `input_changed`: the instructions or the input, which OpenAI does not tell apart."""
ROUTING = "routing"
LOST = "lost"
"""The provider holds no record of the earlier response: its loss, never the client's."""
UNAVAILABLE = "unavailable"
PENDING = "pending"
NO_OPINION = frozenset({LOST, UNAVAILABLE, PENDING})

_ANTHROPIC = {
    "model_changed": MODEL,
    "system_changed": SYSTEM,
    "tools_changed": TOOLS,
    "messages_changed": MESSAGES,
    "previous_message_not_found": LOST,
    "unavailable": UNAVAILABLE,
}
_OPENAI_TYPES = {
    "cache_hit": UNCHANGED,
    "comparison_response_not_found": LOST,
    "unavailable": UNAVAILABLE,
}
_OPENAI_REASONS = {
    "model_changed": MODEL,
    "prompt_cache_key_changed": ROUTING,
    "tools_changed": TOOLS,
    "text_format_changed": PARAMETERS,
    "reasoning_effort_changed": PARAMETERS,
    "verbosity_changed": PARAMETERS,
    "service_tier_changed": PARAMETERS,
    "context_compacted": MESSAGES,
    "input_changed": PROMPT,
}
_AGREES_WITH = {
    UNCHANGED: {UNCHANGED},
    MODEL: {MODEL, PARAMETERS},  # Anthropic's model_changed covers `speed` too
    PARAMETERS: {PARAMETERS},
    TOOLS: {TOOLS},
    SYSTEM: {SYSTEM},
    MESSAGES: {MESSAGES},
    PROMPT: {SYSTEM, MESSAGES},
    ROUTING: set(),  # the guard never compares routing keys: always shown, never agreed
}
_SPEAKERS: dict[str, str] = {}


def name_speaker(provider: str, name: str) -> None:
    """Say how a verdict of `provider` names it for people. The provider records fill this
    (`providers.registry`): this layer sits below them and cannot read them."""
    _SPEAKERS[provider] = name


def speaker(provider: str) -> str:
    """The name a verdict of `provider` is given for people (the prefix when unnamed)."""
    return _SPEAKERS.get(provider, provider)


@dataclass(frozen=True)
class ProviderVerdict:
    """What a provider said about one request's reuse of an earlier one's prefix.

    `reason` is the provider's own word; `kind` the same on the guard's scale;
    `missed_tokens` the provider's estimate of what was not reused (None when it gave
    none); `compared_with` the earlier response's id when the request named it."""

    provider: str
    reason: str
    kind: str
    missed_tokens: int | None = None
    compared_with: str | None = None

    @property
    def provider_loss(self) -> bool:
        """The provider lost its record of the earlier request: no client-side change
        caused this, and none can be blamed for it."""
        return self.kind == LOST

    def describe(self) -> str:
        """One line in the provider's words, for people."""
        name = speaker(self.provider)
        if self.kind == PENDING:
            return f"{name}: comparison still pending (check the next request)"
        if self.kind == UNCHANGED:
            return f"{name}: {self.reason} (no divergence from the earlier request)"
        tail = (
            f", about {self.missed_tokens:,} input tokens missed"
            if self.missed_tokens is not None
            else ""
        )
        if self.provider_loss:
            tail += " (the provider lost its record of the earlier request: not the client's doing)"
        return f"{name}: {self.reason}{tail}"


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def anthropic_verdict(
    diagnostics: Mapping[str, Any] | None, *, compared_with: str | None = None
) -> ProviderVerdict | None:
    """Anthropic's `diagnostics` object as a verdict (None when it carries none). A request
    that named a previous message and got `diagnostics: null` back gets `no divergence`:
    pass `diagnostics={}` for it."""
    if diagnostics is None:
        return None
    if not diagnostics:
        return ProviderVerdict("anthropic", "no divergence", UNCHANGED, None, compared_with)
    reason = diagnostics.get("cache_miss_reason")
    if reason is None:
        return ProviderVerdict("anthropic", "pending", PENDING, None, compared_with)
    if not isinstance(reason, Mapping) or not isinstance(reason.get("type"), str):
        return None
    word = reason["type"]
    missed = _count(reason.get("cache_missed_input_tokens"))
    return ProviderVerdict(
        "anthropic", word, _ANTHROPIC.get(word, UNAVAILABLE), missed, compared_with
    )


def openai_verdict(
    diagnostics: Mapping[str, Any] | None, *, compared_with: str | None = None
) -> ProviderVerdict | None:
    """OpenAI's `prompt_cache_diagnostics` object as a verdict (None when absent)."""
    if not diagnostics or not isinstance(diagnostics.get("type"), str):
        return None
    word = diagnostics["type"]
    if word == "cache_miss":
        reason = diagnostics.get("reason")
        reason = reason if isinstance(reason, str) else "unknown"
        missed = _count(diagnostics.get("cache_missed_tokens"))
        kind = _OPENAI_REASONS.get(reason, UNAVAILABLE)
        return ProviderVerdict("openai", reason, kind, missed, compared_with)
    return ProviderVerdict(
        "openai", word, _OPENAI_TYPES.get(word, UNAVAILABLE), None, compared_with
    )


def read_verdict(
    diagnostics: Mapping[str, Any] | None, *, compared_with: str | None = None
) -> ProviderVerdict | None:
    """Either provider's diagnostics object, told apart by its shape."""
    if diagnostics is None:
        return None
    if "cache_miss_reason" in diagnostics or not diagnostics:
        return anthropic_verdict(diagnostics, compared_with=compared_with)
    return openai_verdict(diagnostics, compared_with=compared_with)


def reading(section: str | None, cause_kind: str | None, *, maintenance: bool = False) -> str:
    """The guard's (or the audit's) own reading of a request on the verdicts' scale: the
    section where it stopped extending the earlier one, or `unchanged`."""
    if maintenance:
        return MESSAGES  # a rewrite replaces message content (prune, fold)
    if section is None:
        return UNCHANGED
    if section == "request":
        return MODEL if cause_kind == "model" else PARAMETERS
    if section in (TOOLS, SYSTEM):
        return section
    return MESSAGES


def agreement(verdict: ProviderVerdict | None, ours: str | None) -> bool | None:
    """Whether the provider's verdict and our reading agree; None when either has no
    opinion (no verdict, a pending or unavailable one, a lost record, no reading)."""
    if verdict is None or ours is None or verdict.kind in NO_OPINION:
        return None
    return ours in _AGREES_WITH.get(verdict.kind, set())
