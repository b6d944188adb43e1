"""A light start (issue 44): `import warmloop` and `warmloop --help` import no agent, provider
SDK, wire model or HTTP client; each verb's module loads when that verb runs, and the line
`--help` lists it with is the verb's own."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from warmloop.cli.main import VERBS, load_verb, main

HEAVY = ("openai", "anthropic", "google.genai", "httpx", "httpx2", "rich", "warmloop.agent")
"""Modules a start must not load: provider SDKs, HTTP clients, the console, the agent."""


def _loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running `code`."""
    shown = "import json, sys; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\n{shown}"], capture_output=True, text=True, check=True
    )
    return list(json.loads(out.stdout.splitlines()[-1]))


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def test_importing_warmloop_loads_none_of_its_parts() -> None:
    loaded = _loaded_after("import warmloop")
    assert _heavy(loaded) == []
    assert [m for m in loaded if m.startswith("warmloop")] == ["warmloop"]


def test_the_help_of_the_command_loads_no_verb() -> None:
    code = (
        "import sys\nfrom warmloop.cli.main import main\n"
        "try:\n    main(['--help'], prog_name='warmloop')\nexcept SystemExit:\n    pass"
    )
    loaded = _loaded_after(code)
    assert _heavy(loaded) == []
    assert [m for m in loaded if m.startswith("warmloop")] == [
        "warmloop",
        "warmloop.cli",
        "warmloop.cli.main",
    ]


def test_a_public_name_loads_on_first_use() -> None:
    loaded = _loaded_after("from warmloop import Agent")
    assert "warmloop.agent.agent" in loaded
    import warmloop

    with pytest.raises(AttributeError, match="no attribute 'Agnet'"):
        _ = warmloop.Agnet


@pytest.mark.parametrize("name", sorted(VERBS))
def test_each_listed_verb_is_the_command_and_help_line_it_says(name: str) -> None:
    command = load_verb(name)
    assert command.name == name
    assert VERBS[name][1] == command.get_short_help_str(limit=10_000), name


def test_the_help_lists_every_verb_and_runs_one() -> None:
    listed = CliRunner().invoke(main, ["--help"])
    assert listed.exit_code == 0
    for name in VERBS:
        assert f"  {name} " in listed.output
    ran = CliRunner().invoke(main, ["sessions", "--help"])
    assert ran.exit_code == 0, ran.output
    assert "List stored sessions" in ran.output
