"""A self-hosted server's real context window, asked of the server itself: the Chat
Completions API never says it, and a guessed one either wastes the window or overflows it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx2

from warmloop.providers.redact import guard_logs, url_secrets

logger = logging.getLogger(__name__)

# Nothing a server does raises: a refused connection, a timeout, a redirect (not followed:
# the headers may carry an API key), an error status, a body that is not JSON, over _MAX_BODY
# or of the wrong shape, a number outside _MIN_WINDOW.._MAX_WINDOW: each only moves on to the
# next answer. Neither the headers nor the URL's query (it may hold a token) are logged, by
# this module or by httpx2 (`guard_logs`).
_MIN_WINDOW = 256
_MAX_WINDOW = 100_000_000
_MAX_BODY = 1 << 20  # a model card or /props is a few kilobytes
_DEFAULT_MODEL = "default"  # the user named no model: the server's first listed one


@dataclass(frozen=True)
class DiscoveredWindow:
    """A window the server itself reported, with its source, so people can judge it."""

    tokens: int
    where: str


@dataclass(frozen=True)
class _Urls:
    """The endpoints to ask, each keeping the base URL's query (it may be the credential)."""

    models: str
    props: str
    show: str
    models_path: str


def _urls(base_url: str) -> _Urls | None:
    try:
        parts = urlsplit(base_url.strip())
        _ = parts.port  # out of 0..65535 raises here; in httpx2, an ExceptionGroup
    except ValueError:
        return None
    api = parts.path.rstrip("/")
    root = api.removesuffix("/v1")

    def at(path: str) -> str:
        return urlunsplit(parts._replace(path=path, fragment=""))

    models_path = "/v1/models" if api.endswith("/v1") else "/models"
    return _Urls(at(f"{api}/models"), at(f"{root}/props"), at(f"{root}/api/show"), models_path)


def _window(value: object) -> int | None:
    """`value` when it is a plausible window in tokens (bools, 0 and 1, are too small)."""
    return value if isinstance(value, int) and _MIN_WINDOW <= value <= _MAX_WINDOW else None


async def _json(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    *,
    what: str,
    headers: Mapping[str, str],
    seconds: float,
    body: dict[str, str] | None = None,
) -> object:
    """The reply's JSON, or None for anything but a 2xx JSON body of at most _MAX_BODY."""
    try:
        async with asyncio.timeout(seconds):  # httpx2's timeouts are per read, not in all
            async with client.stream(
                method,
                url,
                json=body,
                headers=dict(headers),
                timeout=seconds,  # the caller's, not a given client's own
                follow_redirects=False,
            ) as response:
                # Read to its end even when refused (a 404 from a host that is not this
                # engine): a connection left with unread body is closed, not pooled.
                data = bytearray()
                async for chunk in response.aiter_bytes():
                    data += chunk
                    if len(data) > _MAX_BODY:
                        logger.debug("context window: %s reply is over %d bytes", what, _MAX_BODY)
                        return None
                if not response.is_success:
                    logger.debug("context window: %s answered HTTP %d", what, response.status_code)
                    return None
        return json.loads(data)
    except (httpx2.HTTPError, httpx2.InvalidURL, TimeoutError, ValueError, RecursionError) as exc:
        # The exception's text can hold the URL, query included: only its type is logged.
        logger.debug("context window: %s gave nothing (%s)", what, type(exc).__name__)
        return None


def _cards(listing: object) -> list[dict[str, object]]:
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return []
    return [card for card in listing["data"] if isinstance(card, dict)]


def _card(cards: list[dict[str, object]], model: str) -> dict[str, object] | None:
    """The card for `model`: by id; the first for "default"; the only one if none matches."""
    if model != _DEFAULT_MODEL:
        for card in cards:
            if card.get("id") == model:
                return card
    if cards and (model == _DEFAULT_MODEL or len(cards) == 1):
        return cards[0]
    return None


def _props_window(props: object) -> int | None:
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    if isinstance(settings, dict) and (tokens := _window(settings.get("n_ctx"))) is not None:
        return tokens
    return _window(props.get("n_ctx"))


