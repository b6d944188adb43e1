"""Who a request's miss is charged to, once the provider has had its say.

The audit reads each request from the client's side (the wire diff and the cache rules);
a log that holds the provider's own cache diagnostics (`cache.verdict`) adds the provider's
reading. Both are kept and shown side by side, with whether they agree. One verdict moves
the charge: where the prefix held and the miss had no client-side explanation, a provider
that says it lost its record of the earlier request (Anthropic's
`previous_message_not_found`, OpenAI's `comparison_response_not_found`) gets the miss as
`provider-lost`, counted apart from the client's busts. A change the audit proved on the
wire stays the client's, whatever the provider could not compare.
"""

from __future__ import annotations

from warmloop.audit.conversations import Entry
from warmloop.audit.responses import logged_verdict
from warmloop.cache.verdict import ProviderVerdict, agreement, reading

PROVIDER_LOST = "provider-lost"
UNEXPLAINED = "unexplained"


def attribute(
    entry: Entry, index: int, section: str | None, cause: tuple[str, str] | None
) -> tuple[ProviderVerdict | None, bool | None, tuple[str, str] | None]:
    """The provider's verdict on the request at `index` of its conversation, whether it
    agrees with the audit's reading (`section` where the prefix moved, the cause), and the
    cause the miss is charged to."""
    verdict = logged_verdict(entry.record, entry.wire.name)
    if verdict is None:
        return None, None, cause
    # The first request of a conversation has nothing the audit compared it with.
    ours = reading(section, cause[0] if cause else None) if index else None
    agrees = agreement(verdict, ours)
    if verdict.provider_loss and cause is not None and cause[0] == UNEXPLAINED:
        cause = (
            PROVIDER_LOST,
            "the provider lost its cache entry: the prefix matched, and the provider says it "
            f"holds no record of the earlier request ({verdict.reason}); not the client's doing",
        )
    return verdict, agrees, cause
