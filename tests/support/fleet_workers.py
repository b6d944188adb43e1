"""Fleet worker processes for tests and benchmarks: `warmloop worker` started as a user
would, on the loopback fleet host, killed with SIGKILL and restarted under its name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENTS = "tests.fleet.agents:registry"


class Workers:
    """Named worker processes; `kill` is SIGKILL, `start` (re)starts one under its name."""

    def __init__(self, db: str, host: str, *, concurrency: int = 1, per_minute: int | None = None):
        self.db, self.host = db, host
        self.concurrency, self.per_minute = concurrency, per_minute
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.kills = 0

    def start(self, name: str, *options: str) -> None:
        command = [sys.executable, "-m", "warmloop", "worker", "--db", self.db, *options]
        command += ["--agents", AGENTS, "--name", name, "--concurrency", str(self.concurrency)]
        if self.per_minute is not None:
            command += ["--per-minute", str(self.per_minute)]
        env = dict(os.environ, WARMLOOP_FLEET_HOST=self.host, WARMLOOP_FLEET_WORKER=name)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        self.processes[name] = subprocess.Popen(command, env=env, cwd=ROOT)

    def kill(self, name: str) -> None:
        process = self.processes[name]
        os.kill(process.pid, signal.SIGKILL)
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
