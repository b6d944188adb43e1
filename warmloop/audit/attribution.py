"""Who a request's miss is charged to, once the provider has had its say.

The audit reads each request from the client's side (the wire diff and the cache rules);
a log that holds the provider's own cache diagnostics (`wire.verdict`) adds the provider's
reading. Both are kept and shown side by side, with whether they agree. One verdict moves
the charge: where the prefix held and the miss was none of the client's doing (evicted,
routed, unexplained: `wire.miss_kinds`), a provider that says it lost its record of the
earlier request (Anthropic's `previous_message_not_found`, OpenAI's
`comparison_response_not_found`) gets the miss as `provider-lost`, counted apart from the
client's busts. A change the audit proved on the wire stays the client's, whatever the
provider could not compare.
"""

from __future__ import annotations

from warmloop.exchange.grouping import Entry
from warmloop.exchange.response_facts import logged_verdict
from warmloop.wire.miss_kinds import provider_charged
from warmloop.wire.verdict import ProviderVerdict, agreement, reading

UNEXPLAINED = "unexplained"


def attribute(
    entry: Entry, previous: Entry | None, section: str | None, cause: tuple[str, str] | None
) -> tuple[ProviderVerdict | None, bool | None, tuple[str, str] | None]:
    """The provider's verdict on a request, whether it agrees with the audit's reading of it
    against `previous` (the request it continues, its parent in its conversation;
    `section` where the prefix moved, the cause), and the cause the miss is charged to."""
    verdict = logged_verdict(entry.record, entry.wire)
    if verdict is None:
        return None, None, cause
    # Both readings must be of the same pair: none for a conversation's first request, and
    # none where the provider compared with another response than the parent's.
    earlier = previous.record.response_id if previous is not None else None
    other = earlier is not None and verdict.compared_with not in (None, earlier)
    ours = reading(section, cause[0] if cause else None) if previous and not other else None
    agrees = agreement(verdict, ours)
    cause = provider_charged(verdict, cause)
    return verdict, agrees, cause
