"""What an `openai-compatible:` server is sent and what is shown about it: OpenAI's own
identifiers (OPENAI_ORG_ID, OPENAI_PROJECT_ID, read by the SDK into `OpenAI-Organization`
and `OpenAI-Project` headers, per the openai-python README "Organization and project")
never reach it, and credentials in its base URL (`user:pass@`, `?token=`) appear nowhere:
not in the model name (saved in every transcript), not in errors, not in the CLI banner.
A real loopback HTTP server records each request as it arrives."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from warmloop import Agent, RequestFailed
from warmloop.cli.main import main
from warmloop.errors import ConfigurationError
from warmloop.providers.openai.chat import OpenAICompatibleModel
from warmloop.providers.redact import redact_spec, redact_url, scrub, url_secrets
from warmloop.providers.select import resolve_model

PASSWORD = "pa55-w0rd-x"
TOKEN = "tok-3f9a1c"


class Recorded:
    """The requests the server got: (path, headers, body)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.status = 200


def server_handler(recorded: Recorded) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:  # what discovery asks first: nothing published
            recorded.requests.append((self.path, dict(self.headers.items()), {}))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorded.requests.append((self.path, dict(self.headers.items()), body))
            function = {"name": "submit", "arguments": '{"answer": "ok"}'}
            call: dict[str, Any] = {"id": "c", "type": "function", "function": function}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            reply: dict[str, Any] = {"id": "x", "object": "chat.completion", "created": 1}
            reply |= {"model": "m", "choices": [{"index": 0, "message": message}]}
            if recorded.status != 200:
                reply = {"error": {"message": f"bad request to {self.path}", "type": "invalid"}}
            data = json.dumps(reply).encode()
            self.send_response(recorded.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@pytest.fixture
def server() -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), server_handler(recorded))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}", recorded
    finally:
        httpd.shutdown()
        httpd.server_close()


async def test_openai_org_and_project_ids_never_reach_a_compatible_server(
    server: tuple[str, Recorded], monkeypatch: pytest.MonkeyPatch
) -> None:
    address, recorded = server
    monkeypatch.setenv("OPENAI_ORG_ID", "org-private-123")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj_private_456")
    model = OpenAICompatibleModel(f"http://{address}/v1#m", max_retries=0)
    await Agent(model).run("Answer.")
    headers = {k.lower(): v for k, v in recorded.requests[0][1].items()}
    assert "openai-organization" not in headers
    assert "openai-project" not in headers
    assert "org-private-123" not in json.dumps(recorded.requests)


async def test_url_credentials_are_used_but_never_shown_or_saved(
    server: tuple[str, Recorded],
) -> None:
    address, recorded = server
    spec = f"openai-compatible:http://admin:{PASSWORD}@{address}/v1?token={TOKEN}#m"
    model = resolve_model(spec)
    run = await Agent(model).run("Answer.")
    paths = [path.partition("?")[0] for path, _, _ in recorded.requests]
    # The window is asked for first (vLLM, llama.cpp, Ollama shapes), then the request.
    assert paths == ["/v1/models", "/props", "/api/show", "/v1/chat/completions"]
    # The server gets what the user gave, on every request: the query, and the user info
    # as Basic auth.
    basic = "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    for path, headers, _ in recorded.requests:
        assert path.endswith(f"?token={TOKEN}")
        assert headers["Authorization"] == basic
    assert model.name == f"openai-compatible:http://***@{address}/v1?token=***#m"
    saved = run.transcript.dump()
    assert PASSWORD not in saved
    assert TOKEN not in saved
    assert run.transcript.meta.model == model.name


async def test_a_server_error_naming_the_url_is_scrubbed(server: tuple[str, Recorded]) -> None:
    address, recorded = server
    recorded.status = 400
    model = resolve_model(f"openai-compatible:http://{address}/v1?token={TOKEN}#m")
    with pytest.raises(RequestFailed) as caught:
        await Agent(model).run("Answer.")
    assert "bad request to /v1/chat/completions?token=***" in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert caught.value.__cause__ is not None
    assert TOKEN not in str(caught.value.__cause__)


def test_bad_specs_are_reported_without_their_credentials() -> None:
    for spec in (
        f"openai-compatible:ftp://u:{PASSWORD}@host/v1",
        f"openai-compatibl:http://u:{PASSWORD}@host/v1",
    ):
        with pytest.raises(ConfigurationError) as caught:
            resolve_model(spec)
        assert PASSWORD not in str(caught.value)
        assert "***" in str(caught.value)


def test_the_cli_banner_and_error_never_show_url_credentials(tmp_path: Path) -> None:
    # Port 9 (discard) has no listener here: the run fails at once with a connection error.
    spec = f"openai-compatible:http://u:{PASSWORD}@127.0.0.1:9/v1?token={TOKEN}#m"
    saved = tmp_path / "run.json"
    result = CliRunner().invoke(
        main,
        ["run", "Answer.", "--model", spec, "--workspace", str(tmp_path), "--save", str(saved)],
    )
    assert result.exit_code == 6  # the provider unavailable (docs/cli.md "Exit codes")
    assert "model openai-compatible:http://***@127.0.0.1:9/v1?token=***#m" in result.output
    assert "cannot connect" in result.output
    for text in (result.output, saved.read_text("utf-8")):
        assert PASSWORD not in text
        assert TOKEN not in text


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://h:8080/v1", "http://h:8080/v1"),
        ("https://u:p%40ss@h/v1", "https://***@h/v1"),
        ("https://TOKEN123@h/v1", "https://***@h/v1"),
        ("http://h/v1?token=abc&api-version=2024-06-01", "http://h/v1?token=***&api-version=***"),
        ("http://[::1]:8000/v1?key=s3cret", "http://[::1]:8000/v1?key=***"),
    ],
)
def test_redaction_keeps_the_address_and_hides_the_rest(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_spec(f"openai-compatible:{url}#m") == f"openai-compatible:{shown}#m"
    for secret in url_secrets(url):
        if len(secret) >= 3:  # shorter values would mask ordinary words, so they stay
            assert scrub(f"failed: {url} ({secret})", url_secrets(url)).count(secret) == 0


def test_a_stored_session_keeps_no_credentials_and_resume_asks_for_them(
    server: tuple[str, Recorded], tmp_path: Path
) -> None:
    address, _ = server
    store = tmp_path / "sessions.db"
    spec = f"openai-compatible:http://admin:{PASSWORD}@{address}/v1?token={TOKEN}#m"
    Agent(resolve_model(spec)).run_sync("Answer.", session="s1", store=store)
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("sessions"))
    assert PASSWORD.encode() not in stored
    assert TOKEN.encode() not in stored
    result = CliRunner().invoke(main, ["resume", "s1", "And?", "--store", str(store)])
    assert result.exit_code == 1
    assert "credentials are never stored; pass --model" in result.output
