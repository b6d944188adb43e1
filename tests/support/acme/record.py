"""Acme's record: its wire format and the `acme:` provider, and the one registration
(through the calls warmloop's own providers make)."""

from __future__ import annotations

from tests.support.acme import readers
from warmloop.providers.records import ProviderRecord, RoutingKey, WireFormat
from warmloop.providers.registry import register_provider, register_wire_format
from warmloop.wire.stream import WireLayout

LAYOUT = WireLayout("acme-wire", ("turns",), ("tools",), ("preamble",))
WIRE_FORMAT = WireFormat(
    LAYOUT.name,
    LAYOUT,
    provider="acme",
    answer=("limit",),
    endpoint=r"/acme/v1/complete$",
    read_usage=readers.read_usage,
    detect=readers.detect,
)
RECORD = ProviderRecord(
    "acme",
    "tests.support.acme.model:AcmeModel",
    LAYOUT.name,
    key_variables=("ACME_API_KEY",),
    display_name="Acme",
    families=("acme-",),
    example="acme:acme-1",
    errors="tests.support.acme.model:ERRORS",
    routing=RoutingKey(header="x-acme-thread"),
    token_counter="tests.support.acme.readers:count_tokens",
)

register_wire_format(WIRE_FORMAT)
register_provider(RECORD)
