"""Chat Completions through the official `openai` SDK: OpenAI, DeepSeek, and OpenAI-compatible
servers (vLLM, SGLang, llama.cpp server, Ollama).

Rendering and reading are `chat_format` (pure, memoised per message). This module is the I/O
edge: `send` puts a rendered payload on the wire with the conversation's routing key where
the host reads it (`routing`: `prompt_cache_key` for OpenAI, a session header for self-hosted
fleets and xAI; never part of the prefix stream) and parses the reply into an
`AssistantTurn` and a normalised `Usage`, on the running event loop's own client
(`loop_clients`). Retries of 408/409/429/5xx and timeouts are the
SDK's own (`max_retries`, `timeout`); whatever still fails becomes a `ProviderError`
(`failures`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI
from openai.resources.chat.completions.completions import AsyncCompletions

from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.messages import JsonValue
from warmloop.providers.base import KnownFacts, ModelResponse, Rendered
from warmloop.providers.clients import api_key as find_key
from warmloop.providers.clients import client_secrets, sdk_clients
from warmloop.providers.deltas import Delta
from warmloop.providers.failures import Failures, read_body, retries, stainless_errors
from warmloop.providers.loop_clients import LoopClients
from warmloop.providers.openai.cache import (
    free_retention,
    retention_params,
    takes_breakpoints,
)
from warmloop.providers.openai.chat_format import ChatRenderer, parse_reply
from warmloop.providers.openai.chat_stream import streamed_body
from warmloop.providers.openai.discovery import discover_window
from warmloop.providers.openai.record import CACHE_KEY_FIELD
from warmloop.providers.openai.retention_refusals import RetentionRefusals
from warmloop.providers.records import ProviderRecord
from warmloop.providers.redact import redact_spec, redact_url, url_secrets
from warmloop.providers.registry import provider_record
from warmloop.providers.routing import (
    current_parent_key,
    header_name,
    own_host,
    routing_key,
    sends_cache_key,
)
from warmloop.providers.streamed import paced, read_seconds, read_stream
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

SERVER = provider_record("openai-compatible")
"""A self-hosted server's key has its own variable (its record's): OPENAI_API_KEY must
never be sent to whatever URL a user names."""
SERVER_HEADER = SERVER.routing.header if SERVER.routing is not None else None
"""The header a self-hosted server's routing key travels in unless `session_header` names
another (its record's: `X-Session-ID`, what vLLM's router hashes first)."""
DEEPSEEK_URL = "https://api.deepseek.com"
XAI_URL = "https://api.x.ai/v1"
PLACEHOLDER_KEY = "not-needed"
"""Sent to OpenAI-compatible servers when no key is set: the SDK needs one, local servers
don't check it."""
DEFAULT_SERVER_MODEL = "default"
ASKED = "GET /v1/models, GET /props, POST /api/show"
"""Where `discover` looks for the window (vLLM and SGLang, llama.cpp server, Ollama)."""
DEFAULT_MAX_RETRIES = 2
DEFAULT_TIMEOUT = 600.0
TEXT_STOP = ["Observation:"]
"""Stop sequence for the text protocol: a model that goes on to invent the observation would
otherwise write past its Action, which the parser rejects."""

# create()'s own keyword arguments; anything else in the payload (e.g. llama.cpp's `grammar`)
# travels in `extra_body`, so engine-specific parameters work without SDK support.
_CREATE_PARAMS = frozenset(inspect.signature(AsyncCompletions.create).parameters) - {
    "self",
    "extra_headers",
    "extra_query",
    "extra_body",
    "timeout",
}


ERRORS = stainless_errors(openai, openai.OpenAIError)


Given = AsyncOpenAI | Callable[[], AsyncOpenAI] | None
"""What `client=` takes: a client, used as given; a function that makes one per event loop."""


