"""One exception hierarchy, at the bottom of the package: it imports nothing of warmloop.
The errors that end a run carry its transcript, so they live with the run (`agent.result`)."""

from __future__ import annotations

import importlib.util


class WarmloopError(Exception):
    """Base class of every error warmloop raises on purpose."""


class ConfigurationError(WarmloopError):
    """Bad input to an Agent, tool, model or CLI option; the message says what to change."""


class MissingExtra(ConfigurationError):
    """An optional dependency is not installed; the message names the pip extra that
    brings it (`extra`), so what needs it is refused where it is made, not when first used."""

    def __init__(self, what: str, package: str, extra: str) -> None:
        super().__init__(
            f"{what} needs {package}, which is not installed; "
            f"install it with: pip install 'warmloop[{extra}]'"
        )
        self.package = package
        self.extra = extra


def require_extra(module: str, *, what: str, package: str, extra: str) -> None:
    """Raise MissingExtra unless the top-level `module` can be imported. Only found, not
    imported: a heavy SDK is still loaded when first used."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ValueError:  # in sys.modules without a spec (a stand-in a test put there)
        found = True
    if not found:
        raise MissingExtra(what, package, extra)


class MissingApiKey(ConfigurationError):
    """No API key was passed and none of the provider's environment variables is set.
    `variables` names them, so a caller with its own ways to pass a key (the CLI's options)
    can say those instead of Python's `api_key=`."""

    def __init__(self, message: str, *, variables: tuple[str, ...]) -> None:
        super().__init__(message)
        self.variables = variables


class ModelRequestsRefused(ConfigurationError):
    """A request to a provider's API while requests are off in this process (a test run:
    `warmloop.testing.ALLOW_MODEL_REQUESTS = False`); nothing was sent."""


class ProviderError(WarmloopError):
    """A provider request failed for good (auth, invalid request, retries exhausted)."""


class RateLimited(ProviderError):
    """The provider still rate-limited the request after its SDK's retries (HTTP 429).
    `retry_after` is the wait, in seconds, the server asked for (`retry-after-ms` or
    `Retry-After`), when it said; a fleet's limiter holds every worker back that long."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ProviderUnavailable(ProviderError):
    """The provider's servers kept failing (5xx, 408, 409), did not answer in time or could
    not be reached, after its SDK's retries: an outage a later attempt may outlast, unlike
    a request to fix."""


class ContextWindowExceeded(ProviderError):
    """The prompt is longer than the model's context window. The loop treats it as a forced
    maintenance point (prune, then fold) and retries once before giving up."""

    def __init__(
        self, message: str, *, prompt_tokens: int | None = None, window: int | None = None
    ) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.window = window


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


class FleetUnavailable(WarmloopError):
    """A fleet's PostgreSQL database could not be reached (down, restarting, a wrong URL);
    the message names it without its credentials."""


class ToolFailed(WarmloopError):
    """A tool reports that it failed (a remote tool's error result, a server that stopped);
    the message is what the model is told, as a tool error."""


class ModelRetry(ToolFailed):
    """Raised in a tool to tell the model what is wrong with its call, so it tries again
    (pydantic-ai's name): the message is the call's error result, and the run goes on. Any
    other exception a tool raises ends the run (`ToolRaised`), unless the tool or the agent
    sends errors to the model (`errors_to_model=True`)."""


SHOWN_CHARS = 500
"""The most of a tool's own message `ToolRaised` repeats (the whole is its `error`)."""


class ToolRaised(WarmloopError):
    """A tool raised an exception other than `ModelRetry` (or `ToolFailed`), and neither the
    tool nor the agent sends errors to the model: the run ends (a `RunAborted` whose cause
    this is). `tool` names the tool; `error`, also this error's `__cause__`, is what it
    raised."""

    def __init__(self, tool: str, error: BaseException) -> None:
        try:
            said = str(error)
        except Exception:  # a message that cannot be shown is no reason for a traceback
            said = "(its message cannot be shown)"
        if len(said) > SHOWN_CHARS:
            said = f"{said[:SHOWN_CHARS]}... ({len(said):,} characters)"
        super().__init__(
            f"tool {tool!r} raised {type(error).__name__}: {said}; raise ModelRetry in the "
            "tool to tell the model instead, or send its errors to the model with "
            "@tool(errors_to_model=True) (Agent(tool_errors_to_model=True) for every tool)"
        )
        self.tool = tool
        self.error = error


class CodeFailed(ToolFailed):
    """Code run by `run_code` did not finish (syntax, an exception, a limit, a dead sandbox);
    the message is what the model is told."""
