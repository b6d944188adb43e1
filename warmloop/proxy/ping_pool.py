"""Sending the proxy's keep-alives: each on a bounded pool of threads, within a total deadline
and a bound on the answer's bytes, so no upstream answer can hold another conversation's
keep-alive or the proxy's memory.

- `Pool`: `WORKERS` daemon threads (started on the first job) take the jobs in the order they
  came; the scheduler hands them over and never waits on an upstream, so a trickling or
  silent answer holds one worker, for its deadline at most, and the others go on.
- `fetch`: one keep-alive's request and answer. Its answer is read as it streams, its
  compressed bytes counted before anything is inflated (`ANSWER_BYTES`), inflated only up
  to `DECODED_BYTES` (`exchange.response_facts.Inflater`), and the exchange is bounded by
  its deadline (`ANSWER_SECONDS`): connecting, writing and each read wait a third of it at
  most, and no read starts past two thirds, so an answer that trickles a byte every few
  seconds ends by the deadline too. An answer past a bound is read no further: what was
  read is what its usage is read from.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx2

from warmloop.exchange.response_facts import Inflater, ResponseFacts, response_facts

WORKERS = 16
"""Keep-alives in flight at most: as many stalled answers as this, at once, are what it
takes to delay a keep-alive at all."""
ANSWER_SECONDS = 30.0
"""The most one keep-alive's exchange may take, connection to last byte: a keep-alive's
answer is a token or none, and the margin before the cache expires is 15-60 s."""
ANSWER_BYTES = 1024 * 1024
"""The most of a keep-alive's answer read off the wire (compressed): a one-token answer
is a few kilobytes."""
DECODED_BYTES = 4 * 1024 * 1024
"""The most of it inflated: a gzip bomb stops here."""
CLOSE_SECONDS = 2.0
"""The longest `Pool.close` waits for the keep-alives in flight (a stalled one is left to
end on its own deadline: its thread is a daemon's)."""


@dataclass(frozen=True)
class Answer:
    """A keep-alive's answer: its status, what its body says, and whether the body was cut
    at a bound (`ANSWER_BYTES`, `DECODED_BYTES`) or the deadline."""

    status: int
    facts: ResponseFacts
    cut: bool = False


def fetch(
    client: httpx2.Client,
    url: httpx2.URL,
    headers: list[tuple[str, str]],
    body: bytes,
    *,
    deadline: float = ANSWER_SECONDS,
    limit: int = ANSWER_BYTES,
    clock: Callable[[], float] = time.monotonic,
) -> Answer:
    """Send one keep-alive and read its answer within the bounds (see the module);
    `httpx2.HTTPError` when it fails, or a connection, a write or a read waits past a
    third of the deadline."""
    started = clock()
    timeout = httpx2.Timeout(deadline / 3)
    with client.stream("POST", url, headers=headers, content=body, timeout=timeout) as response:
        inflater = Inflater(response.headers.get("content-encoding", ""), DECODED_BYTES)
        read = 0
        cut = False
        chunks = response.iter_raw()
        while not cut:
            if clock() - started > 2 * deadline / 3:  # the next read could pass the deadline
                cut = True
                break
            chunk = next(chunks, None)
            if chunk is None:
                break
            room = limit - read
            read += len(chunk)
            cut = not inflater.feed(chunk[:room]) or read >= limit
        content_type = response.headers.get("content-type", "")
        return Answer(response.status_code, response_facts(inflater.body, content_type), cut)


class Pool:
    """A bounded pool of daemon threads running jobs in the order they came."""

    def __init__(self, workers: int = WORKERS) -> None:
        self.workers = workers
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], threading.Event] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, job: Callable[[], None]) -> threading.Event:
        """Run `job` on a worker; the event is set once it has run, or was dropped by
        `close` before it started."""
        done = threading.Event()
        with self._lock:
            if self._closed:
                done.set()
                return done
            if len(self._threads) < self.workers:
                name = f"warmloop-keepalive-{len(self._threads)}"
                thread = threading.Thread(target=self._work, daemon=True, name=name)
                self._threads.append(thread)
                thread.start()
            self._jobs.put((job, done))
        return done

    def _work(self) -> None:
        while (taken := self._jobs.get()) is not None:
            job, done = taken
            try:
                job()
            finally:
                done.set()

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Take no more jobs, drop the ones not started, and wait at most `timeout`
        seconds for the ones in flight."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        while True:
            try:
                taken = self._jobs.get_nowait()
            except queue.Empty:
                break
            if taken is not None:
                taken[1].set()  # dropped: nobody waits on it in vain
        for _ in threads:
            self._jobs.put(None)
        ends = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, ends - time.monotonic()))
