"""The names workers and submitters share, and a queue's limits.

A queue's limits are DBOS's own: how many of its tasks one worker runs at once
(`concurrency`), how many run at once across every worker (`global_concurrency`), and how
many may start per minute (`per_minute`, DBOS's rate limiter), so a batch never sends a
provider more than it allows. Every worker that serves a queue registers it with the same
limits (the newest registration wins).
"""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.errors import ConfigurationError
from warmloop.messages import validate_id

APP_NAME = "warmloop-fleet"
APP_VERSION = "warmloop-fleet-1"
"""Fixed, so tasks enqueued by any submitter run on any worker of this fleet version (DBOS
otherwise derives a version from the workflow code's hash)."""
WORKFLOW = "warmloop.fleet.task"
WARM_UP = "warmloop.fleet.warm_up"
"""A batch's warm-up of one agent's opening as a prewarm (`warmup`), not a task."""
DEFAULT_QUEUE = "warmloop"
POLL_SECONDS = 0.2
"""How often a worker looks for new tasks (DBOS polls its queue table)."""


@dataclass(frozen=True)
class QueueSpec:
    """A named queue and its limits (None: no limit)."""

    name: str = DEFAULT_QUEUE
    concurrency: int | None = 4
    global_concurrency: int | None = None
    per_minute: int | None = None

    def __post_init__(self) -> None:
        validate_id(self.name, "queue name")
        for what, value in (
            ("concurrency", self.concurrency),
            ("global concurrency", self.global_concurrency),
            ("tasks per minute", self.per_minute),
        ):
            wrong = isinstance(value, bool) or not isinstance(value, int) or value < 1
            if value is not None and wrong:
                raise ConfigurationError(
                    f"queue {self.name!r}: {what} must be an integer >= 1, got {value!r}"
                )

    def register(self) -> None:
        """Register this queue with the launched DBOS engine (this worker then serves it)."""
        from dbos import DBOS

        DBOS.register_queue(
            self.name,
            worker_concurrency=self.concurrency,
            global_concurrency=self.global_concurrency,
            limiter=(
                {"limit": self.per_minute, "period": 60.0} if self.per_minute is not None else None
            ),
            polling_interval_sec=POLL_SECONDS,
        )
