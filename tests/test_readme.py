"""The README and the docs pages its examples moved to, as a newcomer uses them: every
Python example runs as written (tests/test_docs_examples.py runs them all; these check what
each one does beyond its output), every README link goes to a file in the repository, it says
how to run the installed command, and the package metadata builds without warnings about its
own format."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support.fake_servers import Script, ToolUse, serve

ROOT = Path(__file__).resolve().parent.parent
MOVED_PAGES = ("models.md", "sessions.md", "toolboxes.md", "testing.md")
README = (ROOT / "README.md").read_text(encoding="utf-8")
EXAMPLES = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
GUIDES = ROOT / "docs" / "guides"
MOVED = [(GUIDES / page).read_text(encoding="utf-8") for page in MOVED_PAGES]
"""The README's other examples, now on the guides' pages."""
DOCS_EXAMPLES = [
    code for text in MOVED for code in re.findall(r"```python\n(.*?)```", text, re.DOTALL)
]
API = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")


def run_example(
    code: str, env: dict[str, str], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        timeout=600,  # a hang guard only
        check=False,
    )


def example(marker: str) -> str:
    """The one example, of the README or the pages its examples moved to, that contains
    `marker`."""
    found: list[str] = [code for code in [*EXAMPLES, *DOCS_EXAMPLES] if marker in code]
    assert len(found) == 1, marker
    return found[0]


def test_the_readme_has_the_python_examples_this_file_runs() -> None:
    assert len(EXAMPLES) == 2
    assert 'ScriptedModel([call("lookup"' in EXAMPLES[0]  # a first agent without a key
    assert 'Agent(\n    "anthropic:claude-sonnet-4-5"' in EXAMPLES[1]  # the same, a model string
    for marker in ("base_url=", 'session="cities"', "Toolbox("):
        example(marker)  # on the guides' pages now
    # the fleet's registry: tests/fleet/test_readme_fleet.py, on docs/guides/fleet.md


def test_the_first_example_runs_as_written_against_a_scripted_anthropic_server() -> None:
    # The example's own calls, in order: look up Paris, submit; the follow-up looks up
    # Berlin and submits. The server stands in for api.anthropic.com via the SDK's own
    # ANTHROPIC_BASE_URL setting; the code itself is untouched.
    script = Script(
        [
            ToolUse("lookup", {"city": "Paris"}),
            ToolUse("submit", {"country": "France"}),
            ToolUse("lookup", {"city": "Berlin"}),
            ToolUse("submit", {"country": "Germany"}),
        ]
    )
    with serve(script, anthropic=True) as url:
        result = run_example(
            EXAMPLES[1], {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test"}
        )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.startswith("France ")
    assert len(script.received) == 4
    # The follow-up continues the first run's conversation.
    follow_up = script.received[2]["messages"]
    assert follow_up[0]["content"][0]["text"] == "Which country is Paris in?"
    assert "And Berlin?" in [block.get("text") for block in follow_up[-1]["content"]]


def test_the_scripted_model_example_runs_as_written() -> None:
    result = run_example(EXAMPLES[0], {})
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == "France\n"


def test_the_options_example_runs_as_written_and_sends_nothing() -> None:
    result = run_example(example("base_url="), {})
    assert result.returncode == 0, result.stderr
    # gpt-4o's window from the dated table, and a quarter of it as the result cap
    assert result.stdout == "128000 table\n32000\n"


def test_the_sessions_example_runs_as_written(tmp_path: Path) -> None:
    result = run_example(example('session="cities"'), {}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert (tmp_path / "sessions.db").is_file()


def test_the_toolbox_example_runs_as_written() -> None:
    result = run_example(example("Toolbox("), {})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "120.00 EUR\n"


def test_every_link_goes_to_a_file_that_exists() -> None:
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links the design doc"
    for target in local:
        assert (ROOT / target).is_file(), target


def test_it_says_how_to_run_the_installed_command() -> None:
    assert ".venv/bin/warmloop" in README
    assert "source .venv/bin/activate" in README


def test_the_license_is_an_spdx_string_so_installs_print_no_warning() -> None:
    # A TOML table here makes setuptools print a deprecation warning on every install.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "MIT"
    assert pyproject["build-system"]["requires"] == ["setuptools>=77"]  # reads SPDX strings


def test_the_readme_lists_the_whole_public_api() -> None:
    """Every name `warmloop` exports is listed in the API reference's Public API section
    (docs/reference/api.md, moved from the README), every name listed there is exported, and
    each has its mkdocstrings entry."""
    import warmloop

    section = API.split("## Public API", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- [^:]+: (.*?)\.$", section, re.M | re.S))
    names = {n for line in listed for n in re.findall(r"`(\w+)`", line)}
    assert names == set(warmloop.__all__)
    assert set(re.findall(r"^::: warmloop\.(\w+)$", API, re.M)) == set(warmloop.__all__)


def test_the_readmes_docs_list_names_every_guide_and_the_switchers_page() -> None:
    """Every page in docs/guides/ is linked from the README's documentation list, and the
    page for switchers from pydantic-ai and the Agents SDK is on its first screen (issue 45)."""
    guides = {path.name for path in (ROOT / "docs" / "guides").glob("*.md")}
    docs = README.split("## Documentation", 1)[1]
    linked = set(re.findall(r"\(docs/guides/([\w.-]+\.md)\)", docs))
    assert linked == guides
    first_screen = "\n".join(README.splitlines()[:30])
    assert "(docs/coming-from.md)" in first_screen
