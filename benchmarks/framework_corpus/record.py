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


def record(driver: Path, venv: Path, out: Path) -> None:
    """Run one driver through `warmloop record` against the scripted loopback API."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with serve(Upstream()) as upstream:
        command = [sys.executable, "-m", "warmloop", "record", "--upstream", upstream]
        recorder = subprocess.Popen(
            [*command, "--port", "0", "--out", str(out)],
            env={**env, "COLUMNS": "400"},
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert recorder.stdout is not None
            found = URL.search(recorder.stdout.readline())
            if found is None:
                raise RuntimeError("warmloop record printed no address")
            subprocess.run(
                [str(venv / "bin" / "python"), str(driver)],
                env={**env, "BASE_URL": found.group(0)},
                check=True,
                timeout=600,
            )
        finally:
            recorder.send_signal(signal.SIGTERM)
            recorder.wait(timeout=30)


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
        if args.only and name not in args.only:
            continue
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "requests.jsonl"
            record(driver, args.venv, log)
            print(f"{name}: {store(log, name)}")
