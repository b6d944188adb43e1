"""The architecture, read from the code's own imports (DESIGN.md, Layout).

Every `import` and `from ... import` of warmloop is an edge, wherever it is written: at the
top, under `if TYPE_CHECKING:`, or inside a function (a lazy import hides a cycle, it does
not remove it). The test fails on any cycle between modules, and on any import that goes
up the layers below: a module imports its own package or the layers beneath it, never a
layer above or a package beside it on the same layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import warmloop

PACKAGE = Path(warmloop.__file__).parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("facts", "keywords", "testing"),
    ("messages", "re2_syntax", "regular", "wire", "simulate"),
    ("transcript_file",),
    ("transcript",),
    ("tools",),
    ("output_types",),
    ("protocols", "outputs"),
    ("providers", "workspace"),
    ("exchange",),
    ("maintenance", "telemetry"),
    ("sessions", "audit"),
    ("memory",),
    ("keepalive",),
    ("agent", "proxy"),
    ("fleet",),
    ("cli",),
    ("", "__main__"),  # the package's public face, and `python -m warmloop`
)
"""Bottom to top. `errors` imports nothing of warmloop; `messages` only `errors`; the
transcript only the parts; providers never reach the agent, sessions,
maintenance or the CLI; the audit never reaches the agent."""

RANK = {unit: n for n, layer in enumerate(LAYERS) for unit in layer}


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its `__init__`)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _owner(name: str, known: Mapping[str, Path]) -> str | None:
    """The module `name` (a module, or a name inside one) belongs to."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """The warmloop modules `module` imports, anywhere in its text."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            # `from package import module` imports that module; `from module import name`
            # imports the module.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            owner = _owner(target, known) if target.startswith("warmloop") else None
            if owner is not None and owner != module:
                yield owner


def graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    known = modules(root)
    return {name: set(imports(name, path, known)) for name, path in known.items()}


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def unit(module: str) -> str:
    """The layer unit of a module: its first name under `warmloop` ('' for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward(edges: Mapping[str, set[str]]) -> list[str]:
    """Every import that goes up a layer or sideways into another package on its layer."""
    wrong = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            here, there = unit(source), unit(target)
            if here != there and RANK[there] >= RANK[here]:
                wrong.append(f"{source} imports {target}")
    return wrong


def test_every_module_is_on_a_layer() -> None:
    units = {unit(m) for m in modules()}
    assert units <= RANK.keys(), f"put {sorted(units - RANK.keys())} on a layer in LAYERS"


def test_no_module_imports_its_way_back_to_itself() -> None:
    assert cycles(graph()) == []


def test_imports_go_down_the_layers_only() -> None:
    assert upward(graph()) == []


def test_errors_import_nothing_and_messages_only_errors() -> None:
    edges = graph()
    assert edges["warmloop.errors"] == set()
    assert edges["warmloop.messages"] <= {"warmloop.errors"}


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("providers", "agent"),
        ("providers", "sessions"),
        ("providers", "maintenance"),
        ("providers", "cli"),
        ("audit", "agent"),
        ("proxy", "audit"),
        ("exchange", "audit"),
        ("exchange", "proxy"),
        ("transcript", "facts"),
        ("transcript", "wire"),
        ("transcript", "simulate"),
    ],
)
def test_the_named_rules_of_the_layout_hold(low: str, high: str) -> None:
    edges = graph()
    crossing = [
        f"{s} imports {t}"
        for s, targets in edges.items()
        if unit(s) == low
        for t in targets
        if unit(t) == high
    ]
    assert crossing == []


def test_the_checks_see_every_kind_of_import(tmp_path: Path) -> None:
    """A cycle through a type-checking import and one through a function-local import are
    both found, and an upward import is named (the checks can fail)."""
    root = tmp_path / "warmloop"
    (root / "facts").mkdir(parents=True)
    (root / "agent").mkdir()
    for init in (root, root / "facts", root / "agent"):
        (init / "__init__.py").write_text("")
    (root / "errors.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from warmloop.facts import a\n"
    )
    (root / "facts" / "a.py").write_text("def f():\n    from warmloop import errors\n")
    (root / "facts" / "b.py").write_text("from warmloop.agent.c import X\n")
    (root / "agent" / "c.py").write_text("X = 1\n")
    edges = graph(root)
    assert cycles(edges) == [["warmloop.errors", "warmloop.facts.a"]]
    assert "warmloop.facts.b imports warmloop.agent.c" in upward(edges)


PROVIDER_RECORDS = frozenset({"warmloop.providers.records", "warmloop.providers.registry"})
"""The floor's modules that may name a provider or a wire format: the records and the
registry (and every module inside a provider's own folder, `provider_folder`)."""


def provider_folder(module: str) -> str | None:
    """The provider folder a module is in (`warmloop.providers.anthropic`), or None."""
    parts = module.split(".")
    if len(parts) > 3 and parts[:2] == ["warmloop", "providers"]:
        return ".".join(parts[:3])
    return None


def folder_packages(root: Path = PACKAGE) -> set[str]:
    """Every provider folder: a package directly under `providers/`."""
    return {
        f"warmloop.providers.{path.parent.name}"
        for path in (root / "providers").glob("*/__init__.py")
    }


def reaching_into_folders(edges: Mapping[str, set[str]], folders: set[str]) -> list[str]:
    """Every import of a module inside a provider folder from outside that folder: the
    folder is reached only through its record and the registry."""
    wrong = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            folder = provider_folder(target) if provider_folder(target) in folders else None
            if target in folders:
                folder = target
            if folder is not None and provider_folder(source) != folder and source != folder:
                wrong.append(f"{source} imports {target}")
    return wrong


def test_nothing_outside_a_provider_folder_imports_from_it() -> None:
    """A provider is a folder (docs/adding-a-provider.md): the rest of warmloop asks its
    record, through the registry, and never imports its modules."""
    folders = folder_packages()
    assert folders >= {
        "warmloop.providers.anthropic",
        "warmloop.providers.openai",
        "warmloop.providers.gemini",
        "warmloop.providers.local",
    }
    assert reaching_into_folders(graph(), folders) == []


def test_the_folder_rule_names_a_planted_import(tmp_path: Path) -> None:
    """One deliberate import of a provider's module from the proxy is named; the folder's
    own modules importing each other are not."""
    root = tmp_path / "warmloop"
    for folder in (root, root / "proxy", root / "providers", root / "providers" / "acme"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    (root / "providers" / "acme" / "cache.py").write_text("X = 1\n")
    (root / "providers" / "acme" / "record.py").write_text(
        "from warmloop.providers.acme.cache import X\n"
    )
    (root / "proxy" / "fixes.py").write_text("from warmloop.providers.acme.cache import X\n")
    edges = graph(root)
    assert reaching_into_folders(edges, folder_packages(root)) == [
        "warmloop.proxy.fixes imports warmloop.providers.acme.cache"
    ]


def _strings(node: ast.expr) -> Iterator[str]:
    """The string literals a comparison operand is, or holds (a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _strings(element)


def name_comparisons(root: Path, names: frozenset[str]) -> list[str]:
    """Every `==`, `!=`, `in` or `not in` against a literal that is one of `names` (a
    provider prefix or a wire format's name), outside the provider records."""
    found = []
    for module, path in modules(root).items():
        if module in PROVIDER_RECORDS or provider_folder(module) is not None:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            if not all(isinstance(op, ast.Eq | ast.NotEq | ast.In | ast.NotIn) for op in node.ops):
                continue
            for operand in (node.left, *node.comparators):
                for text in _strings(operand):
                    if text in names:
                        found.append(f"{module}:{node.lineno} compares with {text!r}")
    return sorted(found)


def _registered_names() -> frozenset[str]:
    from warmloop.providers.registry import providers, wire_formats

    prefixes = {name for record in providers() for name in (record.prefix, *record.aliases)}
    return frozenset(prefixes | {fmt.name for fmt in wire_formats()})


def test_no_module_compares_a_provider_name_outside_the_provider_records() -> None:
    """Code asks a record for a capability (`wire.explicit_breakpoints`), never compares a
    provider's or a wire format's name."""
    assert name_comparisons(PACKAGE, _registered_names()) == []


def test_the_name_check_finds_a_planted_comparison(tmp_path: Path) -> None:
    root = tmp_path / "warmloop"
    (root / "audit").mkdir(parents=True)
    (root / "providers").mkdir()
    for init in (root, root / "audit", root / "providers"):
        (init / "__init__.py").write_text("")
    (root / "audit" / "blocks.py").write_text(
        'def f(wire, p):\n    return wire.name == "anthropic" or p in ("gemini", "x")\n'
    )
    (root / "audit" / "fine.py").write_text('DETAILS = "anthropic"\nOK = "x" == "y"\n')
    (root / "providers" / "registry.py").write_text('A = "anthropic" == "anthropic"\n')
    assert name_comparisons(root, _registered_names()) == [
        "warmloop.audit.blocks:2 compares with 'anthropic'",
        "warmloop.audit.blocks:2 compares with 'gemini'",
    ]


# Round three (issue 31): benchmarks as their own package --------------------------------
# `benchmarks/` is a package beside warmloop: no cycle inside it; it reaches warmloop only
# through the public `warmloop` package or a documented internal (a unit of the layout whose
# docstring says so); warmloop never imports it.

BENCHMARKS = PACKAGE.parent / "benchmarks"

DOCUMENTED_INTERNALS: tuple[str, ...] = (
    "facts",  # profiles, the dated price table, pricing: what every figure is priced with
    "wire",  # the canonical stream and the prefix guard the benchmarks cut into blocks
    "simulate",  # the cache simulator every figure is priced by
    "keepalive",  # the rule the keep-alive benchmark measures against the optimum
    "providers",  # the wire renderers, the Model contract's parts, the local engine
    "tools",  # schema helpers and the Toolbox's disclosure knobs (the toolbox arms)
    "sessions",  # the stores below the public ones, leases and resume (sessions, fleet)
    "audit",  # the audit entry, its ideal breakpoints and the providers it prices
    "exchange",  # the log a benchmark writes and the audit reads (audit_scale)
    "memory",  # what an agent learns across runs, which the keep-alive arms learn in
    "agent",  # the defaults a user leaves alone, and the horizon the facts sweep swaps
    "maintenance",  # the prune plan the offline optimum uses, and the horizon
    "fleet",  # the fleet client and tasks the fleet benchmark drives
    "workspace",  # the instructions and grounding the local eval grades with
    "messages",  # `Message`, the union of the public parts
    "transcript",  # `scratch_copy`, a transcript the renderers may memoise on
    "transcript_file",  # the persistence hook's own serialiser (overhead)
    "outputs",  # `Outputs`, the submit tool a prompt is built with (prefill, overhead)
    "protocols",  # the text protocol the local engine is prompted with
    "proxy",  # the proxy's keep-alive on a faked clock (proxy_pause)
)
"""The units of warmloop (as in LAYERS) a benchmark may import beyond `warmloop` itself; each
one's docstring (its `__init__` for a package) says it is a documented internal for
benchmarks. Shrink it as the public API grows: a benchmark should measure what users run."""

INTERNAL_MARK = "documented internal for benchmarks"


def _imported(module: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """Every absolute name `module` imports (a module, or a name inside one)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base


def bench_edges(
    root: Path = BENCHMARKS, library: Path = PACKAGE
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(benchmark module -> benchmark modules it imports, -> warmloop modules it imports)."""
    ours, theirs = modules(root), modules(library)
    inside: dict[str, set[str]] = {}
    outside: dict[str, set[str]] = {}
    for name, path in ours.items():
        inside[name], outside[name] = set(), set()
        for target in _imported(name, path, {**ours, **theirs}):
            top = target.split(".")[0]
            owner = _owner(target, ours if top == root.name else theirs)
            if owner is None or owner == name:
                continue
            if top == root.name:
                inside[name].add(owner)
            elif top == "warmloop":
                outside[name].add(owner)
    return inside, outside


def private_imports(outside: Mapping[str, set[str]]) -> list[str]:
    """Every benchmark import of warmloop that is neither public nor a documented internal."""
    return [
        f"{source} imports {target}"
        for source, targets in sorted(outside.items())
        for target in sorted(targets)
        if target != "warmloop" and unit(target) not in DOCUMENTED_INTERNALS
    ]


def test_the_benchmarks_have_no_import_cycle() -> None:
    inside, _ = bench_edges()
    assert inside, "no benchmark module found"
    assert cycles(inside) == []


def test_the_benchmarks_import_warmloop_only_publicly_or_through_documented_internals() -> None:
    _, outside = bench_edges()
    assert any("warmloop" in targets for targets in outside.values())
    assert private_imports(outside) == []


@pytest.mark.parametrize("internal", DOCUMENTED_INTERNALS)
def test_each_documented_internal_says_so_in_its_docstring(internal: str) -> None:
    known = modules()
    path = known[f"warmloop.{internal}"]
    docstring = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    assert INTERNAL_MARK in " ".join(docstring.split()), f"{path}: say '{INTERNAL_MARK}'"


def test_warmloop_never_imports_the_benchmarks() -> None:
    known = modules()
    wrong = [
        f"{name} imports {target}"
        for name, path in known.items()
        for target in _imported(name, path, known)
        if target == "benchmarks" or target.startswith("benchmarks.")
    ]
    assert wrong == []


def test_the_benchmark_checks_can_fail(tmp_path: Path) -> None:
    """On a planted tree: a cycle through a function-local import, and a private import of
    warmloop (a unit not documented), are both named; a public one and a documented one pass."""
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "a.py").write_text("from benchmarks.b import X\nfrom warmloop import Agent\n")
    (root / "b.py").write_text("X = 1\ndef f():\n    from benchmarks import a\n")
    (root / "c.py").write_text("from warmloop.cli.main import main\nfrom warmloop.facts import x\n")
    inside, outside = bench_edges(root)
    assert cycles(inside) == [["benchmarks.a", "benchmarks.b"]]
    assert private_imports(outside) == ["benchmarks.c imports warmloop.cli.main"]