class ChatCompletionsModel(KnownFacts):
    """A Model speaking Chat Completions through AsyncOpenAI clients, one per event loop
    (`clients`; `client` holds their settings). The conversation's routing key travels as
    `prompt_cache_key` when `cache_key`, and in the header named `session_header` when one
    is named; a sub-agent's parent key in the header named `parent_session_header` when one
    is named (`routing`)."""

    def __init__(
        self,
        name: str,
        model: str,
        clients: LoopClients[AsyncOpenAI],
        *,
        facts: ModelFacts,
        record: ProviderRecord,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        cache_key: bool = True,
        session_header: str | None = None,
        breakpoint: bool = False,
        secrets: tuple[str, ...] = (),
        parent_session_header: str | None = None,
    ) -> None:
        self.name = name
        self.model = model
        self.facts = facts
        self._clients = clients
        self.client = clients.client
        self.record = record
        """Its provider's record: the key variables, error mapping and routing key."""
        self.secrets = (*secrets, *client_secrets(self.client.api_key))
        """Credentials (in the base URL, the API key) scrubbed from every error message."""
        self._failures = Failures(name, model, record.key_names, record.sdk_errors(), self.secrets)
        self._refusals = RetentionRefusals(name)
        self.text_protocol = text_protocol
        self.cache_key = cache_key
        self.session_header = header_name(session_header)
        self.parent_session_header = header_name(parent_session_header)
        merged = dict(params or {})
        if text_protocol:
            merged.setdefault("stop", TEXT_STOP)
        self._renderer = ChatRenderer(
            model, text_protocol=text_protocol, params=merged, breakpoint=breakpoint
        )

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the Chat Completions payload and its prefix stream (chat_format)."""
        return self._renderer.render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Send one request (the SDK retries transient faults) and parse the reply."""
        kwargs = self._request(rendered, session_id)
        # The SDK retried what was worth retrying (`max_retries`) before it raised.
        with self._failures.mapped(tries=retries(self.client.max_retries)):
            # The raw body: hosts differ from the SDK's types (no `type`, no `arguments`,
            # extra reasoning fields), and what they sent is what the next request echoes.
            create = (await self._clients.current()).chat.completions.with_raw_response.create
            raw = await self._refusals.send(lambda sent: create(**sent), kwargs, session_id)
            return parse_reply(
                read_body(raw.content, self.name),
                rendered.turn_index,
                name=self.name,
                text_protocol=self.text_protocol,
            )

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """`send`, streamed: the same body with `stream: true` and
        `stream_options.include_usage` (without it the API sends no usage on a stream);
        the chunks put back together (`chat_stream`) are parsed as a whole reply."""
        kwargs = self._request(rendered, session_id)
        kwargs |= {"stream": True, "stream_options": {"include_usage": True}}
        with self._failures.mapped(tries=retries(self.client.max_retries)):
            with read_stream(self.name):
                client = await self._clients.current()
                chunks = await self._refusals.send(
                    lambda sent: client.chat.completions.create(**sent), kwargs, session_id
                )
                async with chunks:
                    # Each event within the timeout: comments alone cannot hold the stream.
                    events = paced(chunks, read_seconds(self.client.timeout), self.name)
                    body = await streamed_body(events, deltas, self.name)
            return parse_reply(
                body, rendered.turn_index, name=self.name, text_protocol=self.text_protocol
            )

    def _request(self, rendered: Rendered, session_id: str) -> dict[str, Any]:
        """The SDK's keyword arguments for `rendered`: its own parameters as they are, the
        rest in `extra_body`, and the routing key where the host reads it."""
        kwargs: dict[str, Any] = {}
        extra_body: dict[str, Any] = {}
        for key, value in rendered.payload.items():
            (kwargs if key in _CREATE_PARAMS else extra_body)[key] = value
        key = routing_key(session_id, self.secrets)
        if self.cache_key:
            kwargs[CACHE_KEY_FIELD] = key
        headers = {self.session_header: key} if self.session_header is not None else {}
        parent = current_parent_key()
        if self.parent_session_header is not None and parent is not None:
            headers[self.parent_session_header] = routing_key(parent, self.secrets)
        if headers:
            kwargs["extra_headers"] = headers
        if extra_body:
            kwargs["extra_body"] = extra_body
        return kwargs


