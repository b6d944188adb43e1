"""Session affinity on a self-hosted fleet: real engine replicas behind a real router.

Starts on loopback N replicas of llama-cpp-python's OpenAI-compatible server (Gemma 3 270M,
the smallest embedded model; one thread each; `--cache true`, so each replica keeps the KV
state of the conversations it served) and nginx in front of them, then drives concurrent
sessions through warmloop's `OpenAICompatibleModel`, which sends each conversation's routing
key in `X-Session-ID`. Three fleets, each started fresh:

  single       one replica, each session served alone (one after another): the baseline
  header       N replicas behind nginx `hash $http_x_session_id consistent`
  round-robin  the same replicas behind nginx's default round robin

Prompt tokens the replicas evaluated come from the replicas themselves: the prompt length
each reports in `usage.prompt_tokens`, less the KV tokens its log says it reused
("Llama.generate: N prefix-match hit", after restoring a saved state or from the live one),
checked against llama.cpp's own counter on the same logs ("prompt eval time = T ms / N
tokens"), whose milliseconds are the replicas' prompt-evaluation seconds.
Which replica served each request comes from nginx's own access log. Seconds are wall time
for all sessions. vLLM's router (`vllm-router`, PyPI) was tried first: it waits for `GET
/health` on every worker before it routes, and llama-cpp-python's server has no such route,
so nginx (Debian) is the router here.

Install once (nothing is installed at run time), then run:

    pip install -e '.[server,gemma]' && apt-get install -y nginx-light
    python -m benchmarks affinity [--sessions 8] [--steps 6] [--replicas 2]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from openai import AsyncOpenAI

from warmloop import SystemText, Transcript, UserText
from warmloop.providers.openai.chat import OpenAICompatibleModel
from warmloop.providers.openai.record import SESSION_HEADER

PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt")
PROMPT_EVAL = re.compile(r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens")
"""llama.cpp's own counter, printed after each completion: milliseconds and prompt tokens
evaluated (batches of more than one token; every batch here is)."""
STARTUP_SECONDS = 180.0
N_CTX = 2048
MAX_TOKENS = 4
SYSTEM = (
    "You are a bookkeeping assistant. Each message reports one entry of a ledger. "
    "Reply with the running total only, as a number."
)
MODES = ("single", "header", "round-robin")


def header_variable(header: str) -> str:
    """nginx's variable for a request header: `X-Session-ID` -> `$http_x_session_id`."""
    return "$http_" + header.lower().replace("-", "_")


def nginx_config(port: int, replicas: Sequence[int], directory: Path, *, header: str | None) -> str:
    """An nginx config that fronts `replicas` on loopback `port`: consistent hashing on
    `header` when one is named, round robin otherwise. Its access log names the session
    and the replica of every request."""
    if not replicas:
        raise ValueError("nginx needs at least one replica")
    balance = f"    hash {header_variable(header)} consistent;\n" if header else ""
    servers = "".join(f"    server 127.0.0.1:{p};\n" for p in replicas)
    logged = header_variable(header or SESSION_HEADER)
    temps = "".join(
        f"  {kind}_temp_path {directory / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        "daemon off;\nworker_processes 1;\n"
        f"pid {directory / 'nginx.pid'};\nerror_log {directory / 'error.log'} warn;\n"
        "events { worker_connections 256; }\nhttp {\n"
        f"  log_format affinity '{logged} $upstream_addr';\n"
        f"  access_log {directory / 'access.log'} affinity;\n{temps}"
        f"  upstream replicas {{\n{balance}{servers}  }}\n"
        f"  server {{\n    listen 127.0.0.1:{port};\n    location / {{\n"
        "      proxy_pass http://replicas;\n      proxy_read_timeout 600s;\n"
        "      proxy_buffering off;\n    }\n  }\n}\n"
    )


def replica_command(model: Path, port: int, threads: int = 1) -> list[str]:
    """llama-cpp-python's server on loopback `port` with its prompt cache on."""
    return [
        *(sys.executable, "-m", "llama_cpp.server", "--model", str(model)),
        *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX)),
        *("--n_threads", str(threads), "--n_threads_batch", str(threads)),
        *("--chat_format", "chatml", "--cache", "true", "--verbose", "true"),
    ]


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports."""
    import socket

    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(p.getsockname()[1]) for p in probes]
    finally:
        for probe in probes:
            probe.close()


def wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Return once `url` answers; a clear error if the process exits or never answers."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text("utf-8", errors="replace")[-2000:]
            raise SystemExit(f"{process.args!r} exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise SystemExit(f"{url} did not answer within {STARTUP_SECONDS:.0f} s; see {log}")


@contextmanager
def started(command: list[str], log: Path, ready: str) -> Iterator[None]:
    """A process writing to `log`, ready once `ready` answers; stopped on exit."""
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for(ready, process, log)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Fleet:
    """A running fleet: where clients send requests, and where its parts log."""

    url: str
    replica_logs: list[Path]
    access_log: Path | None

    def logs(self) -> str:
        """The replicas' logs, one after another."""
        return "".join(p.read_text("utf-8", errors="replace") for p in self.replica_logs)

    def reused(self) -> int:
        """KV tokens the replicas reused, summed over their logs."""
        return sum(int(m.group(1)) for m in PREFIX_HIT.finditer(self.logs()))

    def prompt_eval(self) -> tuple[int, float]:
        """Prompt tokens and seconds llama.cpp counted evaluating, summed over replicas."""
        found = PROMPT_EVAL.findall(self.logs())
        return sum(int(n) for _, n in found), sum(float(ms) for ms, _ in found) / 1000

    def replicas_per_session(self) -> float:
        """Mean number of replicas that served one session (nginx's access log)."""
        if self.access_log is None:
            return 1.0
        seen: dict[str, set[str]] = {}
        for line in self.access_log.read_text("utf-8").splitlines():
            session, _, upstream = line.partition(" ")
            seen.setdefault(session, set()).add(upstream)
        return sum(len(s) for s in seen.values()) / max(1, len(seen))


