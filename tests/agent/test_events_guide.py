"""docs/guides/events-and-streaming.md as a reader uses it (issue 32): every Python block
runs as written, offline, and prints exactly the output the page shows after it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "guides" / "events-and-streaming.md").read_text(encoding="utf-8")
SHOWN = re.findall(r"```python\n(.*?)```\n\n```text\n(.*?)```", GUIDE, re.DOTALL)


def test_every_python_block_of_the_guide_shows_its_output() -> None:
    assert len(SHOWN) == GUIDE.count("```python") == 4


@pytest.mark.parametrize(("code", "output"), SHOWN, ids=[f"block-{i}" for i in range(4)])
def test_a_guide_block_prints_what_the_page_shows(code: str, output: str) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=600,  # a hang guard only
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == output
