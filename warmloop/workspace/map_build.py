"""The map of one workspace as a run starts: built from the files, cached, and what it cost.

`code_map` renders a map from an index; this builds the index from the files (parsing only
what `MapCache` has not seen), renders the map in a budget of the model's window, and
says what that cost and whether the map changed since the last one: a changed map changes
the opening, which the engine then evaluates again (a refresh's real cost is that prefill,
not the parse).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from warmloop.workspace.code_index import BuildCost, CodeIndex, ParseMemo
from warmloop.workspace.code_map import (
    DEFAULT_MAP_TOKENS,
    WorkspaceMap,
    map_room,
    workspace_map,
)
from warmloop.workspace.map_cache import MapCache, map_digest

WINDOW_SHARE = 8
"""The map takes at most an eighth of the model's window (and DEFAULT_MAP_TOKENS)."""


def map_budget(context_window: int | None) -> int:
    """The map's budget in tokens for a model whose window is `context_window` tokens."""
    if context_window is None:
        return DEFAULT_MAP_TOKENS
    return max(0, min(DEFAULT_MAP_TOKENS, context_window // WINDOW_SHARE))


@dataclass(frozen=True)
class MapBuild:
    """A workspace's map, what building it cost (files read and parsed, and seconds from
    the cache's load to its save), and whether it differs from the map the cache last
    held for this workspace (None: no map was held)."""

    map: WorkspaceMap
    cost: BuildCost
    changed: bool | None

    def describe(self) -> str:
        """One line for the user: the map's size and what building it cost."""
        held = self.map
        size = (
            f"workspace map: {held.files} files, {held.lines:,} lines, {held.shown} of "
            f"{held.total} definitions in ~{held.tokens} tokens"
        )
        cost = f"{self.cost.parsed} of {self.cost.files} files parsed in {self.cost.seconds:.2f} s"
        if self.changed:
            return (
                f"{size}; the workspace changed since the last map ({cost}), so its opening "
                "is evaluated again"
            )
        if self.changed is None:
            return f"{size} (built: {cost})"
        return f"{size} (unchanged: {cost})"


def build_map(
    root: Path,
    files: Iterable[tuple[str, bytes]],
    budget_tokens: int = DEFAULT_MAP_TOKENS,
    cache: MapCache | None = None,
) -> MapBuild:
    """The map of the workspace at `root` from its `files` (each shown path and bytes)."""
    started = time.perf_counter()
    remembered = cache.load(root) if cache is not None else None
    memo = remembered.memo if remembered is not None else ParseMemo()
    listed = list(files)
    # Where the files alone fill the map, no definition could be shown: none is parsed (a
    # whole repository of hundreds of files maps to its file list at once).
    room = map_room(budget_tokens)
    index = CodeIndex.build(listed, memo, parse=sum(len(p) + 1 for p, _ in listed) < room)
    built = workspace_map(index, budget_tokens)
    changed = None
    if cache is not None and remembered is not None:
        if remembered.map_digest:
            changed = remembered.map_digest != map_digest(built.text)
        if changed is not False or index.cost.parsed:
            keep = {ParseMemo.key(f.path, f.digest) for f in index.files}
            cache.save(root, memo, keep, built.text)
    cost = BuildCost(index.cost.files, index.cost.parsed, time.perf_counter() - started)
    return MapBuild(built, cost, changed)
