"""What a run returns: validated outputs, the transcript, and a record per request; and
the errors that end a run without outputs, each carrying the transcript (nothing is lost)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Generic, cast

from warmloop.agent.fork import fork_at
from warmloop.agent.trajectory import TrajectoryStep, trajectory
from warmloop.errors import WarmloopError
from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.pricing import ChildCost, CostReport, cost_report
from warmloop.facts.usage import Usage
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.output_types import Convert
from warmloop.outputs import OutputT, SubmittedOutputs
from warmloop.tools.invoke import Execution, StuckCall
from warmloop.transcript import Transcript
from warmloop.wire.request_record import RequestRecord


@dataclass
class Run(Generic[OutputT]):
    """A finished run: validated outputs, the full transcript, and per-request records.
    `start` is where this run's messages begin in the transcript (after any history).
    `output` is the outputs as the agent declared them (`Agent(..., outputs=City)`: a
    City); `outputs` the validated arguments of submit, a pydantic model."""

    outputs: SubmittedOutputs
    transcript: Transcript
    requests: list[RequestRecord]
    steps: int
    extracted: bool = False
    model: str = ""
    start: int = 0
    maintenance: list[MaintenanceEvent] = field(default_factory=list)
    """Every rewrite of the conversation during the run (prunes and folds)."""
    executions: list[Execution] = field(default_factory=list)
    """Every tool call executed, with what happened on the way (cut, timed out, stuck)."""
    stuck: list[StuckCall] = field(default_factory=list)
    """Timed-out calls whose worker was still running when the run ended."""
    warnings: list[str] = field(default_factory=list)
    """Facts about the model that were only assumed, each with the option that states it
    (see `ModelFacts.assumptions`); empty when everything was known."""
    facts: ModelFacts | None = None
    """What was known about the model when the run ended (a window learned mid-run
    included); its `priced_as` names the price entry that bills the run."""
    convert: Convert | None = field(default=None, repr=False, compare=False)
    """Turns `outputs` into the declared output type (None: `output` is `outputs`)."""
    children: list[ChildRun] = field(default_factory=list)
    """The runs this one started inside its tool calls (sub-agents), and the run it handed
    its conversation to, in the order they ended (`agent.delegation`)."""

    @cached_property
    def output(self) -> OutputT:
        """The run's output, of the type `outputs=` declared: a pydantic model, dataclass,
        TypedDict, scalar or list as given; with named fields, the validated model; with no
        `outputs=`, the answer text."""
        value = self.outputs if self.convert is None else self.convert(self.outputs)
        return cast(OutputT, value)

    @property
    def truncated(self) -> list[Execution]:
        """The calls whose result was cut to `max_result_chars`."""
        return [e for e in self.executions if e.truncated_from is not None]

    def usages(self) -> list[Usage]:
        """Every request's usage: the steps', then the folds' own summary requests."""
        folds = [e.usage for e in self.maintenance if e.usage is not None]
        return [r.usage for r in self.requests] + folds

    @property
    def usage(self) -> Usage:
        """Usage summed over every request of the run, folds' summary requests included."""
        return sum(self.usages(), Usage())

    @property
    def cache_hit_rate(self) -> float:
        """Share of all input tokens of the run that were served from the cache."""
        return self.usage.cache_hit_rate

    @property
    def tree_usage(self) -> Usage:
        """Usage summed over the run's requests and every child's, theirs included: what
        the whole tree used (`usage` is this run's own)."""
        return sum((child.tree_usage for child in self.children), self.usage)

    def cost(self) -> CostReport:
        """The run's cost in USD under the pricing table (`total` is None when unpriced),
        with a row per child run (`children`, `tree_total`)."""
        priced_as = self.facts.priced_as if self.facts is not None else None
        rows = [child.cost_row() for child in self.children]
        return cost_report(self.model, self.usages(), priced_as=priced_as, children=rows)

    def fork(self, step: int | None = None) -> Transcript:
        """A new branch of the conversation ending with step `step` of this run (None: its
        end): pass it as `history=` to go on from there, reading the cached prefix."""
        return fork_at(self.transcript, step, start=self.start)

    @property
    def trajectory(self) -> list[TrajectoryStep]:
        """This run's tool calls, derived from the transcript (never stored)."""
        return trajectory(self.transcript.messages[self.start :])


