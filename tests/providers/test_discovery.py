"""discover_window against real loopback HTTP servers answering in each documented shape.

Shapes: vLLM's `ModelList`/`ModelCard` (vllm/entrypoints/openai/protocol.py, with
`max_model_len`); llama.cpp server README, "GET `/props`" (and its `/v1/models` example,
whose `meta.n_ctx_train` is the trained length, not the served one); Ollama docs/api.md,
"Show Model Information" (`parameters` text, `model_info`) and its OpenAI `/v1/models` list.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2
import pytest

from warmloop.providers.openai.discovery import DiscoveredWindow, discover_window

LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@dataclass(frozen=True)
class Reply:
    """One canned answer; `sized=False` leaves Content-Length out (the body ends at close)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()
    sized: bool = True


class Stall:
    """Accept the request and answer nothing until the test ends."""


class Trickle:
    """Answer 200 and then one space of JSON whitespace at a time until the test ends, so
    no single read ever waits long: only a limit on the whole request stops it."""


Answer = Reply | Stall | Trickle


def js(value: Any, status: int = 200) -> Reply:
    return Reply(json.dumps(value).encode(), status)


@dataclass(frozen=True)
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    """A loopback server answering (method, path) from `routes`; 404 for anything else."""

    routes: Mapping[tuple[str, str], Answer]
    base: str = ""
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def paths(self) -> list[str]:
        return [f"{s.method} {s.target}" for s in self.seen]


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.seen.append(Seen(self.command, self.path, headers, body))
            path = self.path.partition("?")[0]
            default = js({"detail": "Not Found"}, 404)
            answer = server.routes.get((self.command, path), default)
            if isinstance(answer, Stall):
                server.release.wait()
                return
            if isinstance(answer, Trickle):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up and closed
                    while not server.release.wait(0.02):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                return
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            for name, value in answer.headers:
                self.send_header(name, value)
            if answer.sized:
                self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client stopped reading: over the limit
                self.wfile.write(answer.body)

        do_GET = answer
        do_POST = answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve(routes: Mapping[tuple[str, str], Answer]) -> Iterator[Server]:
    """Serve `routes` on 127.0.0.1 at a free port; `server.base` is http://127.0.0.1:PORT."""
    server = Server(routes)
    http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    http.daemon_threads = True
    # A short poll: shutdown() waits for serve_forever's next look at its flag.
    thread = threading.Thread(target=http.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    server.base = f"http://127.0.0.1:{http.server_address[1]}"
    try:
        yield server
    finally:
        server.release.set()
        http.shutdown()
        http.server_close()


def vllm_card(model: str = LLAMA, max_model_len: Any = 131072) -> dict[str, Any]:
    """A vLLM ModelCard as GET /v1/models lists it."""
    return {
        "id": model,
        "object": "model",
        "created": 1735142223,
        "owned_by": "vllm",
        "root": model,
        "parent": None,
        "max_model_len": max_model_len,
        "permission": [
            {
                "id": "modelperm-0",
                "object": "model_permission",
                "created": 1735142223,
                "allow_create_engine": False,
                "allow_sampling": True,
                "allow_logprobs": True,
                "allow_search_indices": False,
                "allow_view": True,
                "allow_fine_tuning": False,
                "organization": "*",
                "group": None,
                "is_blocking": False,
            }
        ],
    }


def listing(*cards: dict[str, Any]) -> Reply:
    return js({"object": "list", "data": list(cards)})


LLAMA_CPP_MODELS = listing(
    {
        "id": "../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        "object": "model",
        "created": 1735142223,
        "owned_by": "llamacpp",
        "meta": {"vocab_type": 2, "n_vocab": 128256, "n_ctx_train": 131072, "n_embd": 4096},
    }
)


def llama_cpp_props(n_ctx: Any = 16384) -> dict[str, Any]:
    """GET /props as llama.cpp's server README shows it."""
    return {
        "default_generation_settings": {
            "id": 0,
            "id_task": -1,
            "n_ctx": n_ctx,
            "speculative": False,
            "is_processing": False,
            "params": {"n_predict": -1, "temperature": 0.8, "top_k": 40, "max_tokens": -1},
            "prompt": "",
        },
        "total_slots": 1,
        "model_path": "../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
        "chat_template": "...",
        "modalities": {"vision": False},
        "build_info": "b4000-abcdef0",
    }


OLLAMA_MODELS = listing(
    {"id": "llama3.2:latest", "object": "model", "created": 1735142223, "owned_by": "library"}
)
OLLAMA_PARAMETERS = (
    'num_keep                       24\nstop                           "<|start_header_id|>"\n'
    'stop                           "<|eot_id|>"'
)


def ollama_show(parameters: Any = OLLAMA_PARAMETERS, context_length: Any = 8192) -> Reply:
    """POST /api/show as Ollama's API docs show it."""
    return js(
        {
            "modelfile": '# Modelfile generated by "ollama show"\nFROM /models/blobs/sha256:0\n',
            "parameters": parameters,
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "llama", "parameter_size": "8.0B"},
            "model_info": {
                "general.architecture": "llama",
                "general.parameter_count": 8030261248,
                "llama.attention.head_count": 32,
                "llama.block_count": 32,
                "llama.context_length": context_length,
                "llama.embedding_length": 4096,
                "llama.vocab_size": 128256,
            },
        }
    )


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    """A client for the tests that ask many times: the servers are plain-HTTP loopback, and
    a verifying TLS context, which discover_window's own client builds, costs 0.1 s each."""
    async with httpx2.AsyncClient(verify=False) as client:
        yield client


