"""Building an SDK client, one way for every provider.

The API key is the one passed, else the first of the provider's environment variables that
is set, else a placeholder where the server checks none, else a clear error naming them.
The base URL is taken as given, except its query: the SDKs append paths to a base URL as
text, so `...?token=x` would become `...?token=xchat/completions`, and the query travels as
default query parameters instead. Timeout and retries are checked, and left to the SDK's
defaults when not given. A client the caller built is used as it is, with only the options
they set; a function the caller passed makes one per event loop (`loop_clients`). The
credentials a client holds (its key, the base URL's user info and query) are
what `failures` keeps out of every message, and `redact.guard_logs` out of every log record
of the SDK and its HTTP library.

The openai and anthropic SDKs take the same settings (`sdk_clients`); google-genai takes its
timeout and retries per request, so `GeminiModel` builds its client from `api_key` alone.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from warmloop.errors import ConfigurationError, MissingApiKey
from warmloop.providers.loop_clients import LoopClients, given_clients
from warmloop.providers.redact import guard_logs, url_secrets

MIN_KEY_CHARS = 8
"""An API key shorter than this is a placeholder (`not-needed`, `k`), not worth masking."""


class Configurable(Protocol):
    """An openai or anthropic SDK client: `with_options` returns a copy with new settings
    (sharing its HTTP client), `close` closes its connections."""

    @property
    def with_options(self) -> Callable[..., Any]: ...

    async def close(self) -> None: ...


Client = TypeVar("Client", bound=Configurable)


def api_key(given: str | None, *variables: str, placeholder: str | None = None) -> str:
    """`given`, else the first of `variables` set in the environment, else `placeholder`;
    a ConfigurationError naming the variables when there is none."""
    if given:
        return given
    for variable in variables:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    if placeholder is not None:
        return placeholder
    raise MissingApiKey(
        f"no API key: set the environment variable {key_names(*variables)}, "
        "or pass api_key= or client=",
        variables=variables,
    )


def key_names(first: str, *others: str) -> str:
    """Where a key is looked up, in words: `GEMINI_API_KEY (or GOOGLE_API_KEY)`."""
    return first + "".join(f" (or {other})" for other in others)


def client_options(
    base_url: str | None = None, max_retries: int | None = None, timeout: float | None = None
) -> dict[str, Any]:
    """The settings that were given, checked, as the openai and anthropic SDKs name them."""
    if (max_retries is not None and max_retries < 0) or (timeout is not None and timeout <= 0):
        raise ConfigurationError("max_retries must be >= 0 and timeout > 0 (seconds)")
    options: dict[str, Any] = {}
    if base_url is not None:
        guard_logs(url_secrets(base_url))  # the SDK and httpx log request URLs and options
        parts = urlsplit(base_url)
        if parts.query:
            options["default_query"] = dict(parse_qsl(parts.query, keep_blank_values=True))
            base_url = urlunsplit(parts._replace(query=""))
        options["base_url"] = base_url
    if max_retries is not None:
        options["max_retries"] = max_retries
    if timeout is not None:
        options["timeout"] = timeout
    return options


def sdk_clients(
    make: Callable[..., Client],
    given: Client | Callable[[], Client] | None,
    *,
    key: Callable[[], str],
    base_url: str | None = None,
    max_retries: int | None = None,
    timeout: float | None = None,
) -> LoopClients[Client]:
    """The openai or anthropic SDK clients a model sends with, one per event loop
    (`loop_clients`): `given` with the settings that were given, on every loop; a function
    `given` called once per loop; else new ones from `make` with the key `key()` finds."""
    options = client_options(base_url, max_retries, timeout)
    if given is None:
        made = key()
        guard_logs(client_secrets(made))
        return LoopClients.made(functools.partial(make, api_key=made, **options), _close)
    return given_clients(given, _close, lambda client: _configured(client, options))


def _configured(client: Client, options: dict[str, Any]) -> Client:
    return cast(Client, client.with_options(**options)) if options else client


async def _close(client: Configurable) -> None:
    await client.close()


def client_secrets(key: object, base_url: str | None = None) -> tuple[str, ...]:
    """What a client holds that no message may show: its API key (unless a placeholder)
    and the credentials in its base URL, longest first."""
    found = [key] if isinstance(key, str) and len(key) >= MIN_KEY_CHARS else []
    found += url_secrets(base_url) if base_url is not None else ()
    return tuple(sorted(set(found), key=len, reverse=True))
