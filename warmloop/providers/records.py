"""What warmloop knows about each provider and each wire format, as one record apiece.

A `ProviderRecord` is selected by its prefix (`anthropic:` in `anthropic:claude-x`): the
model class it builds (a lazy `"module:Class"` reference, so no SDK is imported until it is
asked for), the extra and key variables it needs, its names for telemetry and for people,
the model-name families a logged request is attributed to it by, its tokenizer, and the wire
format it speaks. A `WireFormat` is what the keep-alive and the audit read of a request:
its layout, where the answer's size goes, and the cache rules (explicit breakpoints, a TTL
chosen per request). Code asks a record for a capability, never compares a provider's name.
The registry that holds them is `warmloop.providers.registry`.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.facts.profiles import CacheProfile
from warmloop.facts.usage import Usage
from warmloop.providers.clients import key_names
from warmloop.providers.model_settings import Place
from warmloop.wire.pieces import Pieces
from warmloop.wire.stream import WireLayout
from warmloop.wire.verdict import ProviderVerdict

TtlWriter = Callable[[Mapping[str, Any], str], dict[str, Any]]
PayloadWriter = Callable[[Mapping[str, Any]], dict[str, Any]]
"""A payload with what it writes kept for a TTL (the prompt itself unchanged)."""
JsonRead = Mapping[str, object]
"""A JSON object as a reader takes it: every value narrowed (isinstance) where it is read."""
UsageReader = Callable[[JsonRead], Usage]
"""warmloop's `Usage` from one wire format's usage object, as its responses carry it."""
Claim = Callable[[JsonRead], int]
"""How specifically a body (or a usage object) has this format's shape: below 0, not at
all; of the formats that claim one, the highest claim wins (`exchange.formats`)."""
VerdictReader = Callable[[JsonRead | None, str | None], ProviderVerdict | None]
"""The provider's cache diagnostics object (and the earlier response the request named) as
a verdict; `{}` is the documented silence of a request that named one."""
PieceReader = Callable[[JsonRead, str], Pieces]
"""A body's blocks as the provider's lookback counts them, each with the client's marker
(`head`: the request parameters' canonical text, the first piece)."""


@dataclass(frozen=True)
class Reach:
    """How much of a conversation's prompt stays put from one request to the next, as the
    proxy has seen it: where a breakpoint written now will be read by the next request.
    A conversation that rebuilds its prompt (a framework that re-renders the last message
    every step) moves it at the same place each time; a marker past that place writes
    what nothing reads, at a premium."""

    tools: bool = True
    system: bool = True
    messages: int | None = None
    """Leading messages (conversation items) that stay; None: every one (append-only)."""

    def allows(self, message: int) -> bool:
        """Whether a marker on message `message` (its index) can be read later."""
        return self.system and (self.messages is None or message < self.messages)

    def within(self, other: Reach) -> Reach:
        """What stays under both (the earlier bust and this one)."""
        counts = [n for n in (self.messages, other.messages) if n is not None]
        return Reach(
            self.tools and other.tools,
            self.system and other.system,
            min(counts) if counts else None,
        )

    @staticmethod
    def before(section: str) -> Reach:
        """What stays when a request moves the prefix in `section` (the guard's label:
        `request`, `tools`, `system`, `message <i>`)."""
        if section.startswith("message "):
            index = section.removeprefix("message ")
            return Reach(messages=int(index)) if index.isdigit() else Reach(messages=0)
        if section == "system":
            return Reach(system=False, messages=0)
        return Reach(tools=False, system=False, messages=0)


FULL_REACH = Reach()
"""Every marker can be read: no request of the conversation has moved its prefix."""
BreakpointPlacer = Callable[[Mapping[str, Any], CacheProfile | None, Reach], dict[str, Any] | None]
"""A client's body with the format's cache breakpoints placed where the client's own leave
room and reach (`Reach`), for the model's profile; None when nothing is added (the client's
own fill the provider's limit, or it is not shaped for them). The client's markers are
never moved or changed."""
ServerTools = Callable[[object], bool]
"""Whether a request's tools (decoded from its canonical tools text) include one the
provider runs itself (web search, code execution), whose results it bills as the request's
input though they are in no request: such tokens are never a reusable prefix."""
TtlReader = Callable[[JsonRead, Pieces], str | None]
"""The TTL a logged body writes for (its markers' or its retention field's); None: the
model's default."""


def load(reference: str) -> Any:
    """What a lazy `"module:attribute"` reference names, imported only now (so a record
    can name an SDK's classes without importing the SDK until they are used)."""
    module_name, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


@dataclass(frozen=True)
class RoutingKey:
    """Where a host reads a conversation's routing key: `field`, a key of the request
    body (`prompt_cache_key`), or `header`, an HTTP header (`x-grok-conv-id`); neither
    when the host documents none (providers/routing.py)."""

    field: str | None = None
    header: str | None = None


@dataclass(frozen=True)
class WireFormat:
    """One wire format: its layouts, its keep-alive answer, its cache rules, and how the
    audit finds it in a log.

    `layout`: the payload warmloop renders; `logged_layout`: a logged HTTP body when it
    differs (Gemini's REST body against the SDK's keyword arguments). `answer`: the key
    path of the answer's size, `least_answer` the least a keep-alive may ask for, raised
    above `thinking_budget` where that path holds a budget. `explicit_breakpoints`: the
    cache reads and writes only at the request's own markers. `per_request_ttls`: the TTLs
    `write_ttl` can choose for one request (`any` for every TTL the markers take).
    `prewarm`: the payload as a request that prepares the cache and generates nothing, where
    the format carries it (OpenAI Responses' `prompt_cache_options.prewarm`; the model must
    take it too: `CacheProfile.prewarm`).
    `endpoint`: a pattern a logged path of this format matches (a group, if any, is the
    model). `provider`: the prefix a logged request is priced under when its model names
    no family. `diagnostics_host`: the one upstream whose cache diagnostics the proxy may
    ask for, `diagnostics_field` the (object, key) a request names the earlier response
    in, `diagnostics_beta` the beta header value that asking needs, and
    `asks_without_baseline` whether to ask when there is no earlier response to name.
    `logged_unprompted`: nested keys of a logged body that are no part of the
    prompt. `silence_is_unchanged`: a request that named an earlier one and got no
    diagnostics back was told "no divergence". `read_usage`: this format's usage object
    as warmloop's `Usage` (what the audit reads once it knows the format).

    What the exchange readers (`exchange/`) ask of a format instead of naming it:
    `detect` and `claims_usage` (how specifically a body or a usage object has its shape,
    for a log line with no endpoint path), `read_verdict` (its cache diagnostics),
    `pieces` (the blocks its lookback counts, where the cache reads at markers),
    `written_ttl` (the TTL a body writes for), `place_breakpoints` (the proxy's markers
    where the client placed none; placed on any host where the cache reads only at
    markers, else only on the provider's own host), `beta_header` (the header
    `diagnostics_beta` is added to), `server_tools` (whether its tools include one the
    provider runs, whose results are billed as input: `ServerTools`), `renderer`
    (`"module:Class"` of the renderer that writes its payloads, for a model that speaks it
    without being it: the scripted model) and `normal_form` (a client's body with each part
    the model reads alike written one way, so two forms of one prompt compare equal: the
    proxy's conversations, the audit).
    """

    name: str
    layout: WireLayout
    provider: str
    answer: tuple[str, ...]
    least_answer: int = 1
    logged_layout: WireLayout | None = None
    thinking_budget: tuple[str, ...] | None = None
    explicit_breakpoints: bool = False
    per_request_ttls: frozenset[str] | str = frozenset()
    write_ttl: TtlWriter | None = None
    prewarm: PayloadWriter | None = None
    endpoint: str = ""
    diagnostics_host: str | None = None
    diagnostics_field: tuple[str, str] | None = None
    diagnostics_beta: str | None = None
    asks_without_baseline: bool = False
    logged_unprompted: tuple[tuple[str, ...], ...] = ()
    silence_is_unchanged: bool = False
    read_usage: UsageReader | None = None
    detect: Claim | None = None
    claims_usage: Claim | None = None
    read_verdict: VerdictReader | None = None
    pieces: PieceReader | None = None
    written_ttl: TtlReader | None = None
    place_breakpoints: BreakpointPlacer | None = None
    beta_header: str | None = None
    renderer: str | None = None
    server_tools: ServerTools | None = None
    normal_form: PayloadWriter | None = None

    @property
    def per_request_ttl(self) -> bool:
        """Whether a request in this format can choose its own TTL."""
        return self.write_ttl is not None and bool(self.per_request_ttls)

    def takes_ttl(self, ttl: str) -> bool:
        """Whether one request in this format can be written for `ttl`."""
        return self.per_request_ttl and (
            self.per_request_ttls == "any" or ttl in self.per_request_ttls
        )

    def endpoint_match(self, path: str) -> re.Match[str] | None:
        """The match of this format's endpoint in a logged path, or None."""
        return re.search(self.endpoint, path) if self.endpoint else None


@dataclass(frozen=True)
class ProviderRecord:
    """One provider: how it is selected and built, and what it is called.

    `model`: `"module:Class"`, the class taking the model name first. `needs_name`: True
    (`prefix:name`), False (`prefix` alone), None (either). `extra`: the pip extra its SDK
    comes with. `families`: lower-case model-name starts that belong to it. `tokenizer`:
    the name of an o200k-style encoding that counts its tokens exactly, or None;
    `token_counter` a `"module:function"` (text -> tokens) that counts them instead.
    `in_process`: the model runs in this process (it takes a context size, `n_ctx`).
    `client`: `"module:Class"` of the SDK client its model builds; `errors`:
    `"module:NAME"` of the `SdkErrors` its failures are read by (providers/failures.py);
    `routing`: where its host reads a conversation's routing key; `hosts`: the API hosts
    that serve it, where `warmloop proxy` may add that key (another host speaking its wire
    may refuse a field it never documented). (An engine that bills nothing per token is
    one whose provider profile has `mode: engine`: `facts.profiles.bills_nothing`; no price
    is looked up or accepted for it.) `listed`: False for a provider no selection string
    builds (scripted models are made in code). `settings`: where its requests keep each
    `ModelSettings` field it documents (providers/model_settings.py); a setting it does
    not place is refused naming the provider, before any request. `options`:
    `"module:Name"` of the `TypedDict` of its model's keyword options
    (providers/option_check.py), which `resolve_model` checks their values against. `about`: what
    the CLI's `--model` help says of it beyond its example. `checks_answers`: `warmloop run`
    checks a short answer against what the run has read (`workspace.grounding`), measured
    to help this model; on a paid API a refused right answer would cost a whole request.
    `audit_reference`: the model whose rules every audit prices a log under, beside the
    model the log used (none: the audit leaves this provider out unless asked).
    """

    prefix: str
    model: str
    wire_format: str | None = None
    needs_name: bool | None = True
    aliases: tuple[str, ...] = ()
    extra: str = "all"
    key_variables: tuple[str, ...] = ()
    telemetry_name: str = ""
    display_name: str = ""
    families: tuple[str, ...] = ()
    tokenizer: str | None = None
    example: str = ""
    in_process: bool = False
    client: str | None = None
    errors: str | None = None
    routing: RoutingKey | None = None
    hosts: tuple[str, ...] = ()
    token_counter: str | None = None
    listed: bool = True
    settings: tuple[Place, ...] = ()
    options: str | None = None
    about: str = ""
    checks_answers: bool = False
    audit_reference: str = ""

    def place(self, setting: str) -> Place | None:
        """Where its requests keep `setting`, or None when it does not take it."""
        return next((p for p in self.settings if p.setting == setting), None)

    @property
    def key_names(self) -> str:
        """Where its key is looked up, in words: `GEMINI_API_KEY (or GOOGLE_API_KEY)`."""
        return key_names(*self.key_variables) if self.key_variables else "no variable"

    def client_class(self) -> Any:
        """The SDK client class its model builds (imported now)."""
        if self.client is None:
            raise ConfigurationError(f"provider {self.prefix!r} names no SDK client (client=)")
        return load(self.client)

    def sdk_errors(self) -> Any:
        """The `SdkErrors` its failures are read by (imported now)."""
        if self.errors is None:
            raise ConfigurationError(f"provider {self.prefix!r} names no error mapping (errors=)")
        return load(self.errors)

    def counter(self) -> Callable[[str], int] | None:
        """Its own token counter (`token_counter`), or None."""
        return load(self.token_counter) if self.token_counter is not None else None

    @property
    def system_name(self) -> str:
        """Its `gen_ai.provider.name` (the prefix unless it names another)."""
        return self.telemetry_name or self.prefix

    @property
    def shown_name(self) -> str:
        """Its name for people (the prefix unless it names another)."""
        return self.display_name or self.prefix
