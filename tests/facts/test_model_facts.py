"""Facts, not guesses: every model carries its window, cache rules and prices, each with
where it came from (told, discovered, learned, the table, assumed); a wrapped model is
planned exactly like the one it wraps; an assumed window is never acted on and is said
out loud; a long retention keeps a session idle past the short TTL from being rewritten."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest

from warmloop import Agent, RequestFailed, ScriptedModel, call, resolve_model, tool
from warmloop.errors import ConfigurationError, ContextWindowExceeded
from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.maintenance.prune import PrunePolicy
from warmloop.providers.base import ModelResponse, Rendered
from warmloop.providers.scripted import DEFAULT_WINDOW
from warmloop.telemetry import instrument

FILES = {name: f"<{name}>" + name * 12_000 for name in "abcdefghijklmnopqrst"}
"""Twenty file-sized results of about 3,000 tokens each."""
HOST = "openai-compatible:http://127.0.0.1:9/v1#served-model"


@tool
def read(path: str) -> str:
    """Read a file."""
    return FILES[path]


def reads(paths: str) -> list[Any]:
    return [call("read", path=p) for p in paths] + [call("submit", answer="done")]


KEYS = {"api_key": "k"}
SPECS: dict[str, dict[str, Any]] = {
    "anthropic:claude-sonnet-4-6": KEYS,
    "openai:gpt-5": KEYS,
    "openai-chat:gpt-5": KEYS,
    "gemini:gemini-2.5-flash": KEYS,
    "deepseek:deepseek-chat": KEYS,
    "openai-compatible:http://127.0.0.1:9/v1": {},
    "local": {},
}


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_every_provider_takes_a_stated_context_window(spec: str) -> None:
    model = resolve_model(spec, context_window=131_072, **SPECS[spec])
    assert model.facts.context_window == 131_072
    assert model.facts.window_source == "told"
    assert model.facts.window is not None


def test_a_window_below_the_smallest_is_refused_with_its_name() -> None:
    with pytest.raises(ConfigurationError, match="context_window must be an integer >= 256"):
        resolve_model("openai-compatible:http://127.0.0.1:9/v1", context_window=12)


def test_the_table_knows_its_models_and_an_unknown_model_is_only_assumed() -> None:
    known = table_facts("anthropic:claude-sonnet-4-6-20260101")  # a dated snapshot
    assert (known.context_window, known.window_source) == (1_000_000, "table")
    unknown = table_facts("anthropic:claude-unreleased-9")
    assert unknown.window_source == "assumed"
    assert unknown.window is None
    (line,) = unknown.assumptions("anthropic:claude-unreleased-9")
    assert "context window is unknown" in line
    assert "context_window=" in line


def test_a_host_that_follows_another_models_rules_keeps_its_own_window_unknown() -> None:
    model = resolve_model(
        "openai-compatible:http://127.0.0.1:9/v1", cache_rules="openai:gpt-5", api_key="k"
    )
    facts = model.facts
    assert facts.profile.read_multiplier == table_facts("openai:gpt-5").profile.read_multiplier
    assert facts.prices is not None
    assert facts.prices == table_facts("openai:gpt-5").prices
    assert facts.window is None  # gpt-5's window is not the host's


def test_cache_rules_must_name_a_model_of_the_table() -> None:
    with pytest.raises(ConfigurationError, match="cache_rules"):
        resolve_model("openai-compatible:http://127.0.0.1:9/v1", cache_rules="openai")
    with pytest.raises(ConfigurationError, match="no cache profile for provider"):
        resolve_model("openai-compatible:http://127.0.0.1:9/v1", cache_rules="acme:fast")


@pytest.mark.parametrize(
    ("spec", "options", "ttl", "cold_after"),
    [
        ("anthropic:claude-sonnet-4-6", {"cache_ttl": "5m"}, "5m", 360.0),
        ("anthropic:claude-sonnet-4-6", {"cache_ttl": "1h"}, "1h", 3_660.0),
        ("openai:gpt-5", {}, "24h", 86_400.0),  # the free longer retention, by default
        ("openai:gpt-5", {"prompt_cache_retention": "in_memory"}, "in_memory", 3_600.0),
        ("openai:gpt-5-mini", {}, "in_memory", 3_600.0),
        ("openai:gpt-5", {"prompt_cache_retention": "24h"}, "24h", 86_400.0),
        ("openai-chat:gpt-5", {"prompt_cache_retention": "24h"}, "24h", 86_400.0),
    ],
)
def test_the_cache_rules_are_those_of_the_retention_in_use(
    spec: str, options: dict[str, Any], ttl: str, cold_after: float
) -> None:
    profile = resolve_model(spec, api_key="k", **options).facts.profile
    assert (profile.ttl, profile.cold_after) == (ttl, cold_after)


def test_a_retention_the_model_does_not_offer_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="no cache TTL '12h'"):
        resolve_model("openai:gpt-5", api_key="k", prompt_cache_retention="12h")


def test_an_instrumented_model_carries_the_facts_of_the_model_it_wraps() -> None:
    inner = resolve_model("anthropic:claude-sonnet-4-6", api_key="k", cache_ttl="1h")
    wrapped = instrument(inner)
    assert wrapped.facts is inner.facts


def idle_session(model: Any, script: ScriptedModel, idle: float) -> Any:
    """A short session, `idle` seconds of silence, then one more question."""
    script.enqueue(*reads("abcd"))
    policy = MaintenancePolicy(prune=PrunePolicy(tail_tokens=600, tail_messages=4))
    first = Agent(model, [read], maintenance=policy).run_sync("Read them.")
    assert first.maintenance == []
    first.transcript.meta = replace(first.transcript.meta, last_request_at=time.time() - idle)
    script.enqueue(call("submit", answer="again"))
    return Agent(model, [read], maintenance=policy).run_sync("And?", history=first.transcript)


@pytest.mark.parametrize(
    ("name", "long", "short", "idle"),
    [
        ("anthropic:claude-sonnet-4-6", "1h", "5m", 7 * 60.0),
        ("openai:gpt-5", "24h", "in_memory", 2 * 3_600.0),
    ],
)
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_session_idle_past_the_short_ttl_but_inside_the_long_one_is_not_rewritten(
    name: str, long: str, short: str, idle: float, wrapped: bool
) -> None:
    script = ScriptedModel(name=name, cache_ttl=long)
    model = instrument(script) if wrapped else script  # planned exactly as what it wraps
    assert idle_session(model, script, idle).maintenance == []
    # The same idle under the short retention is past its cache: a free prune.
    script = ScriptedModel(name=name, cache_ttl=short)
    model = instrument(script) if wrapped else script
    cold = idle_session(model, script, idle)
    assert [(e.kind, e.reason) for e in cold.maintenance] == [("prune", "cold")]


def test_an_unknown_window_cuts_no_result_rewrites_nothing_and_is_said_once() -> None:
    model = ScriptedModel(reads("abcdefghijklmnopqrst"), name=HOST)
    run = Agent(model, [read], max_steps=25).run_sync("Read every file.")
    assert run.truncated == []
    assert run.maintenance == []
    (warning,) = run.warnings
    assert "context window is unknown" in warning
    assert "context_window=" in warning
    # Every request extends the one before: the whole cacheable prefix is reused.
    for before, after in zip(model.requests, model.requests[1:], strict=False):
        assert after.stream.startswith(before.stream)


def test_a_known_window_cuts_results_to_its_share_and_says_nothing() -> None:
    model = ScriptedModel(reads("ab"), name=HOST, context_window=8_192)
    run = Agent(model, [read]).run_sync("Read two files.")
    assert run.warnings == []
    assert len(run.truncated) == 2
    assert all(len(e.result.content) <= 8_192 // 4 for e in run.truncated)


def test_the_scripted_engine_knows_its_own_window() -> None:
    assert ScriptedModel().facts.window == DEFAULT_WINDOW
    assert ScriptedModel().facts.prices is None


class Rejecting(ScriptedModel):
    """A host that rejects any prompt over `limit` characters, naming its window."""

    def __init__(self, *args: Any, limit: int, window: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit, self.window, self.rejected = limit, window, 0

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        if rendered.length > self.limit:
            self.rejected += 1
            raise ContextWindowExceeded(
                "too long", prompt_tokens=rendered.length // 4, window=self.window
            )
        return await super().send(rendered, session_id=session_id)


def test_a_rejection_naming_the_window_makes_it_a_fact_of_the_conversation() -> None:
    model = Rejecting(reads("abcdefgh"), name=HOST, limit=60_000, window=16_000)
    policy = MaintenancePolicy(prune=PrunePolicy(tail_tokens=3_000, tail_messages=4))
    run = Agent(model, [read], maintenance=policy, max_steps=12).run_sync("Read them all.")
    assert run.outputs.model_dump() == {"answer": "done"}
    assert run.transcript.meta.context_window == 16_000
    assert run.maintenance[0].reason == "overflow"
    # From then on the window is a fact: the trigger prunes before the host must reject
    # again, and results are cut to its share.
    assert model.rejected == 1
    assert run.facts is not None
    assert (run.facts.window_source, run.facts.window) == ("learned", 16_000)


@tool
def dump(size: int) -> str:
    """Print a log of `size` characters."""
    return "L" * size


def test_a_result_too_large_for_an_unknown_window_is_cut_once_the_window_is_named() -> None:
    # Uncut while the window is unknown; the host then names 16,000 tokens, and the new
    # result (never read by any provider) is cut to that window's share: the run goes on.
    replies = [call("dump", size=400_000), call("submit", answer="done")]
    model = Rejecting(replies, name=HOST, limit=100_000, window=16_000)
    run = Agent(model, [dump]).run_sync("Show the log.")
    assert run.outputs.model_dump() == {"answer": "done"}
    assert [(e.kind, e.reason) for e in run.maintenance] == [("cut", "overflow")]
    assert len(run.transcript[3].content) <= 16_000 // 4  # type: ignore[union-attr]
    assert model.rejected == 1


def test_a_learned_window_is_kept_by_a_follow_up_and_a_stored_session(tmp_path: Any) -> None:
    store = tmp_path / "sessions.db"
    model = Rejecting(reads("abcdef"), name=HOST, limit=40_000, window=12_000)
    first = Agent(model, [read], maintenance=None)
    with pytest.raises(RequestFailed):
        first.run_sync("Read them.", session="s1", store=store)
    model.enqueue(call("submit", answer="later"))
    again = Agent(model, [read]).run_sync("Go on.", session="s1", store=store)
    assert again.transcript.meta.context_window == 12_000
    assert again.warnings == []  # learned: no longer assumed


@pytest.mark.moves_cache_prefix(reason="the history is continued with another model")
def test_a_window_learned_with_another_model_is_not_this_models() -> None:
    model = Rejecting(reads("abcdef"), name=HOST, limit=40_000, window=12_000)
    with pytest.raises(RequestFailed) as failed:
        Agent(model, [read], maintenance=None).run_sync("Read them.")
    history = failed.value.transcript
    history.meta = replace(history.meta, model=model.name)
    assert history.meta.context_window == 12_000
    other = ScriptedModel([call("submit", answer="x")], name=HOST.replace("served", "other"))
    run = Agent(other, [read], maintenance=None).run_sync("Go on.", history=history)
    assert run.facts is not None
    assert run.facts.window_source == "assumed"  # 12,000 was the other model's limit
    same = Rejecting([call("submit", answer="x")], name=HOST, limit=10**9, window=12_000)
    again = Agent(same, [read], maintenance=None).run_sync("Go on.", history=history)
    assert again.facts is not None
    assert (again.facts.window_source, again.facts.window) == ("learned", 12_000)


def test_custom_models_declare_their_facts() -> None:
    class Bare:
        name = "bare"

        def render(self, transcript: Any, tools: Any) -> Any: ...

        async def send(self, rendered: Any, *, session_id: str) -> Any: ...

    with pytest.raises(ConfigurationError, match="facts"):
        Agent(Bare(), [])  # type: ignore[arg-type]


def test_facts_refuse_an_output_reserve_as_large_as_the_window() -> None:
    base = table_facts("openai:gpt-5")
    with pytest.raises(ConfigurationError, match="output reserve"):
        ModelFacts(base.profile, base.priced_as, 1_000, "told", output_reserve=1_000)


# Round three (issue 38): an answer's reserve against the window.


def test_max_tokens_at_or_above_a_known_window_are_refused() -> None:
    for window in (4_096, 8_192):
        with pytest.raises(ConfigurationError, match=r"max_tokens \(8192\) leaves no room"):
            table_facts("openai:gpt-5", context_window=window, output_reserve=8_192)
    with pytest.raises(ConfigurationError, match="leaves no room"):
        table_facts("anthropic:claude-sonnet-4-6", output_reserve=10_000_000)  # the table's
    kept = table_facts("openai:gpt-5", context_window=8_448, output_reserve=8_192)
    assert kept.window == 256  # told so: the user's own numbers
    assumed = table_facts("openai-compatible:http://127.0.0.1:9/v1#m", output_reserve=10**9)
    assert assumed.window_source == "assumed"
    assert assumed.output_reserve == assumed.context_window // 2


def test_a_small_window_learned_later_keeps_half_of_it_for_the_prompt() -> None:
    facts = table_facts("openai:gpt-5", output_reserve=4_096)
    learned = facts.told_window(2_000, "learned")
    assert (learned.output_reserve, learned.window) == (1_000, 1_000)
    roomy = facts.told_window(100_000, "learned")
    assert (roomy.output_reserve, roomy.window) == (4_096, 95_904)
