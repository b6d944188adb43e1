"""One run's state: the transcript it owns (it applies every rewrite the maintainer plans,
once the session has stored it), its request records, events and counters, and the few
things every step does with them (append, store, warn, and `emit`: the one way a run
tells anyone what happens, `on_message` and `on_maintenance` included). The run's steps
are its collaborators', each holding this state: the request cycle (`agent/request.py`),
acting on tool calls (`agent/acting.py`) and the loop (`agent/steps.py`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from warmloop.agent.approvals import Decision
from warmloop.agent.events import Event, KeptAlive, Maintained, MessageAppended, maintenance_event
from warmloop.agent.limits import RunLimits
from warmloop.agent.result import ChildRun
from warmloop.agent.settings import Settings
from warmloop.facts.model_facts import ModelFacts
from warmloop.facts.usage import Usage
from warmloop.keepalive.pauses import RunPauses
from warmloop.keepalive.sent import SentRequest
from warmloop.maintenance.maintainer import Maintainer, MaintenanceEvent
from warmloop.memory import Learned
from warmloop.messages import Message, Meta
from warmloop.sessions.persistence import SessionPersistence
from warmloop.tools.invoke import Execution
from warmloop.tools.toolbox import Disclosure
from warmloop.transcript import Transcript
from warmloop.wire.guard import PrefixGuard
from warmloop.wire.request_record import RequestRecord

INTERRUPTED = "Not executed: the run was interrupted before this call finished."


@dataclass
class RunState:
    """One run's mutable state; created fresh per run, so every counter starts at zero."""

    settings: Settings
    learned: Learned
    task: str
    history: Transcript | None
    conversation_id: str | None
    hook: SessionPersistence | None = None
    """A stored session's persistence hook, called after each complete unit is appended."""
    resume_at: int | None = None
    """With a stored session: where the run to go on with began (a crash cut it short)."""
    deps: object = None
    """The run's `deps=`, handed to tools that take a `RunContext`."""
    transcript: Transcript = field(init=False)
    sent: list[SentRequest] = field(default_factory=list)
    """The run's record of each request it sent; the keep-alive reads the same list."""
    widths: Counter[int] = field(default_factory=Counter)
    """How many of this run's answered requests made each number of tool calls."""
    start: int = 0
    step: int = 0
    syntax_errors: int = 0
    failed_steps: int = 0
    refused_outputs: int = 0
    """Submits the output check refused in this run."""
    extracting: bool = False
    """The extract step has begun: its request is the run's last."""
    maintainer: Maintainer | None = None
    maintenance: list[MaintenanceEvent] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    tools: Disclosure = field(init=False)
    """This run's view of the agent's toolbox: what it taught, the calls it left running."""
    facts: ModelFacts = field(init=False)
    """The model's facts for this conversation: a window learned from a rejection (kept
    in the transcript's meta) overrides the model's."""
    warnings: list[str] = field(default_factory=list)
    cut: frozenset[str] = frozenset()
    """Calls a crash left without a result (a resumed run answers an unrepeatable one
    "interrupted" instead of running it again)."""
    pauses: RunPauses = field(init=False)
    """Keeping the cache warm while this run's tools run (`keepalive/pauses.py`)."""
    listener: Callable[[Event], None] | None = None
    """Who reads this run's events besides the agent's hooks (`agent.iter`'s stream)."""
    streaming: bool = False
    """Stream each request where the model can (its text and tool calls as deltas)."""
    limits: RunLimits | None = None
    """The run's `UsageLimits`, checked before each request (`agent/limits.py`)."""
    children: list[ChildRun] = field(default_factory=list)
    """The runs started inside this run's tool calls, as they ended (`agent.lineage`)."""
    approvals: Mapping[str, Decision] = field(default_factory=dict)
    """Decisions on calls that wait for approval, by call id (`agent.approvals`)."""

    def __post_init__(self) -> None:
        model = self.settings.model
        stored = Meta()  # what a stored session learned of this model's cache
        if self.hook is not None:
            self.transcript = self.hook.transcript  # a stored session continues in place
            if self.transcript.meta.model in ("", model.name):
                stored = self.transcript.meta
            self.learned.stored(
                self.hook.lease.session_id,
                self.hook.pauses,
                self.transcript.conversation,
                (model.facts.profile.model, stored),
            )
        elif self.history is not None:
            self.transcript = self.history.fork()
        else:
            self.transcript = Transcript(meta=Meta(created_at=time.time()))
        if self.conversation_id is not None:
            self.transcript.conversation = self.conversation_id
        if self.transcript.guard is None:
            self.transcript.guard = PrefixGuard()
        self.start = len(self.transcript) if self.resume_at is None else self.resume_at
        self.facts = self.settings.model.facts
        self.tools = self.settings.toolbox.conversation()
        self.pauses = RunPauses(
            model,
            self.settings.keepalive,
            self.learned,
            self.maintained,
            self.warn,
            self.sent,
            survived=stored.cache_survived,
            evicted=stored.cache_evicted,
        )

    @property
    def requests(self) -> list[RequestRecord]:
        """The record of each request of the run (usage, seconds, prefix check)."""
        return [sent.record for sent in self.sent if sent.record is not None]

    def usages(self) -> list[Usage]:
        """Every request's usage so far: the steps', then the folds' own summary requests."""
        folds = [e.usage for e in self.maintenance if e.usage is not None]
        return [r.usage for r in self.requests] + folds

    def warn(self, line: str) -> None:
        """Something the user should know about the run (`run.warnings`)."""
        self.warnings.append(line)

    def maintained(self, event: MaintenanceEvent) -> None:
        """A maintenance action happened (a rewrite, a keep-alive): reported with the run."""
        self.maintenance.append(event)
        self.emit(maintenance_event(event))

    def emit(self, event: Event) -> None:
        """Tell `event` to the agent's hooks (`on_message` its messages, `on_maintenance`
        its maintenance, `on_event` all) and to the run's listener, in that order."""
        settings = self.settings
        if isinstance(event, MessageAppended):
            if settings.on_message is not None:
                settings.on_message(event.message)
        elif isinstance(event, (Maintained, KeptAlive)) and settings.on_maintenance is not None:
            settings.on_maintenance(event.event)
        if settings.on_event is not None:
            settings.on_event(event)
        if self.listener is not None:
            self.listener(event)

    async def settle_facts(self) -> None:
        """Ask the model for what its server publishes (once per model), take the windows
        this conversation was told and learned earlier, say what is still assumed, and set
        up maintenance.

        A window the model was told (`context_window=`) is kept in the meta
        (`told_window`), so a resumed run whose model is told none runs with it again; one
        told now wins and is kept instead. A window learned from a rejection stays what the
        run trusts unless a told window is smaller: the provider said the prompt did not fit.
        Both are facts about this model only, never taken over from a history with another.
        """
        settings = self.settings
        facts = await settings.model.discover()
        meta = self.transcript.meta
        same = meta.model in ("", settings.model.name)
        told = facts.context_window if facts.window_source == "told" else None
        if told is None and same and meta.told_window is not None:
            told = meta.told_window
            facts = facts.told_window(told, "told", "stored with the session")
        learned = meta.context_window if same else None
        if learned is not None and (told is None or learned < told):
            facts = facts.told_window(learned, "learned", "a rejection named it")
        if told != meta.told_window:
            self.transcript.meta = replace(meta, told_window=told)
        self.facts = facts
        self.warnings = facts.assumptions(settings.model.name)
        if settings.maintenance is not None:
            self.maintainer = Maintainer(
                settings.model,
                settings.tool_specs,
                facts.profile,
                settings.maintenance,
                window=facts.window,
            )

    def append(self, *messages: Message) -> None:
        for message in messages:
            self.transcript.append(message)
            self.emit(MessageAppended(message))

    async def persisted(self, *, best_effort: bool = False) -> None:
        """Hand what is new to the session hook (one transaction). On the way out of a
        failed run (`best_effort`) a store failure is dropped: the stored session stays at
        its last complete step, and resuming closes the step."""
        if self.hook is None:
            return
        try:
            await self.hook.appended(self.transcript, self.requests)
        except Exception:
            if not best_effort:
                raise
