"""Derive a warmloop request log from a VCR cassette (a pydantic-ai test's recorded traffic).

    python scripts/cassette_log.py CASSETTE.yaml > LOG.jsonl

Each interaction becomes the line `warmloop record` would have written for it: the endpoint
path (no query), the status, the request body as sent, and the usage and response id read
from the recorded response by the recorder's own reader (`exchange.response_facts`: a JSON
body or an event stream). A cassette keeps no times; where the response carries its own
(the Responses API's `created_at` and `completed_at`, epoch seconds) they become the line's
`at` and `answered_at`, else the line has none. Needs PyYAML (a dependency of the docs
build). The derived logs the audit's tests read are in tests/audit/cassettes/, each with
its source in tests/audit/test_audit_cassettes.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

import yaml

from warmloop.exchange.response_facts import response_facts


def _events(text: str) -> Iterator[object]:
    """The JSON `data:` payloads of an event stream."""
    for event in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
        if lines:
            try:
                yield json.loads("\n".join(lines))
            except ValueError:
                continue


def _times(objects: list[object]) -> dict[str, float]:
    """`at` and `answered_at` from a response's own `created_at` and `completed_at`."""
    found: dict[str, float] = {}
    for obj in objects:
        response = obj.get("response", obj) if isinstance(obj, dict) else None
        if not isinstance(response, dict):
            continue
        created, completed = response.get("created_at"), response.get("completed_at")
        if isinstance(created, int | float) and "at" not in found:
            found["at"] = float(created)
        if isinstance(completed, int | float):
            found["answered_at"] = float(completed)
    return found


def log_lines(cassette: dict[str, object]) -> Iterator[dict[str, object]]:
    """One log line per interaction of a parsed cassette."""
    interactions = cassette["interactions"]
    assert isinstance(interactions, list)
    for interaction in interactions:
        request, response = interaction["request"], interaction["response"]
        body = request.get("parsed_body")
        if body is None:
            body = json.loads(request["body"])
        parsed = response.get("parsed_body")
        if parsed is not None:
            raw, objects, kind = json.dumps(parsed).encode(), [parsed], "application/json"
        else:
            text = response["body"]
            text = text["string"] if isinstance(text, dict) else text
            raw, objects, kind = text.encode(), list(_events(text)), "text/event-stream"
        facts = response_facts(raw, kind)
        line: dict[str, object] = {
            **_times(objects),
            "path": urlsplit(request["uri"]).path,
            "status": response["status"]["code"],
            "body": body,
            "usage": facts.usage,
            "response_id": facts.response_id,
        }
        if facts.diagnostics:
            line["diagnostics"] = facts.diagnostics
        yield line


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as source:
        for line in log_lines(yaml.safe_load(source)):
            print(json.dumps(line, separators=(",", ":"), ensure_ascii=False))
