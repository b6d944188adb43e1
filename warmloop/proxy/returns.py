"""Whether a paused conversation comes back, as the proxy learns it from what it has seen.

A keep-alive pays only if the conversation returns while the cache is warm. Two kinds of
pause differ there (`kind_of`): after an answer that asked for a tool the client comes back
with its result (a slow build, a person approving the call); after one that ended the turn,
a person or a script decides whether anything follows, and a headless job (`claude -p`, a
batch) never does. The rule (`keepalive.rule.keep_alive`) weighs a history of pause
lengths; a pause that never ends is one of `NEVER` seconds, longer than any keep-alive
carries.

A conversation with pauses of its own of a kind is priced by them. One without (a new
session, a one-shot job) is priced by its agent's (`Returns.history`; an agent is a system
prompt, `exchange.identity.opening`): the latest `POPULATION` pauses of that kind that
ended, each by its length, or `NEVER` where the conversation was forgotten without coming
back; and each pause still open that has already outlasted the moment being priced by a
whole cache lifetime (where one more keep-alive now would carry this pause) and every pause
of its kind that ended with a return, as one that does not. So after the
first one-shot jobs of a batch go unanswered, the batch's next ones get no keep-alive,
while another agent's sessions, and every session whose person came back, keep theirs. An
agent with nothing seen yet is priced by the rent-or-buy rule alone.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable

TOOL = "tool"
"""A pause after an answer that asked for a tool."""
TURN = "turn"
"""A pause after an answer that ended the turn (or said nothing of it)."""
POPULATION = 200
"""Pauses of each agent and kind kept as the population's history (the latest), and open
pauses watched."""
AGENTS = 1000
"""Agents whose pauses are kept (the most recently seen)."""
NEVER = 30 * 86400.0
"""A pause that never ends, in seconds: past every cap's worth of keep-alives."""


def kind_of(asked_tool: bool | None) -> str:
    """The pause kind after an answer (`ResponseFacts.asked_tool`)."""
    return TOOL if asked_tool else TURN


class _Seen:
    """One agent's pauses of one kind: ended (lengths) and open (start times)."""

    def __init__(self) -> None:
        self.ended: deque[float] = deque(maxlen=POPULATION)
        self.open: OrderedDict[str, float] = OrderedDict()
        self.longest = 0.0
        """The longest pause that ended with a return."""


class Returns:
    """The pauses seen, by agent and kind. Not thread-safe: its owner
    (`proxy.keepalive.KeepAlives`) holds its lock."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[Hashable, str], _Seen] = OrderedDict()
        self._where: dict[str, tuple[Hashable, str]] = {}  # open pause -> its agent and kind

    def opened(self, conversation: str, agent: Hashable, kind: str, now: float) -> None:
        """`conversation` (of `agent`) paused: a pause of `kind` began at `now`."""
        self._close(conversation)
        seen = self._seen.setdefault((agent, kind), _Seen())
        self._seen.move_to_end((agent, kind))
        while len(self._seen) > AGENTS:
            _, dropped = self._seen.popitem(last=False)
            for other in dropped.open:
                self._where.pop(other, None)
        seen.open[conversation] = now
        self._where[conversation] = (agent, kind)
        while len(seen.open) > POPULATION:  # the oldest open pause: it has not come back
            other, _ = seen.open.popitem(last=False)
            self._where.pop(other, None)
            seen.ended.append(NEVER)

    def returned(self, conversation: str, now: float) -> None:
        """A request came for `conversation`: its open pause ended with a return."""
        found = self._close(conversation)
        if found is not None:
            seen, started = found
            seen.ended.append(now - started)
            seen.longest = max(seen.longest, now - started)

    def abandoned(self, conversation: str) -> None:
        """`conversation` was forgotten: its open pause never ended."""
        found = self._close(conversation)
        if found is not None:
            found[0].ended.append(NEVER)

    def _close(self, conversation: str) -> tuple[_Seen, float] | None:
        where = self._where.pop(conversation, None)
        seen = self._seen.get(where) if where is not None else None
        if seen is None:
            return None
        started = seen.open.pop(conversation, None)
        return (seen, started) if started is not None else None

    def history(
        self,
        agent: Hashable,
        kind: str,
        conversation: str,
        now: float,
        reach: tuple[float, float],
    ) -> list[float]:
        """The pause lengths the rule weighs at a moment into a pause of `kind` for a
        conversation of `agent` with none of its own (see the module docstring); `reach`:
        the seconds into the pause, and the cache's lifetime."""
        seen = self._seen.get((agent, kind))
        if seen is None:
            return []
        elapsed, ttl = reach
        older = max(elapsed + ttl, seen.longest)
        still = [
            NEVER
            for other, started in seen.open.items()
            if other != conversation and now - started > older
        ]
        return [*seen.ended, *still]
