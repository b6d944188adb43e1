"""A model named by a string whose API key is not set yet: the key is checked when the model
is first needed for a run, not when it is named, so importing an application that builds
`Agent("openai:gpt-5")` at module level needs no key (a test run may never send a request,
or swap the model with `agent.override`).

Until then its facts are the dated tables' for the string (a model named with options is
built by `resolve_model`, which checks its key at once); from then on it is the model
`resolve_model` builds, and a key still missing is `MissingApiKey` where the run starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from warmloop.errors import MissingApiKey
from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.providers.base import Model, ModelResponse, Rendered
from warmloop.providers.deltas import Delta, stream_or_send
from warmloop.providers.select import resolve_model
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript


def model_named(spec: str) -> Model:
    """The model `spec` selects (`resolve_model`), or, where only its API key is missing,
    one that checks the key when first needed (`KeyLater`)."""
    try:
        return resolve_model(spec)
    except MissingApiKey:
        return KeyLater(spec)


class KeyLater:
    """The model a selection string names, built when its key is first needed (see the
    module docstring)."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.name = spec.strip()
        self._model: Model | None = None
        self._table = table_facts(self.name)

    def resolved(self) -> Model:
        """The model itself, built now if it is not yet: `MissingApiKey` while no key is
        set (the error names the variable to set)."""
        if self._model is None:
            self._model = resolve_model(self.spec)
            self.name = self._model.name
        return self._model

    @property
    def facts(self) -> ModelFacts:
        """The model's facts once its key is set; the tables' for the string before."""
        try:
            return self.resolved().facts
        except MissingApiKey:
            return self._table

    async def discover(self) -> ModelFacts:
        """The model's own discovery (its key checked first)."""
        return await self.resolved().discover()

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """The model's own render (its key checked first)."""
        return self.resolved().render(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Sent by the model itself."""
        return await self.resolved().send(rendered, session_id=session_id)

    async def stream(
        self, rendered: Rendered, *, session_id: str, deltas: Callable[[Delta], None]
    ) -> ModelResponse:
        """Streamed by the model itself where it streams."""
        return await stream_or_send(self.resolved(), rendered, session_id=session_id, deltas=deltas)
