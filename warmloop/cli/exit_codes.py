"""The CLI's exit codes, one per kind of failure, so a script can tell a missing key from a
run that failed without reading the message (docs/cli.md has the table): each error the
CLI stops on is a `Failure`, its kind (also `--json`'s `error.kind`) and its code."""

from __future__ import annotations

from dataclasses import dataclass

from warmloop.agent.result import RunError, UsageLimitExceeded
from warmloop.errors import (
    ConfigurationError,
    MissingApiKey,
    MissingExtra,
    ProviderUnavailable,
    RateLimited,
)

RUN_FAILED = 1
"""The run ended without outputs (or another error stopped the command)."""
BAD_USAGE = 2
"""A wrong option, argument or setting (click's own code for a usage error)."""
TASKS_FAILED = 3
"""`batch status`: a task of the batch failed (1 is an error of the command)."""
DEADLINE = 4
"""`batch ... --wait --deadline`: the deadline passed with tasks unfinished."""
NOT_SET_UP = 5
"""No API key for the provider, or a missing extra (the message names the install line)."""
PROVIDER_UNAVAILABLE = 6
"""The provider kept failing, rate-limiting or could not be reached after its retries."""
LIMIT_REACHED = 7
"""The run's next request would have passed a limit (`--max-cost`): it was never sent."""
INTERRUPTED = 130
"""The shell's code for a command ended by Ctrl-C (128 + SIGINT)."""
TERMINATED = 143
"""The shell's code for a command ended by SIGTERM (128 + SIGTERM)."""


@dataclass(frozen=True)
class Failure:
    """What the CLI stops on: its kind (`run_failed`, `usage`, `missing_key`,
    `missing_extra`, `provider_unavailable`, `limit_reached`, `interrupted`,
    `terminated`), its exit code, and the one-line message."""

    kind: str
    code: int
    message: str

    def as_json(self, error: BaseException | None = None) -> dict[str, str]:
        """`--json`'s `error` object: the kind, the error's class and the message."""
        named = type(error).__name__ if error is not None else self.kind
        return {"kind": self.kind, "type": named, "message": self.message}


def failure(error: BaseException, message: str | None = None) -> Failure:
    """The kind and exit code of `error` (a run's error by what ended it: a provider that
    stayed unavailable, a limit, or anything else), with `message` (default: the error's)."""
    said = str(error) if message is None else message
    inner = error.__cause__ if isinstance(error, RunError) else None
    cause = inner if inner is not None else error  # what ended a run, if anything did
    if isinstance(error, UsageLimitExceeded):
        return Failure("limit_reached", LIMIT_REACHED, said)
    if isinstance(cause, ProviderUnavailable | RateLimited):
        return Failure("provider_unavailable", PROVIDER_UNAVAILABLE, said)
    if isinstance(cause, MissingApiKey):
        return Failure("missing_key", NOT_SET_UP, said)
    if isinstance(cause, MissingExtra):
        return Failure("missing_extra", NOT_SET_UP, said)
    if isinstance(cause, ConfigurationError):
        return Failure("usage", BAD_USAGE, said)
    return Failure("run_failed", RUN_FAILED, said)
