"""The fan-out rule, one for a fleet's batch and for an agent's children in one process:
tasks that share an opening (tools, instructions) sent at once all miss and each writes
it, so the first goes alone and the others are released once the leader's usage shows the
opening in the provider's cache (`written`): a write where the provider reports one
(Anthropic's `cache_creation_input_tokens`; OpenAI's `cache_write_tokens` on GPT-5.6 and
later), else a read on one of the leader's later requests (OpenAI's `cached_tokens`, the
prompt tokens that were a cache hit, which is all older OpenAI models report: the prompt
caching guide, "Monitoring usage details").

A leader whose usage never shows it (a prompt below the model's cacheable minimum, a host
that reports no cache figures, a one-request task on a provider that reports reads only)
releases the others anyway, with a warning (`unconfirmed`), once it finishes or
CONFIRM_SECONDS after its first response. It is not written again: a second write would
show the same usage for the same reason while costing the whole opening again.

`released` is the rule itself, over what the leader showed so far; the fleet's submitter
(`fleet.client`) reads the leader's stored usage, an agent's fan-out (`agent.delegation`)
the leader's requests as they are answered.
"""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.facts.usage import Usage

CONFIRM_SECONDS = 60.0
"""How long after a leader's first response the others wait for a usage that shows its
opening cached (a provider that reports reads only shows it on the leader's second
request, after its first tools ran) before they go unconfirmed."""


@dataclass(frozen=True)
class Warmed:
    """How a leader ended the others' wait: whether its usage showed the opening cached,
    its requests, and why not when it did not."""

    confirmed: bool
    requests: int
    why: str = ""


def written(usage: Usage) -> bool:
    """Whether a leader's usage shows its opening in the provider's cache: a write, or a
    read (which only an entry that was written can give)."""
    return usage.cache_write_tokens > 0 or usage.cache_read_tokens > 0


def unconfirmed(requests: int, waited: float | None = None) -> str:
    """Why the others went without a confirmed write (the warning's text)."""
    after = (
        f"within {waited:.0f} s of its first response" if waited is not None else "before it ended"
    )
    return (
        f"its {requests} request(s) showed no cache write or read {after}: the opening "
        "may be below the model's cacheable minimum, or the host reports no cache figures; "
        "the others went anyway and may each write it"
    )


def released(usage: Usage, requests: int, *, finished: bool, waited: float | None) -> Warmed | None:
    """The others' release after what the leader showed: `usage` summed over its
    `requests` answered so far, whether it `finished`, and the seconds since its first
    response (`waited`; None before one). None: keep waiting. A leader that finished
    without a request is released unconfirmed with no reason (the caller knows why)."""
    if requests and written(usage):
        return Warmed(True, requests)
    if requests and finished:
        return Warmed(False, requests, unconfirmed(requests))
    if requests and waited is not None and waited >= CONFIRM_SECONDS:
        return Warmed(False, requests, unconfirmed(requests, CONFIRM_SECONDS))
    if finished:
        return Warmed(False, 0)
    return None
