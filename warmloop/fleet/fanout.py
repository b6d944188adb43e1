"""Cache-aware fan-out (`Fleet.submit_batch(warm=True)`, the default): tasks of one agent share
their opening (tools, instructions). Sent at once, every first request misses and writes it;
so the first task of each agent goes alone, and the rest are enqueued once the leader's
stored usage shows the opening in the provider's cache (`written`): a write where the
provider reports one (Anthropic's `cache_creation_input_tokens`, Messages API usage;
OpenAI's `cache_write_tokens` on GPT-5.6 and later), else a read on one of the leader's
later requests (OpenAI's `cached_tokens`, the prompt tokens that were a cache hit, which is
all older OpenAI models report: the prompt caching guide, "Monitoring usage details").

Where the model prepares its cache without generating (OpenAI's `prewarm`, GPT-5.6 and
later on Responses), the warm-up is no task at all: a worker sends the first request of the
agent's first task marked `prewarm` (`warmup`), and once its usage shows the write every
task goes at once.

A leader whose usage never shows it (a prompt below the model's cacheable minimum, a host
that reports no cache figures, a one-request task on a provider that reports reads only)
releases its followers anyway, with a warning (`on_unconfirmed`), once it finishes or
CONFIRM_SECONDS after its first stored response. It is not written again: the submitter
holds no model (agents live on the workers), and a second write would show the same
usage for the same reason while costing the whole opening again.

Where followers are served: OpenAI routes a request on its prompt's first tokens with its
`prompt_cache_key` to one machine, and past about 15 requests a minute for one key and
prefix sends some to other machines (the prompt caching guide, "How it works"). One key for
the whole batch sends the followers where the leader wrote, but a fleet sends far more than
15 a minute on it, so most spill onto machines holding neither the opening nor the task's
own history; a key per task (its session) never spills, but lands each task where the
leader never wrote. So a warm batch's new tasks of an agent share ROUTING_KEYS keys, round
robin (`batch_key`), the leader's first: about one task at a time on each key, under the
spill, each key's machine missing the opening once. `python -m benchmarks fleet_fanout`
measures the three.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from warmloop.facts.usage import Usage, count

ROUTING_KEYS = 16
"""How many routing keys a warm batch's tasks of one agent share: the tasks a fleet runs at
once by default (4 workers of 4), so each key carries about one task's requests (a request
every few seconds, under OpenAI's ~15 a minute)."""
CONFIRM_SECONDS = 60.0
"""How long after a leader's first stored response the batch waits for a usage that shows
its opening cached (a provider that reports reads only shows it on the leader's second
request, after its first tools ran) before releasing the followers unconfirmed."""


@dataclass(frozen=True)
class Warmed:
    """How a batch's leader ended its wait: whether its usage showed the opening cached,
    its stored requests, and why not when it did not."""

    confirmed: bool
    requests: int
    why: str = ""


def written(usage: Usage) -> bool:
    """Whether a leader's usage shows its opening in the provider's cache: a write, or a
    read (which only an entry that was written can give)."""
    return usage.cache_write_tokens > 0 or usage.cache_read_tokens > 0


def unconfirmed(requests: int, waited: float | None = None) -> str:
    """Why the followers went without a confirmed write (the warning's text)."""
    after = (
        f"within {waited:.0f} s of its first response" if waited is not None else "before it ended"
    )
    return (
        f"its {requests} stored request(s) showed no cache write or read {after}: the opening "
        "may be below the model's cacheable minimum, or the host reports no cache figures; "
        "the other tasks went anyway and may each write it"
    )


def batch_key(batch: str, agent: str, n: int) -> str:
    """The `n`th routing key a warm batch's tasks of `agent` share."""
    return f"{batch}-{n}-{agent}"[:64]


def usage_from_json(data: object) -> Usage:
    """A usage a worker stored as JSON (its fields by name, each read as `Usage` reads a
    count; anything else ignored)."""
    if not isinstance(data, dict):
        return Usage()
    known = {f.name for f in fields(Usage)}
    return Usage(**{k: count(v) for k, v in data.items() if k in known})
