"""The planner: before each request, whether to rewrite the conversation, and how.

Pure: it sees only what a live agent knows (the next prompt's estimated size, the context
window when it is a fact, the idle time, the requests likely still to come (`horizon`),
the prune on offer and the cache's prices) and decides from the cost model:

- over the compaction trigger (default 0.8 of the window), a hard ceiling: prune; the
  caller folds when pruning alone does not clear it;
- idle past `cold_after`: the provider's cache is gone, so a prune costs nothing extra and
  shrinks the full-price request: prune;
- warm: a prune rewrites everything after the first changed message, paying the write (or
  uncached) price instead of the read price for it once; it saves reading the dropped
  tokens on every later request. Prune when the read cost already paid on prunable
  content since the last rewrite has reached that one-off cost (the rent-or-buy rule that
  batches prunes at the economic order size) and the saving over the requests left
  still exceeds it. A drop that came at once (a wide step's 60 results leaving the
  protected tail together) is priced as if it had built up at the run's pace
  (`batched_cost`): waiting on it only pays its reads, so it is pruned on the request it
  is on offer, not 4 to 5 requests later once its excess caught up (issue 48: the wide
  step's first run 0.736 to 0.713 of maintenance off, 0.797 to 0.762 with its files
  0.7x, and every run of it cut short below maintenance off). Otherwise a warm session
  is left alone.

A self-hosted engine (the profile's mode `engine`) bills no read, but a held token is not
free there: every token a request adds attends to it (`held_price`). The planner prices it
at `ATTENTION_SHARE` of a token's own cost per token the run's requests add, so a session
whose requests each add thousands of tokens prunes there as it would on a hosted provider,
and one whose requests add little is left alone; a host that bills like a hosted provider
but was not told so (no `cache_rules`) is planned nearly as it would be with them.

An unknown window (`Situation.window` None: only assumed) is never acted on: no trigger; a
provider's rejection of a prompt as too long is then the maintenance point, and it names
the window. A warm prune that pays is made whatever the window: it rests on the cache's
prices and the run's horizon, never on the window, and waiting for a rejection to name
the window carried the dropped tokens on every request until then (a 70-request session
at a host that publishes no window cost 1.08-1.36x the offline optimum under a +-30% sweep
of its reads and window, against 1.04x where the window was published: issue 48).

Costs are in base-input tokens (multiples of the uncached input price).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from warmloop.facts.profiles import CacheProfile
from warmloop.maintenance.prune import PrunePolicy

Action = Literal["none", "prune", "fold"]
Reason = Literal["", "trigger", "cold", "pays", "overflow", "pause"]


@dataclass(frozen=True)
class MaintenancePolicy:
    """When and how the conversation may be rewritten."""

    trigger: float = 0.8
    prune: PrunePolicy = field(default_factory=PrunePolicy)
    fold: bool = True
    max_futile_folds: int = 2
    """Automatic folding pauses after this many folds in a row that left the prompt over
    the trigger."""
    cold_after: float | None = None
    """Override the profile's idle time after which the cache is gone (seconds)."""


@dataclass(frozen=True)
class Situation:
    """What the planner knows before a request."""

    prompt_tokens: int
    window: int | None
    """Prompt tokens that fit; None when the window is only assumed."""
    idle: float | None
    remaining: int
    """Requests likely still to come, this one included (`horizon.requests_ahead`)."""
    dropped_tokens: int
    rewrite_tokens: int
    """Tokens from the first message a prune changes to the end, after the prune: the part
    the next request must write (or send uncached) again."""
    excess: float
    """Read cost (base-input tokens) paid since the last rewrite on content a prune would
    have removed."""
    new_tokens: float = 0.0
    """Tokens each request of this run adds to the prompt, on average (an engine's read
    price, `held_price`)."""
    growth: float = 0.0
    """Tokens a request of this run adds to the prompt at its usual pace (the mean, its
    largest addition aside): how fast prunable content builds up (`batched_cost`); 0:
    unknown, and only the excess paid counts."""


@dataclass(frozen=True)
class Decision:
    """What to do now, why, and the planner's prediction in base-input tokens."""

    action: Action
    reason: Reason = ""
    predicted_cost: float = 0.0
    predicted_saving: float = 0.0


ATTENTION_SHARE = 2.5e-5
"""An engine's cost of one new token attending to one held token, as a share of the new
token's own cost: about 2 x model width x layers / parameters (3.3e-5 for an 8B Llama,
4,096 x 32; 1.9e-5 for a 70B, 8,192 x 80)."""


def held_price(profile: CacheProfile, new_tokens: float) -> float:
    """The price of one token held in the prompt for one more request, in base-input
    tokens: the profile's read price; on an engine, which bills none, the attention every
    one of the request's `new_tokens` pays over it (never above a full token's price)."""
    if profile.mode != "engine":
        return profile.read_multiplier
    return min(1.0, max(profile.read_multiplier, ATTENTION_SHARE * new_tokens))


def rewrite_price(profile: CacheProfile) -> float:
    """The price of a token the next request must send again after a rewrite: a cache
    write where writes are billed, else uncached input."""
    return profile.retention.write_multiplier if profile.writes_billed else 1.0


def batched_cost(situation: Situation, read: float) -> float:
    """The read cost a warm prune's one-off cost is set against (rent-or-buy): the excess
    paid on what it drops since the last rewrite, or, if more, `read * D^2 / (2 * growth)`,
    what a drop of D tokens would have paid had it built up at the run's pace. On a steady
    trickle (D = growth * n, n requests in) the excess is the larger, read * growth *
    n(n+1)/2 against read * growth * n^2/2, so batches are sized as before: at the economic
    batch size, where the drop's read cost a request reaches the trickle's average cost a
    request (sqrt(2 * cost * read * growth)). A drop that came at
    once is past that point on arrival: each request waited pays its reads and buys
    nothing, so it is pruned as soon as the saving over the horizon pays (`decide`)."""
    s = situation
    if s.growth <= 0:
        return s.excess
    return max(s.excess, read * s.dropped_tokens**2 / (2 * s.growth))


def decide(situation: Situation, profile: CacheProfile, policy: MaintenancePolicy) -> Decision:
    """Prune, fold or leave alone, from the cost model (see the module docstring)."""
    s = situation
    read = held_price(profile, s.new_tokens)
    saving = read * s.dropped_tokens * s.remaining
    over = s.window is not None and s.prompt_tokens >= policy.trigger * s.window
    cold_after = policy.cold_after if policy.cold_after is not None else profile.cold_after
    if s.idle is not None and s.idle > cold_after:
        # The next request misses whole anyway: rewriting adds nothing to it.
        if s.dropped_tokens > 0:
            return Decision("prune", "cold", 0.0, saving)
        return Decision("fold", "trigger") if over and policy.fold else Decision("none")
    cost = (rewrite_price(profile) - read) * s.rewrite_tokens
    if over:
        if s.dropped_tokens > 0:
            return Decision("prune", "trigger", cost, saving)
        return Decision("fold", "trigger") if policy.fold else Decision("none")
    if s.dropped_tokens > 0 and batched_cost(s, read) >= cost and saving > cost:
        return Decision("prune", "pays", cost, saving)
    return Decision("none")
