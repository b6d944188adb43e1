"""How the provider's verdict stands against the audit's reading of a request, in words for
the terminal and the HTML page alike."""

from __future__ import annotations

from warmloop.audit.analysis import Finding
from warmloop.wire.miss_kinds import PROVIDER_LOST
from warmloop.wire.verdict import UNCHANGED


def worth_showing(finding: Finding) -> bool:
    """A request to explain: a bust or explained miss, or a provider verdict that says
    more than "no divergence" (a change, a loss, a pending comparison). A "no divergence"
    that disagrees with the audit is shown too: the audit saw a bust there."""
    verdict = finding.verdict
    said = verdict is not None and verdict.kind != UNCHANGED
    return finding.cause_kind is not None or said


def verdict_note(finding: Finding) -> tuple[str, str] | None:
    """How the provider's verdict stands to the audit's reading, and its style."""
    verdict = finding.verdict
    if verdict is None:
        return None
    if finding.cause_kind == PROVIDER_LOST:
        return "the provider's loss: charged to it, not counted as a client bust", "magenta"
    if verdict.provider_loss:
        return "the provider lost its record; the audit's own reading stands", "magenta"
    if finding.agrees is True:
        return "agrees with the audit", "green"
    if finding.agrees is False:
        return "disagrees with the audit's reading: both are shown", "red"
    return None


def state(finding: Finding) -> str:
    """One word for the page's styling: loss, agree, disagree or none."""
    if finding.verdict is not None and finding.verdict.provider_loss:
        return "loss"
    if finding.agrees is None:
        return "none"
    return "agree" if finding.agrees else "disagree"
