"""A model with `ModelSettings` applied: each request it renders carries them where its
provider's record places them (`ProviderRecord.settings`).

`with_settings` checks every setting against the record before anything is sent, so a
setting the provider does not document is a ConfigurationError naming the provider and the
setting, never a 400 from its API. The settings are part of the rendered payload, the same
on every step of a run, so each request still extends the one before (I1). Settings the
provider keys its cache on (`Place.keys_cache`: Anthropic's thinking and tool choice) are
in the stream the prefix guard compares, so changing them between runs of one conversation
is reported as the bust it causes; sampling settings (temperature, a stop sequence, ...)
read nothing from the cache and stay out of the stream, as a routing key does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.facts.model_facts import ModelFacts
from warmloop.providers.base import Model, ModelResponse, Rendered, WrappedModel
from warmloop.providers.deltas import Delta, stream_or_send
from warmloop.providers.model_settings import KeepsSettings, ModelSettings, Place, check_settings
from warmloop.providers.records import ProviderRecord
from warmloop.providers.registry import provider_of
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript


def places(model: Model, settings: ModelSettings) -> tuple[Place, ...]:
    """Where `model`'s provider keeps each of `settings`; a setting it does not take (or a
    value it does not) is a ConfigurationError naming the provider and the setting."""
    record = provider_of(model.name)
    found: list[Place] = []
    for setting, value in settings.items():
        place = record.place(setting) if record is not None else None
        if record is None or place is None:
            raise ConfigurationError(unsupported(model, record, setting))
        if place.values and value not in place.values:
            raise ConfigurationError(
                f"provider {record.shown_name} ({record.prefix}:) takes {setting} "
                f"{', '.join(place.values)}, not {value!r} (model {model.name!r})"
            )
        found.append(place)
    return tuple(found)


def unsupported(model: Model, record: ProviderRecord | None, setting: str) -> str:
    """Why `setting` is refused for `model`, and what it takes instead."""
    if record is None:
        return (
            f"model {model.name!r} belongs to no registered provider, so it takes no model "
            f"setting ({setting}); set it on the model itself"
        )
    taken = ", ".join(p.setting for p in record.settings) or "none"
    return (
        f"provider {record.shown_name} ({record.prefix}:) does not take the model setting "
        f"{setting} (model {model.name!r}); the settings it takes: {taken}"
    )


def with_settings(model: Model, settings: object) -> Model:
    """`model` sending `settings` with every request (checked now, before any request);
    `model` itself when there are none."""
    checked = check_settings(settings)
    if not checked:
        return model
    return SettingsModel(model, checked, places(model, checked))


def _put(
    payload: Mapping[str, Any] | KeepsSettings, place: Place, value: Any
) -> Mapping[str, Any] | KeepsSettings:
    """A copy of `payload` with `value` at `place.path` (containers copied on the way; a
    list already there, such as a protocol's own stop sequences, is kept and extended).
    A request that is no dict keeps it itself (`KeepsSettings`)."""
    if not isinstance(payload, Mapping):
        return payload.with_setting(place.path, value)
    out = dict(payload)
    node = out
    for key in place.path[:-1]:
        child = node.get(key)
        node[key] = node = dict(child) if isinstance(child, Mapping) else {}
    last = place.path[-1]
    held = node.get(last)
    if isinstance(held, list) and isinstance(value, list):
        value = held + [item for item in value if item not in held]
    node[last] = value
    return out


class SettingsModel(WrappedModel):
    """A model whose every request carries `settings` (see the module docstring). Its facts
    keep `max_tokens` for the answer when that setting is given."""

    def __init__(self, model: Model, settings: ModelSettings, placed: Sequence[Place]) -> None:
        super().__init__(model)
        self.settings = settings
        self._placed = tuple(zip(placed, settings.values(), strict=True))
        self._facts_of: tuple[ModelFacts, ModelFacts] | None = None
        answer = self.facts.output_reserve  # checks max_tokens against the window now
        budget = settings.get("thinking_budget")
        if budget and answer and budget >= answer:
            # Thinking is part of the answer's limit (Anthropic "Extended thinking":
            # budget_tokens below max_tokens; Gemini counts thoughts in max_output_tokens).
            raise ConfigurationError(
                f"model setting thinking_budget ({budget}) must be below the answer's limit "
                f"({answer}, max_tokens) for {self.name}; raise max_tokens or lower it"
            )

    @property
    def facts(self) -> ModelFacts:
        """The wrapped model's facts, with `max_tokens` as the answer's reserve."""
        facts = self.model.facts
        reserve = self.settings.get("max_tokens")
        if reserve is None:
            return facts
        if self._facts_of is None or self._facts_of[0] is not facts:
            if reserve >= facts.context_window:
                raise ConfigurationError(
                    f"model setting max_tokens ({reserve}) must be below {self.name}'s "
                    f"context window ({facts.context_window}) to leave room for the prompt"
                )
            self._facts_of = (facts, replace(facts, output_reserve=reserve))
        return self._facts_of[1]

    async def discover(self) -> ModelFacts:
        """The wrapped model's discovery, then these facts."""
        await self.model.discover()
        return self.facts

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """The wrapped model's request with the settings in place (pure, as it is)."""
        rendered = self.model.render(transcript, tools)
        if not isinstance(rendered.payload, Mapping | KeepsSettings):
            raise ConfigurationError(
                f"model {self.name!r} renders no request body to put model settings in"
            )
        sent: Mapping[str, Any] | KeepsSettings = rendered.payload
        compared = sent  # what the guard sees: the settings the cache is keyed on only
        for place, value in self._placed:
            shaped = place.value(value)
            sent = _put(sent, place, shaped)
            if place.keys_cache:
                compared = _put(compared, place, shaped)
        derive = rendered.derive
        return replace(rendered, payload=sent, derive=lambda _sent: derive(compared))

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """Streamed by the wrapped model where it streams (sent otherwise): settings never
        cost a run its deltas."""
        return await stream_or_send(self.model, rendered, session_id=session_id, deltas=deltas)
