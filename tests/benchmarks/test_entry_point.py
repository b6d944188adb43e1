"""`python -m benchmarks`: one entry point that names every benchmark and runs each by name."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

import benchmarks
from benchmarks.__main__ import BENCHMARKS, listing, run

PACKAGE = Path(benchmarks.__file__).parent
DRIVERS = PACKAGE / "framework_corpus" / "drivers"
"""Scripts run by path in other frameworks' virtual environments, not benchmarks."""


def _sources() -> list[Path]:
    return [path for path in PACKAGE.rglob("*.py") if DRIVERS not in path.parents]


def _modules_with_main() -> set[str]:
    """Every module of the benchmarks package that defines a top-level `main`."""
    found = set()
    for path in _sources():
        tree = ast.parse(path.read_text("utf-8"))
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found.add(".".join(path.relative_to(PACKAGE).with_suffix("").parts))
    return found


def test_every_benchmark_with_a_main_has_a_name() -> None:
    named = {module for module, _ in BENCHMARKS.values()}
    assert _modules_with_main() - {"__main__"} == named


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_each_name_is_listed_and_its_module_has_a_main(name: str) -> None:
    assert f"\n  {name} " in listing()
    assert importlib.util.find_spec(f"benchmarks.{BENCHMARKS[name][0]}") is not None


def test_no_module_is_its_own_entry_point() -> None:
    """One entry point: no benchmark runs as `python -m benchmarks.NAME` any more."""
    for path in _sources():
        if path.name != "__main__.py":
            assert "__main__" not in path.read_text("utf-8"), path


def test_bare_lists_the_names_and_an_unknown_name_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run([]) == 0
    assert "scenarios" in capsys.readouterr().out
    assert run(["no_such_benchmark"]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark 'no_such_benchmark'" in err
    assert "framework_corpus" in err


def test_a_name_runs_its_benchmark_with_the_rest_as_its_arguments(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        run(["keepalive", "--help"])
    assert exit_.value.code == 0
    assert "usage: python -m benchmarks keepalive" in capsys.readouterr().out


def test_every_benchmark_command_in_the_docs_names_a_benchmark() -> None:
    """The README and docs say `python -m benchmarks NAME` with a NAME it runs, never the
    old per-module `python -m benchmarks.NAME`."""
    root = PACKAGE.parent
    texts = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    command = re.compile(r"python -m benchmarks(\.\w+| +[a-z_]+)?")
    wrong = []
    for path in texts:
        for found in command.finditer(path.read_text("utf-8")):
            name = (found.group(1) or "").strip()
            if name.startswith(".") or (name and name not in BENCHMARKS):
                wrong.append(f"{path.name}: {found.group(0)}")
    assert wrong == []