def _num_ctx(parameters: object) -> int | None:
    """`num_ctx` from Ollama's `parameters` text (one `name value` per line)."""
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[0] == "num_ctx":
            value = fields[1]
            # At most 9 ASCII digits: int() of thousands of digits raises, and none is sane.
            sane = value.isascii() and value.isdigit() and len(value) <= 9
            return _window(int(value)) if sane else None
    return None


def _context_length(model_info: object) -> int | None:
    """`<arch>.context_length` from Ollama's `model_info` (the one such key without arch)."""
    if not isinstance(model_info, dict):
        return None
    arch = model_info.get("general.architecture")
    if isinstance(arch, str) and f"{arch}.context_length" in model_info:
        keys = [f"{arch}.context_length"]
    else:
        keys = [k for k in model_info if isinstance(k, str) and k.endswith(".context_length")]
    return _window(model_info[keys[0]]) if len(keys) == 1 else None


async def _discover(
    client: httpx2.AsyncClient, urls: _Urls, model: str, headers: Mapping[str, str], seconds: float
) -> DiscoveredWindow | None:
    async def ask(method: str, url: str, what: str, body: dict[str, str] | None = None) -> object:
        return await _json(
            client, method, url, what=what, headers=headers, seconds=seconds, body=body
        )

    # 1. vLLM and SGLang put `max_model_len` on each card of GET /v1/models. vLLM: docs
    # "OpenAI-Compatible Server" (docs.vllm.ai/en/latest/serving/openai_compatible_server.html),
    # its `ModelCard` in vllm/entrypoints/openai/protocol.py (`max_model_len: int | None`).
    # SGLang: docs "OpenAI APIs" (docs.sglang.ai/basic_usage/openai_api.html), its `ModelCard`
    # in sglang/srt/entrypoints/openai/protocol.py (`max_model_len: Optional[int]`).
    models_what = f"GET {urls.models_path}"
    card = _card(_cards(await ask("GET", urls.models, models_what)), model)
    if card is not None and (tokens := _window(card.get("max_model_len"))) is not None:
        return DiscoveredWindow(tokens, f"{models_what} max_model_len (vLLM/SGLang)")

    # 2. llama.cpp's server: tools/server/README.md, "GET `/props`: Get server global
    # properties": `default_generation_settings.n_ctx` is a slot's context size.
    if (tokens := _props_window(await ask("GET", urls.props, "GET /props"))) is not None:
        return DiscoveredWindow(tokens, "GET /props default_generation_settings.n_ctx (llama.cpp)")

    # 3. Ollama: docs/api.md, "Show Model Information" (POST /api/show): `parameters` is text,
    # one `name value` a line; its `num_ctx` is the window the runner uses. Without it, the
    # `model_info["<arch>.context_length"]` is the model's trained length.
    name = model
    if model == _DEFAULT_MODEL:  # Ollama needs a real name: the first its listing gave
        listed = card.get("id") if card is not None else None
        if not isinstance(listed, str) or not listed:
            return None
        name = listed
    show = await ask("POST", urls.show, "POST /api/show", {"model": name})
    if not isinstance(show, dict):
        return None
    if (tokens := _num_ctx(show.get("parameters"))) is not None:
        return DiscoveredWindow(tokens, "POST /api/show parameters num_ctx (Ollama)")
    if (tokens := _context_length(show.get("model_info"))) is not None:
        where = "POST /api/show model_info <arch>.context_length (Ollama: the trained length)"
        return DiscoveredWindow(tokens, where)
    return None


async def discover_window(
    base_url: str,
    model: str,
    *,
    headers: Mapping[str, str] | None = None,
    # Per request, which a caller's asyncio.timeout around the whole call could not say.
    timeout: float = 5.0,  # noqa: ASYNC109
    client: httpx2.AsyncClient | None = None,
) -> DiscoveredWindow | None:
    """The window the server serves `model` with, or None, so a caller need not guess it.

    `timeout` bounds each of the (at most three) requests; a given `client` is left open.
    """
    urls = _urls(base_url)
    if urls is None:
        return None
    guard_logs(url_secrets(base_url))  # httpx2 logs each request's URL, query included
    if client is not None:
        return await _discover(client, urls, model, headers or {}, timeout)
    async with httpx2.AsyncClient() as own:
        return await _discover(own, urls, model, headers or {}, timeout)
