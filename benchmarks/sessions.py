"""Session persistence cost as a session grows, on SQLite and PostgreSQL, and resume time.

A step stores what is new (an assistant turn, its tool result and the request's usage) in
one transaction through the loop's own hook (`SessionPersistence.appended`), so its cost
should not grow with the session. The step time is sampled when the session holds about
10, 100, 1,000 and 10,000 messages; then a 10,000-message session is resumed (lease, load,
validation) from a fresh store object. SQLite runs with `synchronous=FULL` (one fsync per
step); PostgreSQL is the local server `scripts/postgres.sh` starts (default settings).

    python -m benchmarks sessions            # both stores (PostgreSQL via scripts/postgres.sh)
    python -m benchmarks sessions --no-postgres
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.overhead import step_messages
from warmloop import RequestRecord, SQLiteStore, SystemText, Transcript, Usage, UserText
from warmloop.sessions.lease import Lease
from warmloop.sessions.persistence import SessionPersistence
from warmloop.sessions.resume import open_session
from warmloop.sessions.sql import SqlStore
from warmloop.wire.guard import PrefixCheck

SIZES = (10, 100, 1_000, 10_000)
WINDOW = 25  # steps sampled around each size (fsync times are noisy)
RESUMES = 5
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "postgres.sh"

Opener = Callable[[], SqlStore]


Samples = dict[int, list[tuple[float, float]]]


async def grow(store: SqlStore, name: str) -> Samples:
    """Grow session `name` step by step; per-step (wall, CPU) seconds near each size (as
    the loop awaits it: the transaction in a worker thread)."""
    lease: Lease = store.acquire(name)
    transcript = Transcript([SystemText("You are a benchmark agent."), UserText("Read all.")])
    recorder = SessionPersistence(store, lease, transcript)
    records: list[RequestRecord] = []
    samples: Samples = {size: [] for size in SIZES}
    k = 0
    while len(transcript) < SIZES[-1] + WINDOW * 2:
        transcript.extend(step_messages(k))
        usage = Usage.of_parts(10, 1000 + k, 0, 20)
        records.append(RequestRecord(usage, 0.5, PrefixCheck(1, 1)))
        started, cpu = time.perf_counter(), time.process_time()
        await recorder.appended(transcript, records)
        elapsed = (time.perf_counter() - started, time.process_time() - cpu)
        for size in SIZES:
            if abs(len(transcript) - size) <= WINDOW:
                samples[size].append(elapsed)
        k += 1
    store.release(lease)
    return samples


async def resume_seconds(open_store: Opener, name: str) -> tuple[float, int]:
    """Median seconds to resume `name` from a fresh store object (lease, load, validate)."""
    times, length = [], 0
    for _ in range(RESUMES):
        store = open_store()
        started = time.perf_counter()
        async with open_session(name, store) as recorder:
            length = len(recorder.transcript)
            times.append(time.perf_counter() - started)
        store.close()
    return statistics.median(times), length


def report(label: str, open_store: Opener) -> None:
    store = open_store()
    name = "bench-" + secrets.token_hex(3)
    samples = asyncio.run(grow(store, name))
    store.close()
    wall = {size: statistics.median(w for w, _ in values) for size, values in samples.items()}
    cpu = {size: statistics.median(c for _, c in values) for size, values in samples.items()}
    print(f"\n{label}: per-step persistence (one transaction: 2 messages + 1 request record)")
    print(f"{'messages':>9} {'median wall ms':>15} {'median CPU ms':>14} {'steps':>6}")
    for size in SIZES:
        line = f"{size:>9} {wall[size] * 1000:>15.3f} {cpu[size] * 1000:>14.3f}"
        print(f"{line} {len(samples[size]):>6}")
    for size in SIZES[1:]:
        print(
            f"ratio {size:,} / {SIZES[0]} msgs: wall {wall[size] / wall[SIZES[0]]:.2f}, "
            f"CPU {cpu[size] / cpu[SIZES[0]]:.2f} (1.00 = perfectly flat)"
        )
    seconds, length = asyncio.run(resume_seconds(open_store, name))
    print(f"resume a {length:,}-message session: {seconds * 1000:.1f} ms (median of {RESUMES})")


def postgres_server() -> str | None:
    url = os.environ.get("WARMLOOP_TEST_POSTGRES", "").strip()
    if url:
        return url
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"\nPostgreSQL: skipped, the server could not be started ({done.stderr.strip()})")
        return None
    return done.stdout.strip()


def with_postgres(run: Callable[[str], None]) -> None:
    """Run `run` against a throwaway database on the test server, dropped afterwards."""
    import psycopg

    from tests.support.stores import with_database

    server = postgres_server()
    if server is None:
        return
    database = "warmloop_bench_" + secrets.token_hex(4)
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {database}".encode())
    try:
        run(with_database(server, database))
    finally:
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)".encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    options = parser.parse_args()
    print("warmloop session persistence: per-step cost as a session grows, and resume time")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "sessions.db"
        report(f"SQLite ({path.name}, WAL, synchronous=FULL)", lambda: SQLiteStore(path))
    if not options.no_postgres:
        from warmloop.sessions.postgres import PostgresStore

        with_postgres(
            lambda url: report(
                "PostgreSQL (local server, psycopg pool)", lambda: PostgresStore(url)
            )
        )
