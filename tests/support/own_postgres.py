"""A throwaway PostgreSQL cluster a test owns, so it can stop and start the server under a
running fleet without touching the shared test server (scripts/postgres.sh, port 55432).

The cluster lives in a fresh directory under the system's temporary directory rather than
in pytest's `tmp_path`: its socket path must stay under the 107 bytes a Unix socket allows,
and the server's user (`postgres` when the tests run as root, which PostgreSQL refuses to
run as) must reach it. It listens on its socket only, on a port of its own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _bin() -> Path | None:
    """The newest installed server's binaries (a directory with pg_ctl), as postgres.sh."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if found:
        return found[-1].parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """`initdb` once, then `start` and `stop` (fast: connections are cut, as in a restart)."""

    def __init__(self) -> None:
        binaries = _bin()
        if binaries is None:
            raise FileNotFoundError("no PostgreSQL server binaries (pg_ctl, initdb) found")
        self.bin = binaries
        self.root = Path(tempfile.mkdtemp(prefix="warmloop-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://postgres@/postgres?host={self.root}&port={self.port}"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.root}' -p {self.port}"
        log = str(self.root / "server.log")
        self._run(
            "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", log, "-o", options
        )

    def stop(self) -> None:
        self._run("pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D", str(self.data))

    def remove(self) -> None:
        """Stop the server if it runs, and delete the cluster."""
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
