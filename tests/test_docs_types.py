"""Every ```python block of README.md and docs/ type-checks under `mypy --strict` (issue
45, must-show 4): what a user copies from the docs into a strictly typed project passes
its type checker as written, the README's `outputs={"country": str}` then
`run.outputs.country` included.

The blocks are the ones `tests/test_docs_examples.py` runs (its `BLOCKS`, the blocks it
does not run as well: a type checker sends no request). Each is written to a module of its
own and all are checked in one mypy run with the project's configuration (strict, the
pydantic plugin), which reports each error at its page and line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.test_docs_examples import BLOCKS, ROOT, Block


def module_name(block: Block) -> str:
    return re.sub(r"\W", "_", block.name.lower())


def where(line: str, files: dict[str, Block]) -> str:
    """A mypy line with its module file named as the page and line of its block."""
    found = re.match(r"(?:.*/)?(\w+)\.py:(\d+):(.*)", line)
    if found is None or found[1] not in files:
        return line
    block = files[found[1]]
    return f"{block.page}:{block.line + int(found[2])}:{found[3]}"


def test_every_docs_example_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    files = {module_name(block): block for block in BLOCKS}
    for name, block in files.items():
        (tmp_path / f"{name}.py").write_text(block.code, encoding="utf-8")
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--strict",
            *sorted(str(path) for path in tmp_path.glob("*.py")),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,  # warmloop importable, the project's mypy cache reused
        timeout=900,  # a hang guard only
        check=False,
    )
    errors = [where(line, files) for line in checked.stdout.splitlines() if ": error:" in line]
    assert not errors, "\n".join(errors)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(files)} source files" in checked.stdout
