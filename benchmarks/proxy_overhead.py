"""What `warmloop proxy` costs on loopback: added latency per request and memory per
conversation (issue 34, must-show 3, second half).

A scripted Chat Completions upstream answers on 127.0.0.1; `warmloop proxy` runs as the CLI
runs it (a subprocess, every fix and the guard on) in front of it, and beside it a second
one with every fix and the guard off (forwarding only, as `warmloop record`). One keep-alive client
sends the same requests straight to the upstream and through the proxy, alternating, so a
loaded machine slows both alike: `--conversations-timed` conversations of `--steps` growing
requests each (a 4 KB system prompt and tools, a tool call and result per step). Reported:
median and 99th percentile per request, direct and through the proxy, and their ratio.
Then `--open` more conversations (a different task each) go through the proxy and its
resident memory (VmRSS) is read before and after: memory with that many conversations held.

    python -m benchmarks proxy_overhead [--conversations-timed 100 --steps 10 --open 10000]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2

from benchmarks.audit_scale import TOOLS

SYSTEM = "You are a careful coding agent. Read before you edit; cite the lines you change. " * 50
REPLY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-5",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "done"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 1, "total_tokens": 1201},
    }
).encode()


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as an API's server: no 40 ms wait on a delayed ACK

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def body(task: int, steps: int) -> bytes:
    """Conversation `task`'s request after `steps` tool calls (each task named by a hash, so
    no two read as one task with a counter changed)."""
    name = hashlib.sha1(str(task).encode()).hexdigest()[:12]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Task {name}: find why test {name} fails and fix it."},
    ]
    for step in range(steps):
        call = {
            "id": f"call_{task}_{step}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": f"f{step}.py"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        lines = "".join(f"{n}: line {n} of f{step}.py for task {name}\n" for n in range(20))
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": lines})
    return json.dumps({"model": "gpt-5", "messages": messages, "tools": TOOLS}).encode()


OFF = ("--no-breakpoints", "--no-cache-key", "--no-guard")
"""`warmloop proxy` forwarding only, as `warmloop record` does (without its log)."""


def start_proxy(upstream: str, *options: str) -> tuple[subprocess.Popen[str], str]:
    command = ["proxy", "--upstream", upstream, "--port", "0", *options]
    process = subprocess.Popen(
        [sys.executable, "-m", "warmloop", *command],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, line.split("point your client at ", 1)[1].split()[0]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc (Linux only)")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations-timed", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--open", type=int, default=10_000)
    args = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    process, proxy = start_proxy(upstream)
    plain, forwarding = start_proxy(upstream, *OFF)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
    try:
        with httpx2.Client(timeout=60, trust_env=False) as client:
            timings: dict[str, list[float]] = {"direct": [], "forwarding": [], "proxy": []}
            for step in range(args.steps):
                for task in range(args.conversations_timed):
                    data = body(task, step)
                    arms = (("direct", upstream), ("forwarding", forwarding), ("proxy", proxy))
                    for name, base in arms:
                        started = time.perf_counter()
                        reply = client.post(
                            f"{base}/v1/chat/completions", content=data, headers=headers
                        )
                        timings[name].append(time.perf_counter() - started)
                        assert reply.status_code == 200, reply.text
            before = rss_mib(process.pid)
            first = 1_000_000
            for task in range(first, first + args.open):
                client.post(f"{proxy}/v1/chat/completions", content=body(task, 1), headers=headers)
            after = rss_mib(process.pid)
            page = client.get(f"{proxy}/warmloop/status").json()
    finally:
        for child in (process, plain):
            child.terminate()
            child.wait()
        server.shutdown()

    print(f"{len(timings['direct'])} requests each way (loopback, every fix and the guard on)")
    print(f"{'':12}{'median ms':>10}{'p99 ms':>12}")
    for name, values in timings.items():
        median = statistics.median(values) * 1000
        print(f"{name:12}{median:10.2f}{percentile(values, 0.99) * 1000:12.2f}")
    direct = timings["direct"]
    for name in ("forwarding", "proxy"):
        median_ratio = statistics.median(timings[name]) / statistics.median(direct)
        p99_ratio = percentile(timings[name], 0.99) / percentile(direct, 0.99)
        print(f"{name[:5] + '/direct':12}{median_ratio:10.2f}{p99_ratio:12.2f}")
    held = page["conversations"]
    print(
        f"memory: {before:.1f} MiB after the timed run, {after:.1f} MiB with {held} "
        f"conversations held ({(after - before) * 1024 / max(args.open, 1):.1f} KiB each)"
    )
