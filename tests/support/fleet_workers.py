"""Fleet worker processes for tests and benchmarks: `warmloop worker` started as a user
would, on the loopback fleet host, killed with SIGKILL and restarted under its name. What
the workers print on stderr is passed on and kept, so a test can wait for a line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
AGENTS = "tests.fleet.agents:registry"


class Workers:
    """Named worker processes; `kill` is SIGKILL, `start` (re)starts one under its name."""

    def __init__(self, db: str, host: str, *, concurrency: int = 1, per_minute: int | None = None):
        self.db, self.host = db, host
        self.concurrency, self.per_minute = concurrency, per_minute
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.kills = 0
        self.lines: list[str] = []
        """Every worker's stderr, line by line, as `<name>: <line>`."""
        self._printed = threading.Condition()

    def start(self, name: str, *options: str) -> None:
        command = [sys.executable, "-m", "warmloop", "worker", "--db", self.db, *options]
        command += ["--agents", AGENTS, "--name", name, "--concurrency", str(self.concurrency)]
        if self.per_minute is not None:
            command += ["--per-minute", str(self.per_minute)]
        env = dict(os.environ, WARMLOOP_FLEET_HOST=self.host, WARMLOOP_FLEET_WORKER=name)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        process = subprocess.Popen(  # its own process group, as a worker on its own machine
            command, env=env, cwd=ROOT, stderr=subprocess.PIPE, start_new_session=True
        )
        self.processes[name] = process
        assert process.stderr is not None
        threading.Thread(target=self._read, args=(name, process.stderr), daemon=True).start()

    def _read(self, name: str, stderr: IO[bytes]) -> None:
        for raw in stderr:
            os.write(2, raw)  # passed on as before (pytest captures the descriptor)
            line = raw.decode(errors="replace").rstrip("\n")
            with self._printed:
                self.lines.append(f"{name}: {line}")
                self._printed.notify_all()

    def wait_for(self, seen: Callable[[list[str]], bool], timeout: float) -> bool:
        """Wait until `seen(lines)` holds for what the workers printed (False at `timeout`,
        only a bound on a broken run)."""
        with self._printed:
            return self._printed.wait_for(lambda: seen(self.lines), timeout)

    def kill(self, name: str) -> None:
        process = self.processes[name]
        os.killpg(process.pid, signal.SIGKILL)  # the whole group, as a machine that dies
        process.wait()
        self.kills += 1

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
