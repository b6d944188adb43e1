"""A fleet: a worker process takes a batch of tasks from PostgreSQL and runs them, each a
stored session (needs `pip install 'warmloop[fleet]'` and a PostgreSQL database).

    python examples/fleet_batch.py postgresql://user@localhost/fleet
"""

import os
import subprocess
import sys
import time
from pathlib import Path

url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WARMLOOP_FLEET_DB", "")
if not url:
    print("skipped: give a PostgreSQL URL (an argument or $WARMLOOP_FLEET_DB)")
    sys.exit(0)

from warmloop.fleet.client import Fleet  # noqa: E402  (the fleet extra, only when used)
from warmloop.fleet.tasks import Task  # noqa: E402

here = Path(__file__).parent
command = "worker --agents fleet_agents:registry --name example-worker --concurrency 1"
worker = subprocess.Popen(  # one worker; a real fleet runs one or more per machine
    [sys.executable, "-m", "warmloop", *command.split(), "--db", url],
    cwd=here,
    stderr=subprocess.DEVNULL,
)
try:
    with Fleet(url) as fleet:
        tasks = [Task("triage", f"Ticket {n}: the site is down") for n in (1, 2, 3)]
        batch = fleet.submit_batch(tasks)  # the first task warms the cache, then the rest
        while not (status := fleet.status(batch)).finished:
            time.sleep(0.5)
        for task in status.tasks:
            result = task.result
            said = result.outputs or result.error if result is not None else task.error
            print(f"{task.task.task}: {said}")
        print("tasks:", dict(status.counts))
finally:
    worker.terminate()
    worker.wait()
