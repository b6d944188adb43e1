"""The fleet guide (docs/guides/fleet.md, the README's Fleet section before) as a newcomer
uses it: its registry module and batch file
written as they stand, its commands run as written (the database URL and the batch id are
the user's own: here the test server's database and the id `submit` printed), against the
loopback fleet host standing in for the model."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.fleet_host import FleetHost, serve
from tests.support.fleet_workers import ROOT

pytestmark = pytest.mark.slow  # real `warmloop worker` processes: the slow tier

SECTION = (ROOT / "docs" / "guides" / "fleet.md").read_text(encoding="utf-8")


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", SECTION, re.DOTALL)


def warmloop(line: str) -> list[str]:
    """A `warmloop ...` command line as the installed command would run it."""
    words = shlex.split(line)
    assert words[0] == "warmloop", line
    return [sys.executable, "-m", "warmloop", *words[1:]]


def test_the_readme_fleet_commands_run_as_written(fleet_db: str, tmp_path: Path) -> None:
    (registry,) = blocks("python")
    (tasks,) = blocks("json")
    (commands,) = blocks("sh")
    assert registry.startswith("# myagents.py\n")
    (tmp_path / "myagents.py").write_text(registry, encoding="utf-8")
    (tmp_path / "tasks.jsonl").write_text(tasks, encoding="utf-8")
    lines = [line for line in commands.splitlines() if line.strip()]
    export, start, submit, status = lines
    assert export.startswith("export WARMLOOP_FLEET_DB=")
    host = FleetHost(steps=0)  # the model submits at once
    with serve(host) as url:
        env = dict(
            os.environ,
            WARMLOOP_FLEET_DB=fleet_db,
            TRIAGE_MODEL=f"openai-compatible:{url}/w/readme/v1#served-model",
            PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        )
        start_line = start.replace('"$(hostname)"', "readme-worker")
        worker = subprocess.Popen(warmloop(start_line), env=env, cwd=tmp_path)
        try:
            submitted = subprocess.run(
                warmloop(submit),
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=1_200,  # a hang guard only
                check=True,
            )
            batch = submitted.stdout.strip()
            shown = subprocess.run(
                warmloop(f"{status.replace('BATCH_ID', batch)} --json"),
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=1_200,  # a hang guard only
                check=True,
            )
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    report = json.loads(shown.stdout)
    assert report["counts"] == {"done": 2}
    answers = [t["result"]["outputs"]["answer"] for t in report["tasks"]]
    assert answers == ["task-1 done", "task-2 done"]
    assert len(host.requests()) == 2
