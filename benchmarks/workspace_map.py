"""The workspace map of `warmloop run`: its size and what building it costs.

For the example workspace and a package of about 20,000 lines (by default `websockets`,
installed beside warmloop, copied into a workspace of its own), as `warmloop run` builds
the map (`warmloop.workspace.workspace_instructions`, budget as for the default model's
window):

  cold     no cache: every file read, hashed and parsed
  cached   the cache the cold build left, read back as a second process would: every
           file read and hashed, none parsed
  changed  one file edited (a line added inside a function body) and one constant
           changed: only those files parsed again

Reported per workspace: files, lines, definitions shown of all, the map's characters and
its tokens (counted by the default model's tokenizer when its file is in the cache
directory, else estimated), and each build's seconds and files parsed, with whether the
map changed (a changed map is a new opening the engine evaluates once).

    python -m benchmarks workspace_map [--package websockets] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from warmloop.workspace import workspace_instructions
from warmloop.workspace.map_build import MapBuild, map_budget
from warmloop.workspace.map_cache import MapCache

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "workspace"
CONSTANT = re.compile(r"[A-Z][A-Z0-9_]* = ")
DEFAULT_WINDOW = 8192
"""The default embedded model's window (`LocalModel`'s `n_ctx`)."""


def package_dir(name: str) -> Path:
    """Where the installed package `name` is."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"package {name} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def token_counter() -> tuple[str, Callable[[str], int]]:
    """How map tokens are counted: the default model's tokenizer if its file is here."""
    try:
        import llama_cpp

        from warmloop.providers.local.model import quiet_llama_logs
        from warmloop.providers.local.models import embedded_model

        quiet_llama_logs()
        path = embedded_model(None).locate()
        if path.is_file():
            llama = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
            return "tokenizer", lambda text: len(llama.tokenize(text.encode(), add_bos=False))
    except Exception:  # no engine or no model file: the estimate the map uses
        pass
    return "estimated", lambda text: -(-len(text) // 3)


def build(root: Path, cache: Path) -> MapBuild:
    return workspace_instructions(
        root, budget_tokens=map_budget(DEFAULT_WINDOW), cache=MapCache(cache)
    )[1]


def edit(root: Path) -> None:
    """A line added inside the first function body found (the map stays as it was), and
    the first module constant found given another value (the map changes)."""
    files = sorted(root.rglob("*.py"))
    edits: list[tuple[Callable[[str], object], Callable[[str], str]]] = [
        (lambda line: line.startswith("    return "), lambda line: f"    # edited\n{line}"),
        (CONSTANT.match, lambda line: f"{line.split(' = ')[0]} = 12345"),
    ]
    for starts, change in edits:
        for path in files:
            lines = path.read_text(encoding="utf-8").split("\n")
            at = next((n for n, line in enumerate(lines) if starts(line)), None)
            if at is not None:
                lines[at] = change(lines[at])
                path.write_text("\n".join(lines), encoding="utf-8")
                break


def measure(name: str, source: Path, repeat: int, count: Callable[[str], int]) -> list[str]:
    """The table rows of one workspace: cold, cached and changed builds."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "workspace"
        shutil.copytree(source, root if source == EXAMPLE else root / source.name)
        colds, cacheds = [], []
        first: MapBuild | None = None
        for n in range(repeat):
            cache = Path(scratch) / f"cache{n}"
            cold = build(root, cache)
            colds.append(cold.cost.seconds)
            cacheds.append(build(root, cache).cost.seconds)
            first = first or cold
        assert first is not None
        edit(root)
        changed = build(root, Path(scratch) / "cache0")
        held = first.map
        size = f"{held.files} | {held.lines:,} | {held.shown}/{held.total} | {len(held.text):,}"
        tokens = count(held.text)
        rows.append(
            f"| {name} | {size} | {tokens:,} | cold | {first.cost.parsed} | "
            f"{statistics.median(colds):.3f} | - |"
        )
        rows.append(
            f"| {name} | {size} | {tokens:,} | cached | 0 | {statistics.median(cacheds):.3f} | no |"
        )
        rows.append(
            f"| {name} | {size} | {tokens:,} | changed | {changed.cost.parsed} | "
            f"{changed.cost.seconds:.3f} | {'yes' if changed.changed else 'no'} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="websockets")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    how, count = token_counter()
    rows = measure("example workspace", EXAMPLE, args.repeat, count)
    rows += measure(args.package, package_dir(args.package), args.repeat, count)
    print(f"map tokens: {how}; seconds: the median of {args.repeat} builds (changed: one)")
    print(
        "| workspace | files | lines | definitions shown | map chars | map tokens | build "
        "| files parsed | seconds | map changed |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(row)
