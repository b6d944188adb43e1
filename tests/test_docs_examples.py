"""Every ```python block of README.md and docs/**/*.md runs as written, offline.

The pages are globbed, so a page added later is covered without naming it here. Each block
is a complete program: it runs in a fresh interpreter, in an empty directory, with this
checkout importable and no provider key set. Output convention: a ```output block right
after a ```python block (only blank lines between) is what that program prints on stdout,
exactly; a block without one must only exit 0. Shell blocks (```sh, ```bash), JSON,
nginx and text blocks are not run: they are commands and files, not programs (the fleet
page's commands are run by tests/fleet/test_readme_fleet.py).

A block that cannot run offline as written is named in EXCEPTIONS with the reason and the
test that runs it instead; a block may be neither skipped silently nor cut to a fragment.
Run with `-s` to see the count: blocks found, blocks run, each exception.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(
    r"^```python\n(?P<code>.*?)^```[ \t]*\n(?:\s*^```output\n(?P<output>.*?)^```[ \t]*$)?",
    re.MULTILINE | re.DOTALL,
)
KEYS = ("API_KEY", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "DEEPSEEK_", "XAI_")

FENCE = re.compile(r"^```(\w*)\n.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_PROGRAMS = {
    "output": "what the python block before it prints: checked against it",
    "sh": "shell commands (set-up, the CLI): not run here",
    "bash": "shell commands: not run here",
    "json": "a file's contents (a batch file, a log): not run",
    "nginx": "a server's configuration: not run",
    "text": "text shown as is: not run",
    "console": "a terminal session: not run",
    "shell": "shell commands: not run here",
    "jsonl": "a file's contents (a log, a batch): not run",
    "toml": "a configuration file: not run",
    "yaml": "a configuration file: not run",
    "html": "markup shown as is: not run",
}
"""Fenced blocks that are no Python program, by language: why the docs test runs none."""

EXCEPTIONS = {
    ("README.md", '"anthropic:claude-sonnet-4-5",  # reads ANTHROPIC_API_KEY'): (
        "talks to Anthropic with a key: tests/test_readme.py runs it as written against a "
        "loopback Anthropic server through the SDK's ANTHROPIC_BASE_URL"
    ),
}
"""(page, a line of the block): why it is not run here, and which test runs it."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    output: str | None

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    def exception(self) -> str | None:
        for (page, marker), reason in EXCEPTIONS.items():
            if page == self.page and marker in self.code:
                return reason
        return None


def blocks_of(path: Path, page: str) -> list[Block]:
    """The python blocks of one page, each with the output shown after it (or None)."""
    text = path.read_text(encoding="utf-8")
    return [
        Block(page, text.count("\n", 0, m.start()) + 1, m["code"], m["output"])
        for m in BLOCK.finditer(text)
    ]


BLOCKS = [b for path in PAGES for b in blocks_of(path, path.relative_to(ROOT).as_posix())]


def run_block(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not any(key in k for key in KEYS)}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,  # a hang guard only
        check=False,
    )


def test_every_block_is_run_or_named_with_its_reason() -> None:
    excepted = [(b, b.exception()) for b in BLOCKS if b.exception() is not None]
    run = [b for b in BLOCKS if b.exception() is None]
    print(f"\npython blocks found: {len(BLOCKS)}; run: {len(run)}; not run: {len(excepted)}")
    for block, reason in excepted:
        print(f"  not run: {block.name}: {reason}")
    assert len(run) + len(excepted) == len(BLOCKS)
    fences = [m[1] for path in PAGES for m in FENCE.finditer(path.read_text(encoding="utf-8"))]
    others = sorted({kind for kind in fences if kind != "python"})
    print(f"fenced blocks in all: {len(fences)}")
    for kind in others:
        print(f"  {fences.count(kind)} {kind or 'unlabelled'}: {NOT_PROGRAMS.get(kind)}")
    assert fences.count("python") == len(BLOCKS)
    assert all(kind in NOT_PROGRAMS for kind in others), "label every block with its language"
    # every exception still names a block that exists (a stale one would hide nothing)
    for page, marker in EXCEPTIONS:
        assert any(b.page == page and marker in b.code for b in BLOCKS), (page, marker)
    assert len(BLOCKS) >= 10, "the extractor found the pages' blocks"


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.exception() is None], ids=lambda b: b.name
)
def test_the_block_runs_and_prints_what_the_page_shows(block: Block, tmp_path: Path) -> None:
    result = run_block(block.code, tmp_path)
    assert result.returncode == 0, f"{block.name}\n{result.stderr}"
    if block.output is not None:
        assert result.stdout == block.output, block.name


def test_the_extractor_pairs_a_block_with_the_output_shown_after_it(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nprint(1)\n```\n\n```output\n1\n```\n\n```python\nx = 2\n```\n"
        "```sh\necho no\n```\n",
        encoding="utf-8",
    )
    found = [(b.code, b.output) for b in blocks_of(page, "page.md")]
    assert found == [("print(1)\n", "1\n"), ("x = 2\n", None)]


def test_the_test_command_builds_the_site_strict_with_the_dev_extras_tools() -> None:
    """scripts/test.sh builds the docs with `--strict` before pytest, with the MkDocs
    packages the dev extra installs; mkdocs.yml fails the build on a warning."""
    import tomllib

    test_sh = (ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    build = test_sh.index(".venv/bin/mkdocs build --strict")
    assert build < test_sh.index(".venv/bin/pytest")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = {
        re.split(r"[\[<>=]", spec)[0]
        for spec in pyproject["project"]["optional-dependencies"]["dev"]
    }
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= dev
    assert "\nstrict: true\n" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