@contextmanager
def fleet(mode: str, replicas: int, model: Path, directory: Path) -> Iterator[Fleet]:
    """The fleet `mode` names, started fresh (no KV state from another mode)."""
    count = 1 if mode == "single" else replicas
    ports = free_ports(count + 1)
    router_port, replica_ports = ports[0], ports[1:]
    logs = [directory / f"{mode}-replica-{i}.log" for i in range(count)]
    with ExitStack() as stack:
        for port, log in zip(replica_ports, logs, strict=True):
            url = f"http://127.0.0.1:{port}/v1/models"
            stack.enter_context(started(replica_command(model, port), log, url))
        if mode == "single":
            yield Fleet(f"http://127.0.0.1:{replica_ports[0]}/v1", logs, None)
            return
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        if not Path(nginx).is_file():
            raise SystemExit("nginx is not installed: apt-get install -y nginx-light")
        home = directory / f"{mode}-nginx"
        home.mkdir(exist_ok=True)
        header = SESSION_HEADER if mode == "header" else None
        conf = home / "nginx.conf"
        conf.write_text(nginx_config(router_port, replica_ports, home, header=header))
        command = [nginx, "-c", str(conf), "-p", str(home), "-e", str(home / "error.log")]
        url = f"http://127.0.0.1:{router_port}/v1/models"
        stack.enter_context(started(command, home / "stdout.log", url))
        (home / "access.log").write_text("")  # the readiness probe is no session's request
        yield Fleet(f"http://127.0.0.1:{router_port}/v1", logs, home / "access.log")


def ledger(session: int) -> str:
    """A session's own opening: what its KV holds that no other session's does."""
    rows = ", ".join(
        f"account {session}-{n} holds {(session * 37 + n * 11) % 90 + 10}" for n in range(8)
    )
    return f"Ledger {session}. Opening balances: {rows}. Start the total at 0."


async def session(model: OpenAICompatibleModel, index: int, steps: int) -> int:
    """One conversation of `steps` requests; the prompt tokens the replicas reported."""
    transcript = Transcript([SystemText(SYSTEM), UserText(ledger(index))])
    prompt = 0
    for step in range(steps):
        response = await model.send(
            model.render(transcript, ()), session_id=transcript.conversation
        )
        prompt += response.usage.prompt_tokens
        transcript.append(response.turn)
        amount = (index * 13 + step * 7) % 50 + 1
        transcript.append(UserText(f"Entry {step + 1}: add {amount} to account {index}-{step}."))
    return prompt


@dataclass(frozen=True)
class Result:
    """One mode's figures."""

    mode: str
    prompt: int
    evaluated: int
    counted: int
    """llama.cpp's own count of the same: it must equal `evaluated`."""
    eval_seconds: float
    seconds: float
    spread: float


async def measure(mode: str, args: argparse.Namespace, model_file: Path, root: Path) -> Result:
    """Run every session on the fleet `mode` names and read what its replicas did."""
    with fleet(mode, args.replicas, model_file, root) as running:
        client = AsyncOpenAI(api_key="not-needed", base_url=running.url, max_retries=0, timeout=600)
        model = OpenAICompatibleModel(
            f"{running.url}#gemma",
            client=client,
            context_window=N_CTX,
            params={"max_tokens": MAX_TOKENS, "temperature": 0, "seed": 1},
        )
        started_at = time.perf_counter()
        if mode == "single":  # each session alone on the replica
            prompts = [await session(model, i, args.steps) for i in range(args.sessions)]
        else:
            runs = (session(model, i, args.steps) for i in range(args.sessions))
            prompts = list(await asyncio.gather(*runs))
        seconds = time.perf_counter() - started_at
        await client.close()
        total = sum(prompts)
        counted, eval_seconds = running.prompt_eval()
        evaluated = total - running.reused()
        spread = running.replicas_per_session()
        return Result(mode, total, evaluated, counted, eval_seconds, seconds, spread)


def table(results: Sequence[Result]) -> str:
    """The markdown table, ratios against the single-replica baseline."""
    base = results[0]
    lines = [
        "| routing | prompt tokens | evaluated (llama.cpp's count) | vs single "
        "| prompt-eval s | vs single | wall s | vs single | replicas per session |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.mode} | {r.prompt} | {r.evaluated} ({r.counted}) "
            f"| {r.evaluated / base.evaluated:.2f} | {r.eval_seconds:.1f} "
            f"| {r.eval_seconds / base.eval_seconds:.2f} | {r.seconds:.1f} "
            f"| {r.seconds / base.seconds:.2f} | {r.spread:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the logs in this directory")
    args = parser.parse_args()
    from warmloop.providers.local.gemma import gemma_path

    model_file = gemma_path()
    with tempfile.TemporaryDirectory(prefix="affinity-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        results = [asyncio.run(measure(mode, args, model_file, root)) for mode in MODES]
    print(
        f"{args.sessions} sessions x {args.steps} steps, {args.replicas} replicas "
        f"(llama-cpp-python server, {model_file.name}, 1 thread each; router: nginx)"
    )
    print(table(results))