@dataclass(frozen=True)
class ChildRun:
    """A run started inside a tool call of another run (a sub-agent), or handed its
    conversation (`kind="handoff"`): which agent, for which call and task, what its
    requests used (under `model`, priced as `priced_as`), and how it ended: `run`, or the
    `error` it raised. `replayed`: its result was taken from its stored session (a tree
    resumed after a crash), nothing was sent again; its usages are what it used then."""

    agent: str
    call_id: str
    task: str
    model: str
    usages: tuple[Usage, ...] = field(repr=False)
    run: Run | None = field(default=None, repr=False)
    error: RunError | None = None
    replayed: bool = False
    priced_as: str | None = None
    kind: str = "delegated"

    @property
    def tree_usage(self) -> Usage:
        """The child's usage, its own children's included."""
        own = sum(self.usages, Usage())
        if self.run is None:
            return own
        return sum((child.tree_usage for child in self.run.children), own)

    def cost_row(self) -> ChildCost:
        """The child's row in its parent's cost report."""
        grandchildren = [c.cost_row() for c in self.run.children] if self.run else []
        report = cost_report(
            self.model, self.usages, priced_as=self.priced_as, children=grandchildren
        )
        how = " replayed" if self.replayed else " failed" if self.error is not None else ""
        where = f" ({self.kind}{how}, {self.call_id})" if self.call_id else f" ({self.kind}{how})"
        return ChildCost(f"{self.agent}{where}", report)


class RunError(WarmloopError):
    """A run ended without outputs; `transcript` holds everything that happened, and
    `requests` the record of each request sent before it ended (usage, seconds, prefix).
    What it used is `usage` and what it cost `cost()`, as for a finished `Run`."""

    def __init__(
        self, message: str, transcript: Transcript, requests: Sequence[RequestRecord] = ()
    ) -> None:
        super().__init__(message)
        self.transcript = transcript
        self.requests: list[RequestRecord] = list(requests)
        self.model = ""
        """The model the run ran on (its selection string), set as the run ends."""
        self.usages: list[Usage] = [r.usage for r in self.requests]
        """Every request's usage, the folds' and keep-alives' own included."""
        self.priced_as: str | None = None

    @property
    def usage(self) -> Usage:
        """Usage summed over every request the run sent before it ended."""
        return sum(self.usages, Usage())

    def cost(self) -> CostReport:
        """What the run cost before it ended, in USD under the pricing table (`total` is
        None when unpriced), as `Run.cost` prices a finished run."""
        return cost_report(self.model, self.usages, priced_as=self.priced_as)

    def ended(
        self,
        model: str,
        requests: Sequence[RequestRecord],
        usages: Sequence[Usage],
        facts: ModelFacts,
    ) -> None:
        """What the run had sent and used as it ended, for its cost."""
        self.requests = list(requests)
        self.model = model
        self.usages = list(usages)
        self.priced_as = facts.priced_as


class SyntaxBudgetExceeded(RunError):
    """The model produced too many consecutive unparseable turns."""


class ExtractFailed(RunError):
    """The extract step did not produce valid outputs. `last_error`: why the run's last
    submit was rejected (its validation error, as the model was told; the message shows
    it), or None when the model never called submit."""

    def __init__(
        self,
        message: str,
        transcript: Transcript,
        requests: Sequence[RequestRecord] = (),
        *,
        last_error: str | None = None,
    ) -> None:
        super().__init__(message, transcript, requests)
        self.last_error = last_error


class RunAborted(RunError):
    """An unexpected exception ended the run (from a renderer, a provider, a tool or a
    callback); the original is `__cause__`, and `transcript` holds every complete step."""


class RequestFailed(RunError):
    """A model request failed for good mid-run; the transcript is as it was before it."""


class UsageLimitExceeded(RunError):
    """The run's next request would have passed one of its `UsageLimits`, so it was never
    sent; the transcript is as it was before it, `usage` and `cost()` what the run used.
    `limit` names the limit (`cost_limit`, `request_limit`, ...); `next_usage` and
    `next_cost` are the estimate of the request that was not sent (its cost None where
    the model is unpriced)."""

    def __init__(
        self,
        message: str,
        transcript: Transcript,
        requests: Sequence[RequestRecord] = (),
        *,
        limit: str = "",
        next_usage: Usage | None = None,
        next_cost: float | None = None,
    ) -> None:
        super().__init__(message, transcript, requests)
        self.limit = limit
        self.next_usage = next_usage or Usage()
        self.next_cost = next_cost
