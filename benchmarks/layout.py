"""The package's shape, counted from its source (issue 44's before-and-after figures): files
and lines per package (each provider folder apart), the word `Any`, functions over 60
lines, module names used more than once outside the provider folders' shared recipe, and
the modules outside `providers/` that name a provider in code (an identifier or a provider
string; docstrings and comments are text for people, not code).

    python -m benchmarks layout [--tree DIR]     # DIR: another checkout (default: this one)
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
LONG = 60
PROVIDER_WORDS = re.compile(r"anthropic|gemini|openai|deepseek|claude|google", re.IGNORECASE)
PROVIDER_STRING = re.compile(r"[\"'](anthropic|gemini|openai|openai-chat|deepseek|xai)[\"':]")
RECIPE = frozenset({"record.py", "model.py", "format.py", "readers.py", "cache.py", "options.py"})
"""The names every provider folder repeats by design (docs/adding-a-provider.md)."""


@dataclass
class Shape:
    """What was counted."""

    packages: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    anys: int = 0
    long: list[str] = field(default_factory=list)
    names: Counter[str] = field(default_factory=Counter)
    naming: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def package_of(relative: Path) -> str:
    """The package a module counts under: its first folder, a provider folder apart."""
    parts = relative.parts
    if len(parts) == 1:
        return "(top)"
    if parts[0] == "providers" and len(parts) > 2:
        return f"providers/{parts[1]}"
    return parts[0]


def provider_words(text: str) -> set[str]:
    """The identifiers and strings of `text`'s code that name a provider."""
    found = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME and PROVIDER_WORDS.search(token.string):
            found.add(token.string)
        quoted = token.string.lstrip("rbfRBF")
        code_string = token.type == tokenize.STRING and not quoted.startswith(('"""', "'''"))
        if code_string and PROVIDER_STRING.search(token.string):
            found.add(token.string[:40])
    return found


def count(root: Path) -> Shape:
    """The shape of the package at `root` (its `warmloop/` folder)."""
    shape = Shape()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        text = path.read_text("utf-8")
        tally = shape.packages[package_of(relative)]
        tally[0] += 1
        tally[1] += text.count("\n")
        shape.anys += len(re.findall(r"\bAny\b", text))
        in_folder = relative.parts[0] == "providers" and len(relative.parts) > 2
        if path.name != "__init__.py" and not (in_folder and path.name in RECIPE):
            shape.names[path.name] += 1
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LONG:
                    shape.long.append(f"{relative}:{node.name} ({lines})")
        if relative.parts[0] != "providers":
            shape.naming[str(relative)] |= provider_words(text)
    return shape


def report(shape: Shape) -> str:
    """The counts as lines of text."""
    lines = [f"{'package':<24} {'files':>5} {'lines':>7}"]
    for name in sorted(shape.packages):
        files, total = shape.packages[name]
        lines.append(f"{name:<24} {files:>5} {total:>7}")
    files = sum(t[0] for t in shape.packages.values())
    total = sum(t[1] for t in shape.packages.values())
    lines.append(f"{'total':<24} {files:>5} {total:>7}")
    lines.append(f"Any: {shape.anys}")
    lines.append(f"functions over {LONG} lines: {len(shape.long)}")
    lines += [f"  {found}" for found in shape.long]
    shared = sorted(name for name, n in shape.names.items() if n > 1)
    lines.append(f"module names used more than once: {len(shared)} {shared}")
    named = {f: sorted(w) for f, w in shape.naming.items() if w}
    lines.append(f"modules outside providers/ that name a provider in code: {len(named)}")
    lines += [f"  {f}: {', '.join(w[:5])}" for f, w in sorted(named.items())]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks layout", description=__doc__)
    parser.add_argument("--tree", type=Path, default=HERE, help="the checkout to count")
    args = parser.parse_args(argv)
    print(report(count(args.tree / "warmloop")))
    return 0
