"""A keep-alive in a logged conversation (the previous request again with a one-token
answer, `keepalive/ping.py`) is audited as a read, never as a bust, and the request
after it reads the prefix it kept alive: the answer's size is no part of the prompt
(`exchange/formats.py`, NOT_IN_PROMPT), and the simulator prices a keep-alive as a read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from warmloop.audit.report import audit, to_json
from warmloop.exchange.log import read_log

SYSTEM = "You are a careful agent. " * 1500
MARK = {"type": "ephemeral"}


def body(*turns: str, max_tokens: int = 4096) -> dict[str, Any]:
    roles = ["user", "assistant"]
    messages: list[dict[str, Any]] = [
        {"role": roles[i % 2], "content": [{"type": "text", "text": text}]}
        for i, text in enumerate(turns)
    ]
    messages[-1]["content"][0]["cache_control"] = MARK
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": max_tokens,
        "system": SYSTEM,
        "messages": messages,
    }


def test_a_keep_alive_is_audited_as_a_read_and_keeps_the_next_request_warm(
    tmp_path: Path,
) -> None:
    first = body("run the tests")
    lines = [
        {"body": first, "time": 1_000.0, "path": "/v1/messages"},
        {"body": body("run the tests", max_tokens=1), "time": 1_270.0, "path": "/v1/messages"},
        {
            "body": body("run the tests", "running", "2 failed"),
            "time": 1_480.0,
            "path": "/v1/messages",
        },
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report: dict[str, Any] = to_json(  # read loosely: the asserts check its shape
        audit(read_log(log), providers=["anthropic:claude-sonnet-4-6"])
    )
    (conversation,) = report["conversations"]
    first_req, keepalive, after = conversation["requests"]
    assert keepalive["cause"] is None
    assert keepalive["divergence"] is None
    assert keepalive["cached"] == first_req["prompt_tokens"]
    assert keepalive["written"] == 0
    # Eight minutes after the first request, warm thanks to the keep-alive at 4.5.
    assert after["cached"] == first_req["prompt_tokens"]
    assert after["cause"] is None
