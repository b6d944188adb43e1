"""The conversation's routing key on the wire: where each host reads it.

A conversation's key is `Transcript.conversation` (a fork keeps it; a fresh conversation
mints its own), so every request of a conversation and of its forks lands where its cache
lives. Each host reads the key in its own place, and warmloop sends it only where the host
documents it, or where the user asks (a parameter a host never documented risks a rejected
request and tells nothing):

- `prompt_cache_key` in the body: OpenAI, Chat Completions and Responses
  (platform.openai.com/docs/guides/prompt-caching, "Requests are routed ... prompt_cache_key").
- `x-grok-conv-id` header: xAI Chat Completions (docs.x.ai, Prompt Caching, "Maximizing Cache
  Hits": "routes requests with the same conversation ID to the same server"; the body field
  `prompt_cache_key` is xAI's for its Responses API only).
- `X-Session-ID` header: self-hosted fleets (`openai-compatible:`), the header vLLM's router
  hashes first under `--policy consistent_hash` (vllm-project/router,
  docs/load_balancing/README.md, "Hash Key Priority"), and what an nginx or Envoy upstream
  can hash on; its name is an option per model (`session_header=`), None to send none.
- DeepSeek (a disk cache from token 0, no routing) and Anthropic and Gemini (no documented
  routing key) get none.

A sub-agent's requests also carry its parent's key where a self-hosted router reads one
(`parent_session_header=`, e.g. NVIDIA Dynamo's `X-Dynamo-Parent-Session-ID` beside
`session_header="X-Dynamo-Session-ID"`: docs.nvidia.com/dynamo, "Session IDs"): the agent
sets it for the child's run (`parent_key`, `agent.lineage`), and the model reads it as it
sends (`current_parent_key`).

A header never enters the prompt bytes, so it cannot move the cache prefix. The key is the
conversation id, which is validated (1 to 64 letters, digits, `_`, `-`: no line break can
split a header) and is never derived from a credential; one that contains the model's API key
or a secret of its base URL is refused, not sent.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar

from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import CacheProfile
from warmloop.messages import validate_id
from warmloop.providers.clients import MIN_KEY_CHARS

EXAMPLE_HEADER = "X-Session-ID"
"""A header name to suggest when one is refused (what vLLM's router hashes first)."""

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
"""An HTTP field name (RFC 9110 `token`)."""
_RESERVED = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "host",
        "content-length",
        "content-type",
        "content-encoding",
        "transfer-encoding",
        "connection",
        "openai-organization",
        "openai-project",
        # Hop-by-hop (RFC 9110 7.6.1) and HTTP's own control: a proxy drops or acts on
        # them, so the key never reaches the router, or the request changes meaning.
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
"""Headers the SDK or HTTP itself sets, or that do not travel past one hop: a routing key
written there would replace a credential, break the request or never arrive."""


def header_name(name: str | None) -> str | None:
    """`name` checked as the header a conversation's key travels in (None: no header)."""
    if name is None:
        return None
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        raise ConfigurationError(
            f"session_header must be an HTTP header name such as {EXAMPLE_HEADER!r} "
            f"(letters, digits and - _ .), or None to send none; got {name!r}"
        )
    if name.lower() in _RESERVED:
        raise ConfigurationError(
            f"session_header {name!r} is a header the client or HTTP itself sets "
            "(credentials, length, type, a hop-by-hop header a proxy drops); name another, "
            f"such as {EXAMPLE_HEADER!r}"
        )
    return name


def routing_key(conversation: str, secrets: Iterable[str] = ()) -> str:
    """The conversation id as the value a host routes on: a valid id that contains none of
    `secrets` (the model's API key, its base URL's credentials)."""
    key = validate_id(conversation)
    for secret in secrets:
        if len(secret) >= MIN_KEY_CHARS and secret in key:
            raise ConfigurationError(
                "the conversation id contains the model's API key or a credential of its "
                "base URL; it is sent to the host as a routing key, so name the "
                "conversation with something else"
            )
    return key


_PARENT_KEY: ContextVar[str | None] = ContextVar("warmloop_parent_key", default=None)


@contextlib.contextmanager
def parent_key(conversation: str) -> Iterator[None]:
    """Requests sent inside the block are a child conversation's, under `conversation`."""
    token = _PARENT_KEY.set(conversation)
    try:
        yield
    finally:
        _PARENT_KEY.reset(token)


def current_parent_key() -> str | None:
    """The parent conversation of the requests sent here (None: a root conversation)."""
    return _PARENT_KEY.get()


logger = logging.getLogger(__name__)


def own_host(base_url: object, hosts: Sequence[str]) -> bool:
    """Whether an SDK client's base URL (an `httpx.URL`, whatever set it: `base_url=`,
    `OPENAI_BASE_URL`, the caller's `client=`) is on one of the provider's own API `hosts`,
    where its documented fields (`prompt_cache_key`) may go; any other host gets only what
    it was asked to."""
    host = getattr(base_url, "host", None)
    return isinstance(host, str) and host.lower() in hosts


KEY_REMEDY = "pass cache_key=True if the host forwards the key"
"""What the warning of a model left without its key tells a library user to do."""


def sends_cache_key(
    cache_key: object, own: bool, profile: CacheProfile, remedy: str = KEY_REMEDY
) -> bool:
    """`cache_key=` checked; None: sent to OpenAI's own API only (`own`: the client's host
    is it, wherever its URL came from). A model that matches through the key (GPT-5.6 and
    later) and will get none is warned of, with `remedy` (what the caller can do: the
    proxy's differs): its requests fall back to the older matching. One rule for the
    `openai:` and `openai-chat:` models and for `warmloop proxy`."""
    if cache_key is not None and not isinstance(cache_key, bool):
        raise ConfigurationError(f"cache_key must be true, false or None, got {cache_key!r}")
    sends = own if cache_key is None else cache_key
    if profile.needs_cache_key and not sends:
        logger.warning(
            "%s matches its cache through prompt_cache_key, and its requests will carry "
            "none (a host other than OpenAI's API, or the key turned off): they fall back to "
            "the older, far less reliable matching; %s",
            profile.model,
            remedy,
        )
    return sends
