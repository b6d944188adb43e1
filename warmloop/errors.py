"""One exception hierarchy. Errors raised mid-run carry the transcript, so nothing is lost."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from warmloop.run import RequestRecord
    from warmloop.transcript import AssistantTurn, Transcript


class WarmloopError(Exception):
    """Base class of every error warmloop raises on purpose."""


class ConfigurationError(WarmloopError):
    """Bad input to an Agent, tool, model or CLI option; the message says what to change."""


class RunError(WarmloopError):
    """A run ended without outputs; `transcript` holds everything that happened, and
    `requests` the record of each request sent before it ended (usage, seconds, prefix)."""

    def __init__(
        self, message: str, transcript: Transcript, requests: Sequence[RequestRecord] = ()
    ) -> None:
        super().__init__(message)
        self.transcript = transcript
        self.requests: list[RequestRecord] = list(requests)


class SyntaxBudgetExceeded(RunError):
    """The model produced too many consecutive unparseable turns."""


class ExtractFailed(RunError):
    """The extract step did not produce valid outputs."""


class RunAborted(RunError):
    """An unexpected exception ended the run (from a renderer, a provider, a tool or a
    callback); the original is `__cause__`, and `transcript` holds every complete step."""


class FormatError(WarmloopError):
    """A model turn that could not be parsed; carries the raw turn so the loop can keep it."""

    def __init__(self, message: str, turn: AssistantTurn) -> None:
        super().__init__(message)
        self.turn = turn


class ProviderError(WarmloopError):
    """A provider request failed for good (auth, invalid request, retries exhausted)."""


class ContextWindowExceeded(ProviderError):
    """The prompt is longer than the model's context window. The loop treats it as a forced
    maintenance point (prune, then fold) and retries once before giving up."""

    def __init__(
        self, message: str, *, prompt_tokens: int | None = None, window: int | None = None
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.window = window


class RequestFailed(RunError):
    """A model request failed for good mid-run; the transcript is as it was before it."""


class WorkspaceError(WarmloopError):
    """A path outside the workspace, or one that does not exist."""


class TranscriptError(WarmloopError):
    """A transcript that cannot be loaded or changed as asked; the message names the fault."""


class PairingError(TranscriptError):
    """Tool calls and results that do not pair up one-to-one, in order (I3)."""


class SessionError(WarmloopError):
    """A session store that cannot do what was asked (unreachable, a schema newer than this
    warmloop, a damaged row, a write that no longer holds the lease); nothing was changed."""


class SessionBusy(SessionError):
    """Another process or worker holds this session's lease: only one may append at a time.
    Retry once it has finished, or after its lease expires if it was killed."""


class ToolFailed(WarmloopError):
    """A tool reports that it failed (a remote tool's error result, a server that stopped);
    the message is what the model is told, as a tool error."""


class CodeFailed(ToolFailed):
    """Code run by `run_code` did not finish (syntax, an exception, a limit, a dead sandbox);
    the message is what the model is told."""
