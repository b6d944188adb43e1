"""The provider's own verdict on a request's cache reuse, and whether it agrees with ours.

Providers that document cache diagnostics compare a request with an earlier response of the
caller's choosing and say why the prefix could not be reused, each in its own words (each
wire format's record reads them: `WireFormat.read_verdict`, in the provider's folder).

A verdict's `kind` puts every provider's vocabulary on one scale with the guard's own
reading of the same request (`reading`): which part of the request moved. `agreement` says
whether the two readings agree, or None where the provider gives no opinion on the
request's content.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNCHANGED = "unchanged"
MODEL = "model"
PARAMETERS = "parameters"
TOOLS = "tools"
SYSTEM = "system"
MESSAGES = "messages"
PROMPT = "prompt"
"""The instructions or the input, where a provider does not tell them apart."""
ROUTING = "routing"
LOST = "lost"
"""The provider holds no record of the earlier response: its loss, never the client's."""
UNAVAILABLE = "unavailable"
PENDING = "pending"
NO_OPINION = frozenset({LOST, UNAVAILABLE, PENDING})

_AGREES_WITH = {
    UNCHANGED: {UNCHANGED},
    MODEL: {MODEL, PARAMETERS},  # a model change may cover a parameter (Anthropic's `speed`)
    PARAMETERS: {PARAMETERS},
    TOOLS: {TOOLS},
    SYSTEM: {SYSTEM},
    MESSAGES: {MESSAGES},
    PROMPT: {SYSTEM, MESSAGES},
    ROUTING: set(),  # the guard never compares routing keys: always shown, never agreed
}


@dataclass(frozen=True)
class ProviderVerdict:
    """What a provider said about one request's reuse of an earlier one's prefix.

    `reason` is the provider's own word; `kind` the same on the guard's scale;
    `missed_tokens` the provider's estimate of what was not reused (None when it gave
    none); `compared_with` the earlier response's id when the request named it; `speaker`
    the provider's name for people (the prefix when its reader gave none)."""

    provider: str
    reason: str
    kind: str
    missed_tokens: int | None = None
    compared_with: str | None = None
    speaker: str = field(default="", compare=False)

    @property
    def provider_loss(self) -> bool:
        """The provider lost its record of the earlier request: no client-side change
        caused this, and none can be blamed for it."""
        return self.kind == LOST

    def describe(self) -> str:
        """One line in the provider's words, for people."""
        name = self.speaker or self.provider
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


def missed_count(value: object) -> int | None:
    """A diagnostics object's count of missed tokens, or None when it is not a count."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


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
