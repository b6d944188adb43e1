"""Record the framework corpus: `python -m benchmarks framework_corpus --venv DIR` (see the
package docstring)."""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.framework_corpus.truth import truth
from benchmarks.framework_corpus.upstream import Upstream, serve

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = Path(__file__).resolve().parent / "drivers"
CORPUS = ROOT / "tests" / "audit" / "corpus"
URL = re.compile(r"http://127\.0\.0\.1:[0-9]+")
OWN = "warmloop_"
"""Drivers of warmloop's own loop (`drivers/warmloop_*.py`): run in the project's environment,
the row the frameworks stand beside, never part of the audit's recorded corpus."""


def interpreter(driver: Path, venv: Path) -> str:
    """The Python that runs `driver`: the corpus venv's, or this one for warmloop's own."""
    return sys.executable if driver.stem.startswith(OWN) else str(venv / "bin" / "python")


def record(driver: Path, venv: Path, out: Path, *, proxy: bool = False) -> list[str]:
    """Run one driver through `warmloop record` (or, with `proxy`, `warmloop proxy --record`,
    every fix and the guard on) against the scripted loopback API; the lines it wrote on
    stderr (the proxy's guard names each bust there)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with serve(Upstream()) as upstream, tempfile.TemporaryFile("w+") as said:
        command = [sys.executable, "-m", "warmloop"]
        command += ["proxy", "--record"] if proxy else ["record", "--out"]
        recorder = subprocess.Popen(
            [*command, str(out), "--upstream", upstream, "--port", "0"],
            env={**env, "COLUMNS": "400"},
            stdout=subprocess.PIPE,
            stderr=said,
            text=True,
        )
        try:
            assert recorder.stdout is not None
            # the line names the upstream first, then the address to point the client at
            found = URL.findall(recorder.stdout.readline())
            if not found:
                raise RuntimeError(f"warmloop {command[3]} printed no address")
            subprocess.run(
                [interpreter(driver, venv), str(driver)],
                env={**env, "BASE_URL": found[-1]},
                check=True,
                timeout=600,
                stdout=subprocess.DEVNULL,
            )
        finally:
            recorder.send_signal(signal.SIGTERM)
            recorder.wait(timeout=30)
        said.seek(0)
        return said.read().splitlines()


def store(log: Path, name: str) -> Path:
    """Gzip a log into the corpus (no timestamp in the gzip header) and write its truth."""
    target = CORPUS / f"{name}.jsonl.gz"
    with (
        log.open("rb") as source,
        target.open("wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
    ):
        shutil.copyfileobj(source, packed)
    write_truth(target)
    return target


def write_truth(log: Path) -> None:
    found = truth(log)
    path = log.with_name(log.name.removesuffix(".jsonl.gz") + ".truth.json")
    path.write_text(json.dumps(found, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--venv", type=Path, default=Path("/tmp/corpus-venv"))
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--truth-only", action="store_true")
    args = parser.parse_args()
    CORPUS.mkdir(parents=True, exist_ok=True)
    if args.truth_only:
        for log in sorted(CORPUS.glob("*.jsonl.gz")):
            write_truth(log)
        return
    for driver in sorted(DRIVERS.glob("*.py")):
        name = driver.stem
        if (args.only and name not in args.only) or name.startswith(OWN):
            continue
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "requests.jsonl"
            record(driver, args.venv, log)
            print(f"{name}: {store(log, name)}")
