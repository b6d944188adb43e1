"""What the proxy keeps of each conversation while it serves: each model request filed in
its conversation (`proxy.conversations`), a bust reported as it happens (`proxy.bust_report`),
the fixes applied (`proxy.fixes`), each answer's usage added to the conversation's
figures, a miss named with its dollars as it is answered (`proxy.misses`), and its pause
kept warm (`proxy.keepalive`). A GPT-5.6 conversation whose requests go upstream without
`prompt_cache_key` is warned of once, by the rule the `openai:` model warns by
(`providers.routing.sends_cache_key`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx2

from warmloop.exchange import json_body
from warmloop.exchange.formats import model_name, own_profile
from warmloop.exchange.log import LoggedRequest
from warmloop.exchange.response_facts import read_verdict
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.providers.routing import sends_cache_key
from warmloop.proxy.bust_report import report_bust
from warmloop.proxy.conversations import LiveConversations, Placed
from warmloop.proxy.fixes import BREAKPOINTS, Fixes, apply, home_provider
from warmloop.proxy.keepalive import Caps, KeepAlives
from warmloop.proxy.misses import LiveMisses
from warmloop.proxy.retention import longer_ttl
from warmloop.proxy.returns import kind_of
from warmloop.proxy.status import Forwarded, saved_usd, status_page
from warmloop.proxy.tracing import trace_bust

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

KEY_REMEDY = (
    "have the client send prompt_cache_key, or point the proxy at api.openai.com with "
    "--cache-key on"
)
"""What the warning of a GPT-5.6 conversation left without its key tells a proxy user."""


class Live:
    """The proxy's conversations, fixes and keep-alives (see the module docstring)."""

    def __init__(
        self,
        upstream: str,
        fixes: Fixes,
        keepalive: Caps | None,
        client: httpx2.Client,
        clock: Callable[[], float],
        warn: Callable[[str], None],
        tracer: Tracer | None = None,
        affinity: float | None = None,
    ) -> None:
        self.upstream = upstream
        self.tracer = tracer
        """Traces each bust as an OpenTelemetry span event (None: not traced)."""
        self.fixes = fixes
        self.warn = warn
        self.keepalives = (
            KeepAlives(client, clock, keepalive, warn) if keepalive is not None else None
        )
        self.misses = LiveMisses(affinity)
        """Names each miss as it is answered (`affinity`: the router's window, if known)."""
        self.conversations = LiveConversations(clock, on_forget=self._forget)

    def _forget(self, conversation: str) -> None:
        """Drop what the keep-alives and the miss guard held for a forgotten conversation."""
        if self.keepalives is not None:
            self.keepalives.forget(conversation)
        self.misses.forget(conversation)

    def place(
        self,
        wire: WireFormat,
        request: dict[str, Any],
        headers: list[tuple[str, str]],
        path: str = "",
    ) -> Forwarded:
        """File a model request in its conversation, report a bust, apply the fixes, and
        note it for the miss guard. A body its format cannot read is filed nowhere and goes
        as sent."""
        placed = self.conversations.place(wire, request)
        if placed is None:
            return Forwarded(None, request, headers)
        if self.keepalives is not None:
            self.keepalives.resumed(placed.conversation.id)
        bust = placed.check.bust if placed.check is not None else None
        if bust is not None:
            report_bust(placed.conversation.id, bust, self.warn)
        provider = home_provider(self.upstream, wire)
        forwarded = self._fixed(wire, placed, provider, request, headers, path)
        self._noted(placed, provider, forwarded, path)
        return forwarded

    def _fixed(
        self,
        wire: WireFormat,
        placed: Placed,
        provider: ProviderRecord | None,
        request: dict[str, Any],
        headers: list[tuple[str, str]],
        path: str,
    ) -> Forwarded:
        """The request as it goes upstream, with the fixes that are on."""
        if not self.fixes.any:
            return Forwarded(placed, request, headers)
        conversation = placed.conversation
        fixed = apply(
            self.fixes, wire, provider, request, headers, conversation.routing, conversation.reach
        )
        if self.keepalives is not None and BREAKPOINTS in fixed.added and fixed.body:
            tally = self.keepalives.tally(placed.conversation.id)
            longer = longer_ttl(wire, request, path, fixed.body, tally.last, tally.history)
            if longer is not None:  # a longer TTL pays (`proxy.retention`)
                body, ttl = longer
                return Forwarded(placed, request, fixed.headers, body, fixed.added, ttl)
        return Forwarded(placed, request, fixed.headers, fixed.body, fixed.added)

    def _noted(
        self, placed: Placed, provider: ProviderRecord | None, forwarded: Forwarded, path: str
    ) -> None:
        """Note the request for the miss guard, and warn once per conversation where a
        model that needs `prompt_cache_key` gets none."""
        if placed.entry is None:
            return
        body: Mapping[str, Any] = forwarded.request
        if forwarded.body is not None and placed.entry.wire.pieces is not None:
            sent = json_body.loads(forwarded.body)  # its markers as they went: the proxy's too
            body = sent if isinstance(sent, dict) else body
        entry = replace(placed.entry, record=LoggedRequest(0, body, path=path))
        check = placed.check
        shared = None if check is not None and check.bust is not None else 0
        if check is not None and check.bust is None:
            shared = check.reusable
        at = self.conversations.clock()
        numbers = (placed.number, placed.parent)
        conversation = placed.conversation.id
        self.misses.sent(conversation, entry, numbers, shared, at, forwarded.added, forwarded.ttl)
        keyed = "prompt_cache_key" in forwarded.request or "prompt_cache_key" in forwarded.added
        if check is None and not keyed:
            profile = own_profile(entry.wire, model_name(forwarded.request, path))
            on = None if self.fixes.cache_key else False
            sends_cache_key(on, provider is not None, profile, KEY_REMEDY)

    def answered(
        self,
        wire: WireFormat,
        sent: Forwarded,
        exchange: tuple[httpx2.URL, bytes, int],
        path: str,
        raw_usage: dict[str, Any],
        asked_tool: bool | None = None,
    ) -> None:
        """Add an answered request's usage to its conversation's figures (with what the
        breakpoints the proxy placed saved, where it placed them), and start its pause (of
        the kind the answer makes it: `proxy.returns`). `exchange`: the URL, the body as
        forwarded (before `--diagnose`'s fields) and the status."""
        usage = wire.read_usage(raw_usage) if wire.read_usage is not None else None
        if usage is None or sent.placed is None:
            return
        saved = None
        if BREAKPOINTS in sent.added:
            saved = saved_usd(wire, sent.request, path, usage)
        conversation = sent.placed.conversation
        self.conversations.answered(conversation, usage, saved)
        url, body, status = exchange
        if status < 400:
            miss = self.misses.answered(sent.placed.number, usage, self.conversations.clock())
            if miss is not None:
                self.warn(str(miss))
        if self.keepalives is not None and status < 400:
            self.keepalives.paused(
                conversation.id,
                wire,
                url,
                sent.headers,
                body,
                path,
                usage,
                sent.ttl,
                kind_of(asked_tool),
                conversation.agent,
            )

    def traced(
        self, wire: WireFormat, sent: Forwarded, path: str, diagnostics: dict[str, Any] | None
    ) -> None:
        """Trace a request reported as a bust, once answered, with the provider's verdict
        where `--diagnose` asked for one (`diagnostics`: None where it did not)."""
        placed = sent.placed
        bust = placed.check.bust if placed is not None and placed.check is not None else None
        if self.tracer is None or placed is None or bust is None:
            return
        verdict = read_verdict(diagnostics, wire)
        trace_bust(self.tracer, placed.conversation.id, wire, sent.request, path, bust, verdict)

    def status(self) -> dict[str, Any]:
        """The status page's figures (`proxy.status`)."""
        figures = self.keepalives.figures if self.keepalives is not None else None
        return status_page(self.conversations.snapshot(), figures, self.misses.figures)
