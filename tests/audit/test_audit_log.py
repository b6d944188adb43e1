"""Request logs and responses: the recorder's JSONL is written whole lines only, logs people
already have are read, and usage and cache diagnostics are found in every provider's JSON
and streamed responses (shapes from each provider's API reference)."""

from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.audit.blocks import sized
from warmloop.exchange.formats import detect_format, model_name, routing_key
from warmloop.exchange.log import LogWriter, parse_time, read_log
from warmloop.exchange.response_facts import (
    decoded,
    describe_diagnostics,
    normalise_usage,
    response_facts,
)
from warmloop.facts.usage import Usage
from warmloop.providers.registry import wire_format
from warmloop.proxy.server import Proxy


def sse(*events: dict[str, Any]) -> bytes:
    return "".join(
        f"event: {e.get('type', 'x')}\ndata: {json.dumps(e)}\n\n" for e in events
    ).encode()


RECORD = {"body": {"messages": [{"role": "user", "content": "hi"}]}}
LINE = b'{"body":{"messages":[{"role":"user","content":"hi"}]}}\n'


@pytest.mark.parametrize(
    "before",
    [
        b'{"body": {"messages": []}}\n{"body": {"mess',  # a writer died mid-line
        b"someone's notes, no newline at the end",
        b'{"body": {"messages": []}}\n',  # whole lines: appended right after
        b"",
    ],
    ids=["cut-line", "no-newline-at-all", "whole-lines", "empty"],
)
def test_record_out_appends_and_never_cuts_what_the_file_held(
    tmp_path: Path, before: bytes
) -> None:
    log = tmp_path / "requests.jsonl"
    log.write_bytes(before)
    Proxy("http://127.0.0.1:9", log).close()  # `record --out` opened it, nothing came
    assert log.read_bytes() == before
    writer = LogWriter(log)
    writer.write(RECORD)
    writer.write(RECORD)
    writer.close()
    separator = b"\n" if before and not before.endswith(b"\n") else b""
    assert log.read_bytes() == before + separator + LINE + LINE
    assert read_log(log).requests[-1].body == RECORD["body"]  # the cut line is skipped


def test_lines_written_from_many_threads_never_interleave(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    writer = LogWriter(log)
    big = "x" * 70_000  # larger than a pipe buffer: one write per line still

    def write(n: int) -> None:
        for k in range(20):
            writer.write({"n": n, "k": k, "body": {"messages": [big]}})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted((r["n"], r["k"]) for r in records) == [
        (n, k) for n in range(6) for k in range(20)
    ]


def test_logs_people_already_have_are_read_with_usage_and_time(tmp_path: Path) -> None:
    log = tmp_path / "theirs.jsonl"
    raw = {"model": "gpt-5", "messages": [{"role": "user", "content": "a"}]}
    lines = [
        json.dumps(raw),  # a bare body
        json.dumps({**raw, "usage": {"prompt_tokens": 10}, "timestamp": "2026-01-01T00:00:05Z"}),
        json.dumps({"request": raw, "response": {"usage": {"prompt_tokens": 12}}, "ts": 1.7e12}),
        '{"model": "gpt-5", "messa',  # cut off
        json.dumps({"hello": "world"}),
    ]
    log.write_text("\n".join(lines) + "\n")
    contents = read_log(log)
    first, second, third = contents.requests
    assert first.body == raw
    assert first.usage is None
    assert first.at is None
    assert second.body == raw  # usage and timestamp are taken out of the body
    assert second.usage == {"prompt_tokens": 10}
    assert second.at == parse_time("2026-01-01T00:00:05+00:00")
    assert third.usage == {"prompt_tokens": 12}
    assert third.at == 1.7e9  # milliseconds
    assert contents.skipped == (
        "line 4: not JSON (a half-written line?)",
        "line 5: no request body (messages, input or contents)",
    )


def test_anthropic_streamed_usage_merges_message_start_and_delta() -> None:
    # Streaming Messages: message_start carries input counts, message_delta the final output
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 900, "output_tokens": 1},
            "diagnostics": {"cache_miss_reason": None},
        },
    }
    delta = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 40}}
    facts = response_facts(sse(start, delta, {"type": "message_stop"}), "text/event-stream")
    assert normalise_usage(facts.usage or {}) == Usage.of_parts(5, 900, 0, 40)
    assert describe_diagnostics(facts.diagnostics, wire_format("anthropic")) == (
        "Anthropic: comparison still pending (check the next request)"
    )


