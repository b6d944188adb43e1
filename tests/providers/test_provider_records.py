"""A provider family added from outside the package as one folder with one registration,
through the hooks the built-ins use (the `acme:` provider of tests/support/acme/), selects,
renders, prices, audits and sends a keep-alive with no edit to warmloop's files; the
registry refuses a duplicate; and every built-in provider follows the same recipe."""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.acme import tables as acme_tables
from warmloop.audit.report import audit
from warmloop.errors import ConfigurationError, ProviderError, RateLimited
from warmloop.exchange.log import read_log
from warmloop.facts import profiles
from warmloop.facts.model_names import split_model_name
from warmloop.facts.price_table import PRICES_ENV, is_unpriced_engine, prices_for
from warmloop.keepalive.ping import keepalive_request
from warmloop.maintenance.size import TokenCounter
from warmloop.messages import SystemText, UserText
from warmloop.providers import registry
from warmloop.providers.records import ProviderRecord, WireFormat
from warmloop.providers.registry import provider_of, register_provider, register_wire_format
from warmloop.providers.select import resolve_model
from warmloop.transcript import Transcript

ACME_KEY = "acme-secret-key-0123"


@pytest.fixture
def acme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Registrations last for the test only: the registry's and the table's state is restored.
    for name in ("_providers", "_by_alias", "_formats"):
        monkeypatch.setattr(registry, name, dict(getattr(registry, name)))
    monkeypatch.setattr(profiles, "_registered", [])
    prices = tmp_path / "acme-prices.json"
    prices.write_text(json.dumps(acme_tables.PRICES), "utf-8")
    monkeypatch.setenv(PRICES_ENV, str(prices))
    monkeypatch.setenv("ACME_API_KEY", ACME_KEY)
    # The folder's one registration, as an application's `import` of it makes it (afresh
    # for each test: the registry is restored after it).
    for name in ("tests.support.acme.record", "tests.support.acme.model"):
        if name in sys.modules:
            importlib.reload(sys.modules[name])
        else:
            importlib.import_module(name)
    profiles.register_profiles(json.dumps(acme_tables.PROFILES))
    yield
    profiles.profile_table.cache_clear()


def _acme_record() -> ModuleType:
    """Acme's record module as last registered."""
    return sys.modules["tests.support.acme.record"]


def _acme_model() -> ModuleType:
    """Acme's model module, reading the record last registered."""
    return sys.modules["tests.support.acme.model"]


def _transcript() -> Transcript:
    t = Transcript()
    t.append(SystemText("You answer questions about cities."))
    t.append(UserText("Which country is Paris in? " * 400))
    return t


@pytest.mark.usefixtures("acme")
def test_an_outside_provider_selects_renders_prices_and_keeps_alive() -> None:
    model = resolve_model("acme:acme-1")
    assert isinstance(model, _acme_model().AcmeModel)
    assert model.facts.profile.provider == "acme"
    assert model.facts.context_window == 64000
    prices = prices_for("acme:acme-1")
    assert prices is not None
    assert prices.rates.input == 1.0
    rendered = model.render(_transcript(), [])
    keep = keepalive_request(rendered)
    assert keep is not None
    assert keep.payload["limit"] == 1
    asyncio.run(model.send(keep, session_id="s"))
    assert model.sent == [keep]
    assert keep.keepalive
    assert provider_of("acme:acme-1") is _acme_record().RECORD


@pytest.mark.usefixtures("acme")
def test_an_outside_provider_is_audited_by_its_endpoint_family_and_prices(
    tmp_path: Path,
) -> None:
    body = {"model": "acme-1", "preamble": "Be brief.", "turns": ["x " * 3000], "limit": 9}
    later = {**body, "turns": ["x " * 3000, "and then?"]}
    log = tmp_path / "acme.jsonl"
    usage = {"fresh": 1500, "reused": 100, "said": 1}  # Acme's own usage shape
    lines = [
        json.dumps({"at": 100.0 + k, "path": "/acme/v1/complete", "body": b, "usage": usage})
        for k, b in enumerate((body, later))
    ]
    log.write_text("\n".join(lines) + "\n")
    report = audit(read_log(log))
    assert report.skipped == (), report.skipped
    (conversation,) = report.conversations
    assert conversation.format == "acme-wire"
    assert conversation.costs[0].provider == "acme:acme-1"
    assert conversation.costs[0].actual > 0
    assert [f.divergence for f in conversation.findings] == [None, None]
    # Its usage was read by its own wire format's reader, not guessed from the keys.
    assert [(f.prompt_tokens, f.estimated) for f in conversation.findings] == [(1600, False)] * 2


@pytest.mark.usefixtures("acme")
def test_an_outside_provider_reads_its_key_from_its_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = resolve_model("acme:acme-1")
    assert isinstance(model, _acme_model().AcmeModel)
    assert model.api_key == ACME_KEY
    monkeypatch.delenv("ACME_API_KEY")
    with pytest.raises(ConfigurationError, match="ACME_API_KEY"):
        resolve_model("acme:acme-1")


@pytest.mark.usefixtures("acme")
def test_an_outside_provider_maps_its_own_errors_and_routes_by_its_record() -> None:
    model = resolve_model("acme:acme-1")
    assert isinstance(model, _acme_model().AcmeModel)
    model.fail = _acme_model().AcmeError(401, f"key {ACME_KEY} is revoked")
    with pytest.raises(ProviderError) as refused:
        asyncio.run(model.send(model.render(_transcript(), []), session_id="s"))
    text = str(refused.value)
    assert text.startswith("acme:acme-1: authentication failed (401)"), text
    assert "check the API key in ACME_API_KEY" in text
    assert ACME_KEY not in text
    model.fail = _acme_model().AcmeError(429, "slow down")
    with pytest.raises(RateLimited):
        asyncio.run(model.send(model.render(_transcript(), []), session_id="s"))
    model.fail = None
    asyncio.run(model.send(model.render(_transcript(), []), session_id="conv-1"))
    assert model.headers == [{"x-acme-thread": "conv-1"}]