class OpenAIChatModel(ChatCompletionsModel):
    """OpenAI's own Chat Completions (`openai-chat:<model>`); needs OPENAI_API_KEY.
    `prompt_cache_retention` and `cache_key` as on `OpenAIResponsesModel` (None: the longest
    free retention; `prompt_cache_key` only where the client's host is OpenAI's API, whatever
    set its URL)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: Given = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_cache_retention: str | None = None,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        base_url: str | None = None,
        context_window: int | None = None,
        cache_key: bool | None = None,
    ) -> None:
        record = provider_record("openai-chat")
        name = f"{record.prefix}:{model}"
        if prompt_cache_retention is None:  # a longer retention that costs nothing, if sold
            prompt_cache_retention = free_retention(name)
        facts = table_facts(name, retention=prompt_cache_retention, context_window=context_window)
        merged = dict(params or {}) | retention_params(facts.profile, prompt_cache_retention)
        clients = chat_clients(record, client, api_key, base_url, max_retries, timeout)
        own = own_host(clients.client.base_url, record.hosts)  # base_url=, the variable, client=
        super().__init__(
            name,
            model,
            clients,
            facts=facts,
            record=record,
            text_protocol=text_protocol,
            params=merged,
            cache_key=sends_cache_key(cache_key, own, facts.profile),
            breakpoint=takes_breakpoints(facts.profile) and not text_protocol,
            secrets=url_secrets(base_url) if base_url is not None else (),
        )


class VendorChatModel(ChatCompletionsModel):
    """A vendor's own Chat Completions endpoint: its name prefix and URL; its key
    variables and the header (if any) its docs name for the routing key come from its
    record; never `prompt_cache_key`, which these vendors do not read on Chat Completions."""

    vendor: ClassVar[str]
    default_url: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        client: Given = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        context_window: int | None = None,
    ) -> None:
        base_url = self.default_url if base_url is None else base_url
        record = provider_record(self.vendor)
        clients = chat_clients(record, client, api_key, base_url, max_retries, timeout)
        name = f"{self.vendor}:{model}"
        super().__init__(
            name,
            model,
            clients,
            facts=table_facts(name, context_window=context_window),
            record=record,
            text_protocol=text_protocol,
            params=params,
            cache_key=False,
            session_header=record.routing.header if record.routing is not None else None,
            secrets=url_secrets(base_url),
        )


class DeepSeekModel(VendorChatModel):
    """DeepSeek (`deepseek:<model>`); needs DEEPSEEK_API_KEY. Echoes `reasoning_content`.
    Its disk cache matches prefixes from token 0 with no routing, and its docs list no
    routing key: sending one would only risk a rejected parameter."""

    vendor, default_url = "deepseek", DEEPSEEK_URL


class XAIModel(VendorChatModel):
    """xAI's Chat Completions (`xai:<model>`); needs XAI_API_KEY. The conversation's routing
    key travels in `x-grok-conv-id`, the header xAI documents for Chat Completions (docs.x.ai,
    Prompt Caching, "Maximizing Cache Hits"); no `prompt_cache_key`, which xAI reads on its
    Responses API only."""

    vendor, default_url = "xai", XAI_URL


class OpenAICompatibleModel(ChatCompletionsModel):
    """A self-hosted server (`openai-compatible:<base URL>[#<model>]`): vLLM, SGLang,
    llama.cpp server, Ollama, gateways. The key is OPENAI_COMPATIBLE_API_KEY if set, else
    a placeholder (never OPENAI_API_KEY, which must not leak to another server).

    Its window is `context_window` when stated, else what the server publishes (read once
    by `discover`, before the first run), else unknown and never acted on. Its cache rules
    are a self-hosted engine's (the previous request's KV kept, nothing billed) unless
    `cache_rules` names a model of the table whose rules and prices the host follows
    (`"openai:gpt-5"`, `"deepseek:deepseek-chat"`): a gateway in front of a provider.

    The conversation's routing key travels in the header `session_header` (default
    `X-Session-ID`, what vLLM's router and an nginx `hash` upstream read; None sends none);
    `prompt_cache_key` only when `cache_key=True`, as no such host documents it. A
    sub-agent's requests carry its parent's key in `parent_session_header` when named
    (NVIDIA Dynamo reads `X-Dynamo-Parent-Session-ID`; default none).
    """

    def __init__(
        self,
        base_url_or_name: str,
        *,
        api_key: str | None = None,
        client: Given = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        text_protocol: bool = False,
        params: Mapping[str, JsonValue] | None = None,
        cache_key: bool = False,
        session_header: str | None = SERVER_HEADER,
        base_url: str | None = None,
        context_window: int | None = None,
        cache_rules: str | None = None,
        parent_session_header: str | None = None,
    ) -> None:
        if base_url is not None:  # then the selection string names only the model
            base_url, model = split_server_spec(f"{base_url}#{base_url_or_name}")
        else:
            base_url, model = split_server_spec(base_url_or_name)
        clients = chat_clients(
            SERVER, client, api_key, base_url, max_retries, timeout, make=_server_client
        )
        self.base_url = base_url
        name = f"openai-compatible:{redact_url(base_url)}#{model}"
        facts = table_facts(
            _rules_spec(cache_rules) if cache_rules is not None else name,
            context_window=context_window,
            prices_of=cache_rules,
            window_in_table=False,
        )
        self._discovered = facts.window_known
        super().__init__(
            name,
            model,
            clients,
            facts=replace(facts, profile=replace(facts.profile, model=name)),
            text_protocol=text_protocol,
            params=params,
            cache_key=cache_key,
            session_header=session_header,
            parent_session_header=parent_session_header,
            record=SERVER,
            secrets=url_secrets(base_url),
        )

    async def discover(self) -> ModelFacts:
        """Read the window the server publishes (vLLM, SGLang, llama.cpp server, Ollama;
        see `discovery`), once; the facts as they stand when it publishes none."""
        if self._discovered:
            return self.facts
        self._discovered = True
        key = self.client.api_key
        headers = {"Authorization": f"Bearer {key}"} if key and key != PLACEHOLDER_KEY else {}
        # Through the SDK's own HTTP client: the same proxies, TLS settings and transport
        # as every request (the SDK keeps it as `_client`; there is no public accessor).
        client = await self._clients.current()
        found = await discover_window(
            self.base_url, self.model, headers=headers, client=client._client
        )
        if found is None:
            self.facts = replace(self.facts, window_note=f"the server published none ({ASKED})")
        else:
            self.facts = self.facts.told_window(found.tokens, "discovered", found.where)
        return self.facts


def chat_clients(
    record: ProviderRecord,
    given: Given,
    api_key: str | None,
    base_url: str | None,
    max_retries: int,
    timeout: float,
    *,
    make: Callable[..., AsyncOpenAI] | None = None,
) -> LoopClients[AsyncOpenAI]:
    """A Chat Completions model's clients (`sdk_clients`), made by `make` (else the record's
    SDK client); a given client is used as it is, since these models' defaults are no
    settings its caller chose. A self-hosted server's key may be a placeholder."""
    chosen = given is None
    placeholder = PLACEHOLDER_KEY if record is SERVER else None
    return sdk_clients(
        make or record.client_class(),
        given,
        key=lambda: find_key(api_key, *record.key_variables, placeholder=placeholder),
        base_url=base_url if chosen else None,
        max_retries=max_retries if chosen else None,
        timeout=timeout if chosen else None,
    )


