"""Prune: replace the content of old, large tool results with a one-line placeholder.

Pure and deterministic. A result is pruned only when it lies before the protected tail
(the newest `tail_tokens`, at least `tail_messages` messages, never starting on a tool
result, and every message after the newest assistant turn: results the model has not read
yet), is at least `min_tokens` long, is not an error, is not from an excluded tool and is
not a placeholder already, so a second pass plans nothing (idempotent). The placeholder
says how much was dropped and that calling the tool again returns it. It does not repeat
the call: the call stands beside it on every wire (a prune never touches assistant turns,
tool calls or ids; a fold removes a call with its result), and every later request carries
the placeholder, so naming the call again (up to 200 characters of arguments) made a wide
step's 60 placeholders 2,400 tokens on each request after the prune instead of 900 (issue
48: the wide step at 0.7x file size 0.762 -> 0.740 of maintenance off). `plan_prune` returns edits
that `Transcript.replace_content` applies (and archives, through a store).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from warmloop.messages import AssistantTurn, Message, Notice, ToolResult
from warmloop.transcript import Transcript

PLACEHOLDER_MARK = "[pruned: "
DEFAULT_TAIL_TOKENS = 12_000


@dataclass(frozen=True)
class PrunePolicy:
    """What may be pruned. Sizes are in tokens, as the caller's counter measures them.
    The protected tail is the newest `tail_tokens` and at least `tail_messages` messages,
    with every result the model has not read; `tail_tokens=None` protects a quarter of the
    context window, at most `DEFAULT_TAIL_TOKENS` (`for_window`)."""

    tail_tokens: int | None = None
    tail_messages: int = 6
    min_tokens: int = 200
    exclude_tools: frozenset[str] = frozenset()

    def for_window(self, window: int | None) -> PrunePolicy:
        """This policy with its tail size settled for a context window of `window` (None:
        unknown, so the default tail)."""
        if self.tail_tokens is not None:
            return self
        if window is None:
            return replace(self, tail_tokens=DEFAULT_TAIL_TOKENS)
        return replace(self, tail_tokens=min(DEFAULT_TAIL_TOKENS, window // 4))


class PrunePlan:
    """The edits a prune would make, what they drop, and where the prompt first changes.

    `dropped_tokens` is the estimate of the dropped contents taken as one text, less that
    of their placeholders taken as one text (summing a rounded estimate per message would
    add up to a token a message of rounding, and could not be had from sums of lengths).
    The edits may be built only when asked for (`build`): deciding needs only what is
    dropped and where the prompt first changes. Equal plans have equal edits."""

    __slots__ = ("_build", "_edits", "dropped_tokens", "first", "tail_start")

    def __init__(
        self,
        edits: dict[int, str] | None = None,
        dropped_tokens: int = 0,
        first: int | None = None,
        tail_start: int = 0,
        *,
        build: Callable[[], dict[int, str]] | None = None,
    ) -> None:
        self._edits = edits if edits is not None or build is not None else {}
        self._build = build
        self.dropped_tokens = dropped_tokens
        self.first = first
        self.tail_start = tail_start

    @property
    def edits(self) -> dict[int, str]:
        """Message index -> the placeholder that replaces its content."""
        if self._edits is None:
            assert self._build is not None
            self._edits = self._build()
        return self._edits

    def __bool__(self) -> bool:
        return self.first is not None

    def _fields(self) -> tuple[object, ...]:
        return (self.dropped_tokens, self.first, self.tail_start, self.edits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrunePlan):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"PrunePlan(edits={self.edits!r}, dropped_tokens={self.dropped_tokens}, "
            f"first={self.first}, tail_start={self.tail_start})"
        )


def text_of(message: Message) -> str:
    """The text a message contributes to a prompt (its size is what pruning saves)."""
    if isinstance(message, ToolResult):
        return message.content
    if isinstance(message, AssistantTurn):
        return message.text + message.reasoning + "".join(c.arguments for c in message.tool_calls)
    if isinstance(message, Notice):  # an announcement's schemas are most of its size
        return message.text + "".join(t.name + t.description + t.parameters for t in message.tools)
    return message.text


def tail_start(
    visible: Sequence[tuple[int, Message]], policy: PrunePolicy, tokens: Callable[[str], int]
) -> int:
    """Position (in `visible`) where the protected tail starts: it holds the newest
    `tail_tokens` and at least `tail_messages` messages, never starts on a tool result
    (its assistant turn comes with it), and holds everything the model has not read
    (`unread`)."""
    start, size = len(visible), 0
    budget = policy.tail_tokens if policy.tail_tokens is not None else DEFAULT_TAIL_TOKENS
    while start > 0 and (size < budget or len(visible) - start < policy.tail_messages):
        start -= 1
        size += tokens(text_of(visible[start][1]))
    while 0 < start < len(visible) and isinstance(visible[start][1], ToolResult):
        start -= 1
    return min(start, unread(visible))


def unread(visible: Sequence[tuple[int, Message]]) -> int:
    """Position of the first message after the newest assistant turn (0 when there is
    none): what follows it was never in a request the model answered, so its results are
    never pruned, whatever the policy (a tail of no tokens and no messages included)."""
    newest = (
        p for p in range(len(visible) - 1, -1, -1) if isinstance(visible[p][1], AssistantTurn)
    )
    return next(newest, -1) + 1


def placeholder(result: ToolResult) -> str:
    """The one line that stands in for a pruned result (the call it answers stands beside
    it, so it is not named again)."""
    return f"{PLACEHOLDER_MARK}{len(result.content):,} characters; call the tool again to see them]"


def plan_prune(
    transcript: Transcript, policy: PrunePolicy, tokens: Callable[[str], int]
) -> PrunePlan:
    """The prune of every eligible result before the protected tail (nothing when none)."""
    visible = list(transcript.visible())
    cut = tail_start(visible, policy, tokens)
    edits: dict[int, str] = {}
    contents: list[str] = []
    for index, message in visible[:cut]:
        if (
            isinstance(message, ToolResult)
            and not message.is_error
            and message.name not in policy.exclude_tools
            and not message.content.startswith(PLACEHOLDER_MARK)
            and tokens(message.content) >= policy.min_tokens
        ):
            edits[index] = placeholder(message)
            contents.append(message.content)
    dropped = tokens("".join(contents)) - tokens("".join(edits.values())) if edits else 0
    first = min(edits) if edits else None
    boundary = visible[cut][0] if cut < len(visible) else len(transcript)
    return PrunePlan(edits, dropped, first, boundary)