# vLLM and SGLang


@pytest.mark.parametrize("model", [LLAMA, "default"])
async def test_vllm_card_gives_max_model_len(model: str) -> None:
    routes = {("GET", "/v1/models"): listing(vllm_card())}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", model)
    assert found == DiscoveredWindow(131072, "GET /v1/models max_model_len (vLLM/SGLang)")
    assert server.paths() == ["GET /v1/models"], "the first answer ends the search"


async def test_a_two_model_list_is_picked_by_id(client: httpx2.AsyncClient) -> None:
    cards = listing(vllm_card("small", 4096), vllm_card(LLAMA, 131072))
    with serve({("GET", "/v1/models"): cards}) as server:
        base = f"{server.base}/v1"
        assert (await discover_window(base, LLAMA, client=client)) == DiscoveredWindow(
            131072, "GET /v1/models max_model_len (vLLM/SGLang)"
        )
        small = await discover_window(base, "small", client=client)
        assert small is not None
        assert small.tokens == 4096
        first = await discover_window(base, "default", client=client)
        assert first is not None
        assert first.tokens == 4096, "no model named: the server's first"
        # Two cards and neither is the model: which one the server would use is unknown.
        assert await discover_window(base, "another", client=client) is None


async def test_the_only_card_answers_for_a_model_it_does_not_name() -> None:
    with serve({("GET", "/v1/models"): listing(vllm_card("served-name", 32768))}) as server:
        found = await discover_window(f"{server.base}/v1", "alias")
    assert found is not None
    assert found.tokens == 32768


async def test_the_first_answer_in_order_wins() -> None:
    routes = {
        ("GET", "/v1/models"): listing(vllm_card(max_model_len=131072)),
        ("GET", "/props"): js(llama_cpp_props(16384)),
        ("POST", "/api/show"): ollama_show("num_ctx 4096", 8192),
    }
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", LLAMA)
    assert found is not None
    assert found.tokens == 131072


# llama.cpp


async def test_llama_cpp_props_n_ctx_not_the_trained_length() -> None:
    routes = {("GET", "/v1/models"): LLAMA_CPP_MODELS, ("GET", "/props"): js(llama_cpp_props())}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", "default")
    assert found == DiscoveredWindow(
        16384, "GET /props default_generation_settings.n_ctx (llama.cpp)"
    )
    assert server.paths() == ["GET /v1/models", "GET /props"]


async def test_llama_cpp_top_level_n_ctx_is_accepted() -> None:
    props = {"n_ctx": 8192, "total_slots": 1}
    with serve({("GET", "/props"): js(props)}) as server:
        found = await discover_window(f"{server.base}/v1", "default")
    assert found is not None
    assert found.tokens == 8192


