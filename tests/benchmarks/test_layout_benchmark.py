"""The layout count reads a planted tree: a package's files and lines, an `Any`, a long
function, a module name used twice outside the provider folders' recipe, and a module
outside providers/ naming a provider in code (not in its docstring)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.layout import count, report


def test_a_planted_tree_is_counted(tmp_path: Path) -> None:
    root = tmp_path / "warmloop"
    for folder in ("audit", "proxy", "providers/acme", "providers/zeta"):
        (root / folder).mkdir(parents=True)
    body = "\n".join(f"    x{n} = {n}" for n in range(61))
    (root / "audit" / "guard.py").write_text(f"from typing import Any\ndef f() -> Any:\n{body}\n")
    (root / "proxy" / "guard.py").write_text('"""About anthropic."""\nX = "ok"\n')
    (root / "proxy" / "fixes.py").write_text("from x import anthropic_pieces\n")
    for folder in ("acme", "zeta"):
        (root / "providers" / folder / "record.py").write_text("Y = 'openai'\n")
    shape = count(root)
    assert shape.packages["audit"] == [1, 63]
    assert shape.anys == 2
    assert shape.long == ["audit/guard.py:f (62)"]
    assert [n for n, k in shape.names.items() if k > 1] == ["guard.py"]  # record.py: recipe
    assert {f: w for f, w in shape.naming.items() if w} == {"proxy/fixes.py": {"anthropic_pieces"}}
    assert "functions over 60 lines: 1" in report(shape)