def _server_client(**options: Any) -> AsyncOpenAI:
    """A self-hosted server's client. The SDK reads OPENAI_ORG_ID and OPENAI_PROJECT_ID into
    headers on every request: OpenAI identifiers the user's own server has no business
    seeing."""
    client: AsyncOpenAI = SERVER.client_class()(**options)
    client.organization = None
    client.project = None
    return client


def _rules_spec(cache_rules: str) -> str:
    """`cache_rules` checked: a selection string of a provider in the table."""
    if not isinstance(cache_rules, str) or ":" not in cache_rules:
        raise ConfigurationError(
            f"cache_rules names the model whose cache rules and prices the host follows, "
            f"such as 'openai:gpt-5' or 'deepseek:deepseek-chat'; got {cache_rules!r}"
        )
    return cache_rules


def split_server_spec(spec: str) -> tuple[str, str]:
    """`URL#model` -> (URL, model); the model defaults to "default"."""
    url, _, model = spec.strip().partition("#")
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is no number: refused here, not by the HTTP client
    except ValueError:  # an unclosed IPv6 bracket
        raise ConfigurationError(
            f"openai-compatible needs the server's base URL, and {redact_spec(spec)!r} cannot "
            "be read: check its host (an IPv6 address in brackets, http://[::1]:8000/v1) and "
            "its port (a number)"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"openai-compatible needs the server's base URL, got {redact_spec(spec)!r}; use e.g. "
            "openai-compatible:http://127.0.0.1:8080/v1 or ...:8080/v1#model-name"
        )
    return url, model.strip() or DEFAULT_SERVER_MODEL