@pytest.mark.parametrize("suffix", ["", "/", "/v1/"])
async def test_a_base_url_without_v1_or_with_a_slash_finds_the_root(suffix: str) -> None:
    with serve({("GET", "/props"): js(llama_cpp_props())}) as server:
        found = await discover_window(f"{server.base}{suffix}", "default")
        expected_models = "/v1/models" if "v1" in suffix else "/models"
        assert server.paths()[0] == f"GET {expected_models}"
    assert found is not None
    assert found.tokens == 16384


# Ollama


async def test_ollama_num_ctx_in_parameters_wins_over_model_info() -> None:
    parameters = OLLAMA_PARAMETERS + "\nnum_ctx                        32768"
    routes = {("GET", "/v1/models"): OLLAMA_MODELS, ("POST", "/api/show"): ollama_show(parameters)}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", "llama3.2:latest")
    assert found == DiscoveredWindow(32768, "POST /api/show parameters num_ctx (Ollama)")
    assert server.paths() == ["GET /v1/models", "GET /props", "POST /api/show"]
    assert json.loads(server.seen[-1].body) == {"model": "llama3.2:latest"}


async def test_ollama_without_num_ctx_gives_the_model_info_context_length() -> None:
    routes = {("GET", "/v1/models"): OLLAMA_MODELS, ("POST", "/api/show"): ollama_show()}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", "llama3.2:latest")
    assert found is not None
    assert found.tokens == 8192
    assert "llama3.2" not in found.where
    assert "context_length" in found.where


async def test_ollama_default_model_is_the_first_the_server_lists() -> None:
    routes = {("GET", "/v1/models"): OLLAMA_MODELS, ("POST", "/api/show"): ollama_show()}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", "default")
    assert found is not None
    assert found.tokens == 8192
    assert json.loads(server.seen[-1].body) == {"model": "llama3.2:latest"}


async def test_ollama_default_model_with_no_listing_asks_nothing_it_cannot_name() -> None:
    with serve({("POST", "/api/show"): ollama_show()}) as server:
        assert await discover_window(f"{server.base}/v1", "default") is None
    assert "POST /api/show" not in server.paths()


async def test_ollama_context_length_found_without_general_architecture() -> None:
    show = {"parameters": "", "model_info": {"qwen2.context_length": 32768, "qwen2.block_count": 1}}
    with serve({("POST", "/api/show"): js(show)}) as server:
        found = await discover_window(f"{server.base}/v1", "qwen2")
    assert found is not None
    assert found.tokens == 32768


async def test_ollama_prefers_the_architecture_s_own_context_length() -> None:
    info = {"general.architecture": "llama", "llama.context_length": 8192}
    info["projector.context_length"] = 4096  # another part's, which the model is not
    with serve({("POST", "/api/show"): js({"model_info": info})}) as server:
        found = await discover_window(f"{server.base}/v1", "llava")
    assert found is not None
    assert found.tokens == 8192


# Nothing published: None, no exception


def everywhere(
    models: Reply | None = None, props: Reply | None = None, show: Reply | None = None
) -> dict[tuple[str, str], Answer]:
    routes: dict[tuple[str, str], Answer] = {}
    for key, reply in ((("GET", "/v1/models"), models), (("GET", "/props"), props)):
        if reply is not None:
            routes[key] = reply
    if show is not None:
        routes[("POST", "/api/show")] = show
    return routes


