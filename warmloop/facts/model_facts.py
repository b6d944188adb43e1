"""What a model is, as far as cost decisions go: its context window, its cache rules under
the retention in use, its prices. The model carries these facts (`Model.facts`); every
decision reads them there, never from a model name or a `getattr` probe.

Each fact says where it came from: `told` (an option the user set), `discovered` (the
server published it), `learned` (the wire said so: a rejection naming the limit), `table`
(the dated tables shipped with warmloop name this model) or `assumed` (nothing did).
An assumed window is never acted on: results are not cut to a share of it and a warm
cache is not rewritten for it (`ModelFacts.window` is None); the run says so once
(`ModelFacts.assumptions`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from warmloop.errors import ConfigurationError
from warmloop.facts.price_table import Prices, prices_for
from warmloop.facts.profiles import CacheProfile, profile_table

Source = Literal["told", "discovered", "learned", "table", "assumed"]
SOURCES: tuple[Source, ...] = ("told", "discovered", "learned", "table", "assumed")
MIN_WINDOW = 256
"""The smallest context window warmloop accepts from anyone (tokens)."""


@dataclass(frozen=True)
class ModelFacts:
    """The facts cost decisions rest on, each with where it came from.

    `profile`: the cache rules under the retention in use (`profile.ttl`). `priced_as`:
    the selection string whose entry of the price table bills this model (looked up when
    asked, so a price file set later counts). `context_window`: tokens
    a request may hold, prompt and answer together; `output_reserve`: the part of it kept
    for the answer. `option`: how a user states the window for this model (for messages).
    """

    profile: CacheProfile
    priced_as: str
    context_window: int
    window_source: Source
    output_reserve: int = 0
    option: str = "context_window="
    window_note: str = ""
    """Where the window was looked for or found, for people (e.g. the server's endpoint)."""

    def __post_init__(self) -> None:
        check_window(self.context_window, "context_window")
        if self.window_source not in SOURCES:
            raise ConfigurationError(f"a fact's source is one of {SOURCES}")
        if not 0 <= self.output_reserve < self.context_window:
            raise ConfigurationError(
                f"the output reserve ({self.output_reserve}) must be below the context "
                f"window ({self.context_window})"
            )

    @property
    def prices(self) -> Prices | None:
        """USD rates from the price table; None when unpriced (a self-hosted engine) or
        unknown."""
        return prices_for(self.priced_as)

    @property
    def window_known(self) -> bool:
        """Whether the window is a fact (told, discovered, learned, from the table)."""
        return self.window_source != "assumed"

    @property
    def window(self) -> int | None:
        """Prompt tokens that fit (the window less the output reserve), or None when the
        window is only assumed: then nothing may be cut or rewritten for its sake."""
        if not self.window_known:
            return None
        return self.context_window - self.output_reserve

    def told_window(
        self, tokens: int | None, source: Source = "told", note: str = ""
    ) -> ModelFacts:
        """These facts with the window stated (`tokens` None: unchanged). A reserve for the
        answer larger than half a small window stated now (discovered, learned) is cut to
        that half: the prompt keeps room, and nobody is there to refuse it to."""
        if tokens is None:
            return self
        check_window(tokens, self.option.rstrip("="))
        reserve = min(self.output_reserve, tokens // 2)
        return replace(
            self,
            context_window=tokens,
            window_source=source,
            window_note=note,
            output_reserve=reserve,
        )

    def assumptions(self, model: str) -> list[str]:
        """One line per fact still assumed: what is assumed, and the option that says it."""
        if self.window_known:
            return []
        looked = f" ({self.window_note})" if self.window_note else ""
        return [
            f"{model}: the context window is unknown{looked}; assumed {self.context_window:,} "
            "tokens, not acted on: tool results are not cut and a warm cache is not rewritten for "
            "the window's sake, until the provider rejects a prompt as too long; state it "
            f"with {self.option} (CLI: --context-window)"
        ]


def check_window(tokens: object, what: str = "context_window") -> int:
    """A valid window in tokens, or a ConfigurationError saying why not."""
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < MIN_WINDOW:
        raise ConfigurationError(
            f"{what} must be an integer >= {MIN_WINDOW} tokens, got {tokens!r}"
        )
    return tokens


def table_facts(
    spec: str,
    *,
    retention: str | None = None,
    context_window: int | None = None,
    output_reserve: int = 0,
    prices_of: str | None = None,
    window_in_table: bool = True,
) -> ModelFacts:
    """Facts for a selection string from the dated tables: cache rules under `retention`
    (None: the model's default), prices, and the window (from the table when it has an
    entry for the model, else assumed; `context_window` states it). `prices_of` prices
    the model as another selection string (a host that bills like a known model);
    `window_in_table` False: the table's window is not this model's (a host that only
    follows another model's cache rules). An `output_reserve` (the answer's `max_tokens`)
    at or above a known window is refused: no prompt would fit, and every request would
    be over the compaction trigger; one at or above an assumed window is cut to half of
    it, as when a window is learned later (`ModelFacts.told_window`): a guess refuses
    nothing."""
    profile, known = profile_table().find(spec)
    if retention is not None:
        profile = replace(profile, ttl=profile.retention_for(retention).name)
    window = context_window if context_window is not None else profile.context_window
    listed = known and window_in_table
    source: Source = "told" if context_window is not None else "table" if listed else "assumed"
    if context_window is not None:
        check_window(context_window)
    if output_reserve >= window:
        if source != "assumed":
            raise ConfigurationError(
                f"{spec}: max_tokens ({output_reserve}) leaves no room for a prompt in the "
                f"context window ({window} tokens, {source}); lower max_tokens, or state the "
                "model's real window with context_window="
            )
        output_reserve = window // 2
    return ModelFacts(
        profile,
        (prices_of or spec).strip(),
        window,
        source,
        output_reserve=output_reserve,
    )
