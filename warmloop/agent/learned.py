"""What an agent learns across its runs, in one object the agent owns: the opening of its
first fresh session (every later fresh session must open with the same bytes, or the cache
that session wrote is lost), every cache bust its runs saw, how long its recent runs
went on (the horizon the warm prune is priced over), and how long its pauses lasted, by
kind (the keep-alive rule's history: its own runs', and those a stored session it runs on
recorded before). A run reads and adds to it; nothing else writes it."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from warmloop.cache.guard import Bust, PrefixCheck, opening_bust
from warmloop.cache.wire import WireStream
from warmloop.sessions.timeline import StoredPauses

PAUSES_REMEMBERED = 64
SESSIONS_REMEMBERED = 1024
"""How many stored sessions an agent remembers having learned the pauses of."""
"""How many recent pauses of each kind an agent keeps (the keep-alive rule's history)."""
RUNS_REMEMBERED = 256
"""How many recent runs' lengths an agent keeps: enough for the horizon's quantile, and a
long-lived agent serving many tasks does not grow without bound."""


@dataclass
class Learned:
    """An agent's memory of its runs (see the module docstring)."""

    opening: WireStream | None = None
    """The first request of the agent's first fresh session."""
    busts: list[Bust] = field(default_factory=list)
    run_lengths: deque[int] = field(default_factory=lambda: deque(maxlen=RUNS_REMEMBERED))
    """Requests each recent finished run sent."""
    pauses: defaultdict[str, deque[float]] = field(
        default_factory=lambda: defaultdict(lambda: deque(maxlen=PAUSES_REMEMBERED))
    )
    """Seconds each recent pause lasted, by kind (`tool:<name>`, `waiting`)."""
    gaps: deque[float] = field(default_factory=lambda: deque(maxlen=4 * PAUSES_REMEMBERED))
    """Seconds from each recent request to the next one of its run: what follows a request
    before its reply is known (the longer-TTL choice's history)."""
    sessions: deque[str] = field(default_factory=lambda: deque(maxlen=SESSIONS_REMEMBERED))
    """Stored sessions whose pauses are learned: read from the store once, or lived (the
    most recent, so a worker that serves sessions for months keeps a bounded memory)."""

    def checked(
        self, check: PrefixCheck, wire: WireStream, length: int, *, fresh: bool
    ) -> PrefixCheck:
        """The verdict on a request: the guard's `check`, except that a fresh session's
        first request is checked against the opening (the cache earlier sessions wrote).
        A bust is remembered."""
        if fresh and self.opening is None:
            self.opening = wire  # the first session: nothing to reuse yet
        elif fresh and self.opening is not None:
            bust = opening_bust(self.opening, wire)
            shared = 0 if bust else sum(len(text) for _, text in wire.opening)
            check = PrefixCheck(bust.position if bust else shared, length, bust)
        if check.bust is not None:
            self.busts.append(check.bust)
        return check

    def paused(self, kind: str, seconds: float) -> None:
        """A pause of `kind` ended after `seconds`."""
        self.pauses[kind].append(max(0.0, seconds))

    def gap(self, seconds: float) -> None:
        """The next request of a run went out `seconds` after the previous one."""
        self.gaps.append(max(0.0, seconds))

    def stored(self, session: str, pauses: StoredPauses) -> None:
        """A run starts on stored session `session`: learn the pauses its stored requests
        show, once (a session this agent ran or read before is in its memory already)."""
        if session in self.sessions:
            return
        self.sessions.append(session)
        for kind, seconds in pauses.pauses:
            self.paused(kind, seconds)
        for seconds in pauses.gaps:
            self.gap(seconds)

    def finished(self, requests: int) -> None:
        """A run ended with outputs after `requests` requests."""
        self.run_lengths.append(requests)