@pytest.mark.usefixtures("acme")
def test_an_outside_provider_counts_tokens_with_its_own_tokenizer() -> None:
    # One token per word (Acme's), not the default four characters per token.
    assert TokenCounter("acme:acme-1").count("one two three four five six") == 6


@pytest.mark.usefixtures("acme")
def test_a_duplicate_prefix_or_wire_format_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="already registered"):
        register_provider(_acme_record().RECORD)
    with pytest.raises(ConfigurationError, match="already registered"):
        register_wire_format(_acme_record().WIRE_FORMAT)


def test_the_selection_string_is_split_in_one_place() -> None:
    assert split_model_name(" anthropic:claude-x ") == ("anthropic", "claude-x")
    assert split_model_name("local") == ("local", "")


@pytest.mark.usefixtures("acme")
def test_a_record_that_bills_nothing_is_never_priced() -> None:
    assert is_unpriced_engine("local")
    assert is_unpriced_engine("openai-compatible:x")
    assert is_unpriced_engine("scripted")
    assert not is_unpriced_engine("acme-box:m")
    register_provider(ProviderRecord("acme-box", _acme_record().RECORD.model))
    assert not is_unpriced_engine("acme-box:m")  # a record alone says nothing of billing
    engine = acme_tables.PROFILES["providers"]["acme"] | {"mode": "engine"}
    profiles.register_profiles(json.dumps({"providers": {"acme-box": engine}, "models": {}}))
    assert is_unpriced_engine("acme-box:m")


def _folder_records() -> dict[str, list[ProviderRecord | WireFormat]]:
    """Each built-in provider folder's record module: the records it registers."""
    found: dict[str, list[ProviderRecord | WireFormat]] = {}
    for name in registry.BUILT_IN:
        if not name.endswith(".record"):
            continue
        module = importlib.import_module(name)
        held: list[ProviderRecord | WireFormat] = []
        for value in vars(module).values():
            values = value if isinstance(value, tuple) else (value,)
            held += [v for v in values if isinstance(v, ProviderRecord | WireFormat)]
        found[name.removesuffix(".record")] = held
    return found


def _behaviour(fmt: WireFormat) -> list[object]:
    return [
        getattr(fmt, field)
        for field in (
            "read_usage",
            "detect",
            "claims_usage",
            "read_verdict",
            "pieces",
            "written_ttl",
            "place_breakpoints",
            "write_ttl",
            "prewarm",
        )
        if getattr(fmt, field) is not None
    ]


def test_every_built_in_provider_is_one_folder_with_one_registration() -> None:
    """The recipe a third party follows is the built-ins' own: every registered provider and
    wire format comes from one folder's `record` module, and everything its record names
    (model, errors, options, renderer, each behaviour) lives in that folder."""
    folders = _folder_records()
    assert set(folders) == {
        "warmloop.providers.anthropic",
        "warmloop.providers.openai",
        "warmloop.providers.gemini",
        "warmloop.providers.local",
    }
    owner = {id(r): folder for folder, held in folders.items() for r in held}
    for record in registry.providers():
        folder = owner[id(record)]
        for reference in (record.model, record.errors, record.options):
            assert reference is None or reference.startswith(folder + "."), (record, reference)
    for fmt in registry.wire_formats():
        folder = owner[id(fmt)]
        assert fmt.renderer is None or fmt.renderer.startswith(folder + ".")
        for behaviour in _behaviour(fmt):
            module = getattr(behaviour, "__module__", "")
            assert module.startswith(folder + "."), (fmt.name, behaviour, module)


@pytest.mark.parametrize(
    "first",
    [
        "warmloop.providers.openai.responses",
        "warmloop.providers.anthropic.record",
        "warmloop.providers.scripted",
        "warmloop.providers.gemini.model",
    ],
)
def test_a_provider_module_imported_first_registers_and_the_listing_keeps_its_order(
    first: str,
) -> None:
    """A user may import a model class straight from its folder before anything else: the
    folder's record registers, the rest load on the first lookup, and providers are listed
    in the same order whichever came first (the audit's default references follow it)."""
    code = (
        f"import {first}\n"
        "from warmloop.providers.registry import providers\n"
        "from warmloop.audit.costs import default_providers\n"
        "print([p.prefix for p in providers()], default_providers())"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert shown == (
        "['local', 'anthropic', 'openai', 'openai-chat', 'deepseek', 'xai', "
        "'openai-compatible', 'gemini'] ('anthropic:claude-sonnet-4-6', 'openai:gpt-5', "
        "'deepseek:deepseek-flash', 'gemini:gemini-2.5-flash')"
    )


def test_threads_that_look_up_first_together_all_see_every_built_in() -> None:
    """The built-ins load on the first lookup: two threads looking up at once (a proxy's
    first two requests) both wait for all of them. A second thread that went on while the
    first was still loading found no wire format for a path, and its request went unlogged."""
    code = """
import threading
from warmloop.providers.registry import wire_formats, providers
gate = threading.Barrier(16)
seen = []
def look():
    gate.wait()
    seen.append((len(list(wire_formats())), len(list(providers()))))
threads = [threading.Thread(target=look) for _ in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(set(seen)))
"""
    for _ in range(3):
        shown = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert shown == "[(4, 8)]"