def test_chat_responses_and_gemini_usage_are_normalised() -> None:
    chunk = {"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 3}}
    chunk["usage"]["prompt_tokens_details"] = {"cached_tokens": 64}  # type: ignore[index]
    chat = response_facts(sse({"choices": [{"delta": {}}]}, chunk) + b"data: [DONE]\n\n")
    assert normalise_usage(chat.usage or {}) == Usage.of_parts(36, 64, 0, 3)
    completed = {
        "type": "response.completed",
        "response": {
            "usage": {
                "input_tokens": 300,
                "input_tokens_details": {"cached_tokens": 256, "cache_write_tokens": 10},
                "output_tokens": 9,
                "total_tokens": 309,
            }
        },
    }
    responses = response_facts(sse({"type": "response.created", "response": {}}, completed))
    assert normalise_usage(responses.usage or {}) == Usage.of_parts(34, 256, 10, 9)
    chunks = [
        {"usageMetadata": {"promptTokenCount": 50}},
        {"usageMetadata": {"promptTokenCount": 50, "cachedContentTokenCount": 40}},
    ]
    gemini = response_facts(json.dumps(chunks).encode(), "application/json")  # a JSON array
    assert normalise_usage(gemini.usage or {}) == Usage.of_parts(10, 40, 0, 0)
    # Gemini's tool-use prompt (a grounding or code-execution tool's own input) is input too.
    grounded = {"promptTokenCount": 50, "cachedContentTokenCount": 40}
    grounded["toolUsePromptTokenCount"] = 7
    assert normalise_usage(grounded) == Usage.of_parts(17, 40, 0, 0)
    deepseek = {"prompt_tokens": 80, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 16}
    assert normalise_usage(deepseek) == Usage.of_parts(16, 64, 0, 0)


def test_gzip_responses_are_decoded_for_reading_usage() -> None:
    body = json.dumps({"usage": {"input_tokens": 3, "output_tokens": 2}}).encode()
    facts = response_facts(decoded(gzip.compress(body), "gzip"), "application/json")
    assert facts.usage == {"input_tokens": 3, "output_tokens": 2}
    assert decoded(b"\x00junk", "br") == b""  # unknown encodings are not guessed at


def test_formats_come_from_the_path_else_the_body() -> None:
    chat = {"messages": [{"role": "system", "content": "s"}]}
    anthropic = {"system": "s", "messages": [{"role": "user", "content": "u"}]}
    assert detect_format(chat).name == "openai-chat"
    assert detect_format(anthropic).name == "anthropic"
    assert detect_format({"input": []}).name == "openai-responses"
    assert detect_format({"contents": []}).name == "gemini"
    assert detect_format(chat, "/v1/messages").name == "anthropic"  # the path decides
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert model_name({"contents": []}, path) == "gemini-2.5-flash"
    assert routing_key({"prompt_cache_key": "s1"}) == "prompt_cache_key=s1"
    assert routing_key({"metadata": {"user_id": "u"}}) == "metadata.user_id=u"
    assert routing_key(chat) is None


@given(st.lists(st.integers(0, 5000), min_size=1, max_size=30), st.integers(0, 100_000))
def test_block_tokens_always_add_up_to_the_request(lengths: list[int], tokens: int) -> None:
    texts = ["x" * n for n in lengths]
    blocks = sized(texts, tokens, [None] * len(texts))
    assert sum(b.tokens for b in blocks) == tokens
    again = sized([*texts, "tail"], tokens + 7, [None] * (len(texts) + 1), blocks, len(texts))
    assert sum(b.tokens for b in again) == tokens + 7
    assert [b.tokens for b in again[: len(blocks)]] == [b.tokens for b in blocks]
