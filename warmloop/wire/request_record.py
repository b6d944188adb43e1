"""What one model request left behind: its usage, its wall-clock seconds, whether it
extended the request before it (the prefix guard's check), and the provider's own verdict
when the model asked for one (`diagnose=True`). A run keeps one per request, a session
stores them, the CLI shows them. What went out (the payload) is the run's `SentRequest`
(`keepalive.sent`), which holds this record once the answer came."""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.facts.usage import Usage
from warmloop.wire.guard import PrefixCheck
from warmloop.wire.verdict import ProviderVerdict, agreement, reading


@dataclass(frozen=True)
class RequestRecord:
    """One model request: its usage, wall-clock seconds, prefix check and the provider's
    verdict (None unless asked for and given)."""

    usage: Usage
    seconds: float
    prefix: PrefixCheck
    verdict: ProviderVerdict | None = None

    @property
    def agrees(self) -> bool | None:
        """Whether the provider's verdict agrees with the guard's check of this request;
        None when there is nothing to compare."""
        bust = self.prefix.bust
        ours = reading(
            bust.section if bust else None,
            bust.kind if bust else None,
            maintenance=self.prefix.maintenance,
        )
        return agreement(self.verdict, ours)

    def disagreement(self) -> str | None:
        """The provider's verdict against the guard's reading, in words, when they disagree
        (a run reports it and goes on); None otherwise."""
        if self.agrees is not False or self.verdict is None:
            return None
        where = self.prefix.bust.section if self.prefix.bust else "nothing moved"
        return (
            f"the provider's cache verdict ({self.verdict.describe()}) disagrees with the "
            f"prefix guard ({where})"
        )