HTML = Reply(b"<html><body>It works!</body></html>", content_type="text/html")
NOTHING: dict[str, dict[tuple[str, str], Answer]] = {
    "404s": {},
    "html": everywhere(HTML, HTML, HTML),
    "errors with windows in them": everywhere(
        js({"data": [vllm_card()]}, 500), js(llama_cpp_props(), 503), js({"n_ctx": 8192}, 401)
    ),
    "wrong types": everywhere(
        js({"data": {"id": LLAMA, "max_model_len": 131072}}),
        js({"default_generation_settings": [16384], "n_ctx": {"value": 16384}}),
        js({"parameters": ["num_ctx 4096"], "model_info": ["llama.context_length", 8192]}),
    ),
    "json that is not an object": everywhere(js([1, 2]), js("16384"), js(None)),
    "truncated json": everywhere(
        Reply(b'{"data": [{"id": "x", "max_model_len": 131072'),
        Reply(b'{"n_ctx": 16384'),
        Reply(b'{"parameters": "num_ctx 4096"'),
    ),
    "not utf-8": everywhere(Reply(b"\xff\xfe\xfa{}"), Reply(b"\x80\x81"), Reply(b"\xc3(")),
    "nested too deep": everywhere(Reply(b"[" * 200_000 + b"]" * 200_000)),
    "a number with thousands of digits": everywhere(
        Reply(b'{"data": [{"id": "x", "max_model_len": 1' + b"0" * 5000 + b"}]}"),
        show=js({"parameters": "num_ctx 1" + "0" * 5000}),
    ),
    "an ollama model_info with two unnamed lengths": everywhere(
        show=js({"model_info": {"a.context_length": 4096, "b.context_length": 8192}})
    ),
}


@pytest.mark.parametrize("routes", NOTHING.values(), ids=NOTHING.keys())
async def test_nothing_published_is_none(
    routes: dict[tuple[str, str], Answer], client: httpx2.AsyncClient
) -> None:
    with serve(routes) as server:
        assert await discover_window(f"{server.base}/v1", LLAMA, client=client) is None
        assert await discover_window(f"{server.base}/v1", "default", client=client) is None
    assert "POST /api/show" in server.paths(), "every endpoint was tried"


ABSURD: list[Any] = [None, -131072, 0, 255, 100_000_001, 10**15, True, "131072", 131072.0]


@pytest.mark.parametrize("value", ABSURD, ids=repr)
async def test_absurd_windows_are_refused_everywhere(
    value: Any, client: httpx2.AsyncClient
) -> None:
    routes = everywhere(
        listing(vllm_card(max_model_len=value)),
        js(llama_cpp_props(value)),
        ollama_show(f"num_ctx {value!r}", value),
    )
    with serve(routes) as server:
        assert await discover_window(f"{server.base}/v1", LLAMA, client=client) is None
    assert len(server.seen) == 3


@pytest.mark.parametrize("value", [256, 100_000_000])
async def test_the_bounds_themselves_are_windows(value: int, client: httpx2.AsyncClient) -> None:
    with serve({("GET", "/props"): js(llama_cpp_props(value))}) as server:
        found = await discover_window(f"{server.base}/v1", LLAMA, client=client)
    assert found is not None
    assert found.tokens == value


def padded_listing(size: int, *, sized: bool) -> Reply:
    """A good vLLM listing whose body is `size` bytes, padded by an unused field."""
    card = vllm_card()
    card["padding"] = ""
    bare = len(json.dumps({"object": "list", "data": [card]}).encode())
    card["padding"] = "x" * (size - bare)
    reply = listing(card)
    assert len(reply.body) == size
    return Reply(reply.body, sized=sized)


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "until-close"])
async def test_a_reply_over_one_megabyte_is_not_read(
    sized: bool, client: httpx2.AsyncClient
) -> None:
    routes = {("GET", "/v1/models"): padded_listing(2 * 1024 * 1024, sized=sized)}
    with serve(routes) as server:
        assert await discover_window(f"{server.base}/v1", LLAMA, client=client) is None


@pytest.mark.parametrize("sized", [True, False], ids=["content-length", "until-close"])
async def test_a_reply_of_one_megabyte_is_read(sized: bool, client: httpx2.AsyncClient) -> None:
    routes = {("GET", "/v1/models"): padded_listing(1024 * 1024, sized=sized)}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1", LLAMA, client=client)
    assert found is not None
    assert found.tokens == 131072


async def test_a_refused_connection_is_none() -> None:
    with socket.socket() as probe:  # a port nobody listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert await discover_window(f"http://127.0.0.1:{port}/v1", LLAMA) is None


