"""Headless Chromium driven over the Chrome DevTools protocol (its websocket), for tests that
check what a person sees on a page. Chromium comes from Debian (`scripts/debian.sh`)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
from websockets.sync.client import ClientConnection, connect

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1400,1000",
)
START_SECONDS = 300  # a hang guard for a loaded machine, never a timing


def chromium_binary() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    return next(
        (found for name in ("chromium", "chromium-browser") if (found := shutil.which(name))),
        None,
    )


class Page:
    """One browser tab: navigate, evaluate JavaScript, take a screenshot."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=START_SECONDS))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result

    def open(self, path: Path) -> None:
        self.visit(path.resolve().as_uri())

    def visit(self, url: str, ready: str = "document.readyState === 'complete'") -> None:
        """Navigate to `url` and wait until the page says `ready` (a JavaScript test)."""
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.wait_for(ready)

    def wait_for(self, expression: str) -> None:
        """Wait until the page's `expression` (JavaScript) is true (a live page redraws)."""
        deadline = time.monotonic() + START_SECONDS
        while self.evaluate(expression) is not True:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page never had {expression}")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        found = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in found:
            raise RuntimeError(f"page script failed: {found['exceptionDetails']}")
        return found["result"].get("value")

    def screenshot(self, out: Path) -> Path:
        shot = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        out.write_bytes(base64.b64decode(shot["data"]))
        return out


@contextmanager
def chromium(profile: Path) -> Iterator[Page]:
    """A fresh headless Chromium (own profile directory) with one page; stopped on exit."""
    binary = chromium_binary()
    assert binary is not None
    log = (profile / "chromium.log").open("wb")
    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_SECONDS
        while not port_file.exists() or not port_file.read_text().strip():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Chromium did not start; see {profile / 'chromium.log'}")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        targets = httpx2.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(t for t in targets if t.get("type") == "page")
        with connect(page["webSocketDebuggerUrl"], max_size=None) as socket:
            yield Page(socket)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
