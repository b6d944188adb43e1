"""End to end against a real llama.cpp server: llama-cpp-python's OpenAI-compatible server
serving Gemma 3 270M, driven by an Agent through `OpenAICompatibleModel`.

The model is a small base model without native tool calling, so the agent uses the text
protocol and a grammar (llama.cpp's `grammar` request field) makes every reply parse.
The server reports KV reuse on its log ("Llama.generate: N prefix-match hit, remaining M
prompt tokens to eval"), not in the response body, so reuse is read from there.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx2
import pytest
from openai import AsyncOpenAI
from pydantic import BaseModel

from tests.support.wire import WireLog, wire_stream
from warmloop import Agent, AssistantTurn, Run, check_pairing
from warmloop.outputs import Outputs
from warmloop.protocols.grammar import action_grammar
from warmloop.providers.local.gemma import gemma_path
from warmloop.providers.openai.chat import OpenAICompatibleModel

pytestmark = pytest.mark.engine
pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server]")

STARTUP_SECONDS = 300.0  # a hang guard only: the process exiting is checked on every poll
PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt")
QUESTIONS = ["Is 2 + 2 equal to 4?", "Is 3 + 3 equal to 7?"]
# Every generated token is checked against the grammar over Gemma's 262k vocabulary: keep
# replies short so the test stays quick on a small CPU.
THOUGHT_CHARS = 24


class Verdict(BaseModel):
    """A closed answer set keeps the grammar's output short and bounded."""

    answer: Literal["yes", "no"]


@dataclass(frozen=True)
class Server:
    """A running server: its OpenAI base URL and the file its log goes to."""

    base_url: str
    log: Path

    def prefix_hits(self) -> list[int]:
        """KV tokens reused per request, as the server logged them (none for a cold one)."""
        return [int(m.group(1)) for m in PREFIX_HIT.finditer(self.log.read_text("utf-8"))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_until_ready(process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text("utf-8", errors="replace")[-2000:]
            pytest.fail(f"llama.cpp server exited with {process.returncode}:\n{tail}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=1):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    pytest.fail(f"llama.cpp server not ready within {STARTUP_SECONDS} s; see {log}")


@pytest.fixture
def llama_server(tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log = tmp_path / "server.log"
    # The GGUF has no chat template and llama-cpp-python's "gemma" format drops the system
    # message (where the text protocol teaches the tools); chatml keeps every role.
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gemma_path()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--chat_format",
        "chatml",
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(process, base_url, log)
        yield Server(base_url, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def recording_client(base_url: str, wire_log: WireLog) -> AsyncOpenAI:
    """An SDK client that records every request body it sends into `wire_log`, by session."""

    async def record(request: httpx2.Request) -> None:
        if not request.url.path.endswith("/chat/completions"):  # the window discovery
            return
        session = request.headers["X-Session-ID"]
        wire_log.record(session, wire_stream(request.content, "messages"))

    http = httpx2.AsyncClient(event_hooks={"request": [record]})
    return AsyncOpenAI(
        api_key="not-needed", base_url=base_url, http_client=http, max_retries=0, timeout=60
    )


async def test_follow_ups_on_a_real_server_reuse_the_previous_requests_kv(
    llama_server: Server, wire_log: WireLog
) -> None:
    grammar = action_grammar([Outputs(Verdict).spec], max_thought_chars=THOUGHT_CHARS)
    model = OpenAICompatibleModel(
        llama_server.base_url,
        client=recording_client(llama_server.base_url, wire_log),
        text_protocol=True,
        params={"temperature": 0, "max_tokens": 64, "grammar": grammar},
    )
    agent = Agent(model, outputs=Verdict, instructions="Answer the question, yes or no.")

    runs: list[Run] = []
    for question in QUESTIONS:
        runs.append(await agent.run(question, history=runs[-1].transcript if runs else None))

    for run in runs:
        assert run.outputs.model_dump()["answer"] in ("yes", "no")
        assert (len(run.requests), run.extracted) == (1, False)
    final = runs[-1].transcript
    check_pairing(final.messages)
    turns = [m for m in final.messages if isinstance(m, AssistantTurn)]
    assert [len(t.tool_calls) for t in turns] == [1] * len(QUESTIONS)  # every reply parsed
    prompts = [run.requests[0].usage.prompt_tokens for run in runs]
    hits = llama_server.prefix_hits()
    assert len(wire_log.streams) == 1  # one session: each request checked against the last
    assert len(hits) == len(runs) - 1
    # Prefix efficiency: KV reused / the previous request's prompt (all a loop can reuse).
    for hit, previous in zip(hits, prompts, strict=False):
        assert hit >= previous, f"reused {hit} of the previous {previous} prompt tokens"
