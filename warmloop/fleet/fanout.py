"""Cache-aware fan-out (`Fleet.submit_batch(warm=True)`, the default): tasks of one agent share
their opening (tools, instructions), so the first task of each agent goes alone and the rest
are enqueued once the leader's stored usage shows the opening in the provider's cache, by the
fan-out rule an agent's children follow too (`keepalive.leader_first`).

Where the model prepares its cache without generating (OpenAI's `prewarm`, GPT-5.6 and
later on Responses), the warm-up is no task at all: a worker sends the first request of the
agent's first task marked `prewarm` (`warmup`), and once its usage shows the write every
task goes at once.

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

from dataclasses import fields

from warmloop.facts.usage import Usage, count

ROUTING_KEYS = 16
"""How many routing keys a warm batch's tasks of one agent share: the tasks a fleet runs at
once by default (4 workers of 4), so each key carries about one task's requests (a request
every few seconds, under OpenAI's ~15 a minute)."""


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
