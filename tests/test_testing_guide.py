"""The testing guide's pytest fixture (docs/guides/testing.md) runs under pytest as a user's
test file would (issue 45, must-show 5): `tests/test_docs_examples.py` runs each block as a
program, where a test function is only defined, so this runs the fixture's block with
pytest itself and sees its test pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_docs_examples import BLOCKS, ROOT

MARKER = "def scripted() -> Iterator[ScriptedModel]:"


def test_the_guides_fixture_block_passes_under_pytest(tmp_path: Path) -> None:
    (block,) = [b for b in BLOCKS if b.page == "docs/guides/testing.md" and MARKER in b.code]
    (tmp_path / "test_guide_fixture.py").write_text(block.code, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_guide_fixture.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,  # a hang guard only
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
