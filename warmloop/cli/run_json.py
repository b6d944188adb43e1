"""`warmloop run --json`: the whole result of a run as one JSON object on stdout, for a
script to read instead of the human view.

The object always has the same keys: `outputs` (null when the run failed), `extracted`,
`model`, `session`, `requests` (one object a request: its usage, cache reads, seconds,
prefix stability and any bust), `usage` (summed), `cost` (USD, null when unpriced),
`warnings`, `transcript` (the file it was saved to, if any) and `error` (null on success,
else an object: the failure's `kind`, the error's `type` and the one-line `message` the
human view prints on stderr). The exit code is the human view's, by the failure's kind
(`cli.exit_codes`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from warmloop.agent.result import Run
from warmloop.cli.console import json_text
from warmloop.errors import WarmloopError
from warmloop.facts.pricing import cost_report
from warmloop.facts.usage import Usage
from warmloop.wire.request_record import RequestRecord

FORMAT = "warmloop.run/2"
"""2: `error` is an object with the failure's kind (a string before)."""


def usage_json(usage: Usage) -> dict[str, Any]:
    """Every token count of `usage`, and the prompt total it implies."""
    return {"prompt_tokens": usage.prompt_tokens, **asdict(usage)}


def request_json(record: RequestRecord, cost: float | None) -> dict[str, Any]:
    """One request: its usage, the share of its prompt read from the cache, seconds, how
    much of it extended the request before, any cache bust, and its cost."""
    usage, check = record.usage, record.prefix
    prompt = usage.prompt_tokens
    return {
        "usage": usage_json(usage),
        "cache_hit_rate": usage.cache_read_tokens / prompt if prompt else None,
        "seconds": record.seconds,
        "prefix_reusable": check.reusable,
        "prefix_total": check.total,
        "bust": None if check.bust is None else str(check.bust),
        "cost": cost,
    }


def _costs(
    model: str, usages: Sequence[Usage], count: int, priced_as: str | None = None
) -> tuple[list[float | None], float | None]:
    """Each request's cost and the total (None where the model is unpriced)."""
    try:
        report = cost_report(model, usages, priced_as=priced_as)
        per_request = report.per_request
        total = report.total
    except WarmloopError:  # usage billed at a rate the price table lacks
        return [None] * count, None
    if per_request is None:
        return [None] * count, None
    costs: list[float | None] = [c.total for c in per_request[:count]]
    return costs, total


def run_object(
    *,
    model: str | None,
    session: str | None,
    requests: Sequence[RequestRecord],
    result: Run | None = None,
    error: dict[str, str] | None = None,
    saved: Path | None = None,
) -> dict[str, Any]:
    """The JSON object of a finished run (`result`) or of one that failed (`error`, with
    the requests it sent before); `model` is None when no agent was made."""
    usages = result.usages() if result is not None else [r.usage for r in requests]
    priced_as = result.facts.priced_as if result is not None and result.facts else None
    costs, total = _costs(model or "", usages, len(requests), priced_as)
    return {
        "format": FORMAT,
        "outputs": None if result is None else result.outputs.model_dump(mode="json"),
        "extracted": False if result is None else result.extracted,
        "model": model,
        "session": session,
        "requests": [request_json(r, c) for r, c in zip(requests, costs, strict=True)],
        "usage": usage_json(sum(usages, Usage())),
        "cost": total,
        "warnings": [] if result is None else list(result.warnings),
        "transcript": None if saved is None else str(saved),
        "error": error,
    }


def print_json(data: dict[str, Any]) -> None:
    """`data` as one line of JSON on stdout (control characters escaped)."""
    click.echo(json_text(json.dumps(data, ensure_ascii=False)))