@pytest.mark.parametrize("answer", [Stall(), Trickle()], ids=["stall", "trickle"])
async def test_a_server_that_never_finishes_is_none(answer: Answer) -> None:
    routes = {("GET", "/v1/models"): answer, ("GET", "/props"): answer}
    routes[("POST", "/api/show")] = answer
    with serve(routes) as server:
        # A guard, not a measure: a discover_window that never gives up fails, not hangs.
        async with asyncio.timeout(30):
            assert await discover_window(f"{server.base}/v1", LLAMA, timeout=0.2) is None
    assert len(server.seen) == 3, "a stalled endpoint moves on to the next"


BAD_URLS = ["", "not a url", "ftp://127.0.0.1/v1", "http://[::1/v1", "http://127.0.0.1:99999/v1"]
BAD_URLS += ["http://127.0.0.1:port/v1", "http://\x00/v1", "127.0.0.1:8000/v1"]


@pytest.mark.parametrize("base_url", BAD_URLS)
async def test_a_base_url_that_is_no_http_url_is_none(base_url: str) -> None:
    assert await discover_window(base_url, LLAMA) is None


# What is sent, and where


async def test_the_timeout_given_is_the_one_used_not_a_given_client_s() -> None:
    with serve({("GET", "/v1/models"): listing(vllm_card())}) as server:
        # A microsecond: every connect or read of this client's own would give up.
        async with httpx2.AsyncClient(timeout=1e-6) as hasty:
            found = await discover_window(f"{server.base}/v1", LLAMA, client=hasty, timeout=5)
    assert found is not None
    assert found.tokens == 131072


async def test_the_query_and_the_headers_reach_every_endpoint_and_no_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="warmloop.providers.openai.discovery")
    routes = {("GET", "/v1/models"): HTML, ("POST", "/api/show"): ollama_show()}
    headers = {"Authorization": "Bearer sk-secret-key"}
    with serve(routes) as server:
        base = f"{server.base}/v1?token=sekrit&x=1"
        found = await discover_window(base, "llama3.2", headers=headers)
    assert found is not None
    assert found.tokens == 8192
    assert [s.target for s in server.seen] == [
        "/v1/models?token=sekrit&x=1",
        "/props?token=sekrit&x=1",
        "/api/show?token=sekrit&x=1",
    ]
    assert all(s.headers.get("authorization") == "Bearer sk-secret-key" for s in server.seen)
    assert caplog.records, "the misses are logged"
    assert "sekrit" not in caplog.text
    assert "sk-secret-key" not in caplog.text


async def test_no_log_record_of_any_library_holds_the_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # httpx2's own INFO line prints each request's URL, query included.
    caplog.set_level(logging.DEBUG)
    routes = {("GET", "/v1/models"): listing(vllm_card())}
    with serve(routes) as server:
        found = await discover_window(f"{server.base}/v1?token=sekrit-9f1", LLAMA)
    assert found is not None
    logged = [r for r in caplog.records if r.name == "httpx2"]
    assert logged, "httpx2 logs the request"
    assert "/v1/models?token=***" in logged[0].getMessage()
    assert all("sekrit-9f1" not in r.getMessage() for r in caplog.records)
    assert "sekrit-9f1" not in caplog.text


async def test_a_refused_connection_logs_no_query(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="warmloop.providers.openai.discovery")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert await discover_window(f"http://127.0.0.1:{port}/v1?token=sekrit", LLAMA) is None
    assert caplog.records
    assert "sekrit" not in caplog.text


@pytest.mark.parametrize("follow", [False, True], ids=["own-client", "client-that-follows"])
async def test_a_redirect_to_another_host_is_not_followed(follow: bool) -> None:
    with serve({("GET", "/v1/models"): listing(vllm_card())}) as elsewhere:
        moved = Reply(b"", 302, headers=(("Location", f"{elsewhere.base}/v1/models"),))
        with serve({("GET", "/v1/models"): moved}) as server:
            async with httpx2.AsyncClient(follow_redirects=follow) as client:
                given = client if follow else None
                found = await discover_window(
                    f"{server.base}/v1", LLAMA, headers={"Authorization": "Bearer k"}, client=given
                )
                assert not client.is_closed, "a given client is the caller's to close"
    assert found is None
    assert elsewhere.seen == []
