"""The truth about a recorded log, computed without the audit (nothing of `warmloop.audit`).

- Conversations: the generator's tasks. Every prompt carries `[task:NAME]` (see `script`),
  so a request belongs to the task named in its body.
- Canonical request: the body's blocks, each `json.dumps(..., sort_keys=True)`, joined by
  newlines, in the order a provider reads a prompt: parameters (less the volatile ones in
  `VOLATILE` and the cache markers), tools, system (Anthropic `system`, Responses
  `instructions`), then each conversation item (Anthropic: each content block of each
  message, as Anthropic counts blocks for its lookback; a content of one text block read as
  the string it stands for, as the model reads it). Tokens are estimated at four
  characters each, consistently: a request's prompt (or a prefix ending at a block
  boundary) of `n` characters is `ceil(n / 4)` tokens, and a prefix shared with the previous
  request that ends inside a block is `n // 4` (all of the previous one when it extends it).
- A bust: a request whose canonical text does not start with its predecessor's (same
  conversation).
- Dollars, per provider rule set, against a perfect append-only prefix (request k reads all
  of request k-1, or as much of it as request k is long, and pays the rest as new):
  * OpenAI (automatic caching, `openai:gpt-5`): request k reads the longest common prefix
    with request k-1 in 128-token increments, from 1,024 tokens; the rest is plain input.
    Gemini's implicit caching (`gemini:gemini-2.5-flash`) by the same rule, from its
    minimum of 2,048 tokens, token by token. (DeepSeek is left out: its hits are whole
    stored entries, prompts and the common prefixes it persists, not a plain prefix.)
  * Anthropic (explicit breakpoints, `anthropic:claude-sonnet-4-6`): an Anthropic-format
    request pays by its own `cache_control` markers (on tools, system and content blocks; a
    top-level one marks the last block; a request without any caches nothing); another
    format's request is priced as a careful client would mark it: a breakpoint on its last
    block and on the last block it shares with its predecessor. A read needs an earlier
    write at a block boundary of the same prefix within 20 blocks before a breakpoint; a
    breakpoint past the read writes up to itself; prefixes under the model's minimum are
    never written. Writes cost the 5-minute rate.
  Requests are seconds apart, so no TTL expires. Model facts (minimum, increment, prices)
  come from the library's dated tables (`warmloop.facts`), not from the audit.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.framework_corpus.script import TASK_TAG
from warmloop.facts.price_table import prices_for
from warmloop.facts.profiles import profile_for

VOLATILE = frozenset(
    {
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "temperature",
        "top_p",
        "n",
        "stop",
        "seed",
        "store",
        "metadata",
        "user",
        "prompt_cache_key",
        "include",
        "parallel_tool_calls",
        "service_tier",
        "truncation",
        "cache_control",
    }
)
"""Request keys that are no part of the cached prompt."""
CONVERSATION = ("messages", "input", "system", "instructions", "tools")
PROVIDERS = ("openai:gpt-5", "anthropic:claude-sonnet-4-6", "gemini:gemini-2.5-flash")
CHARS_PER_TOKEN = 4
LOOKBACK = 20


def dumps(value: Any) -> str:
    return json.dumps(strip_markers(value), sort_keys=True, ensure_ascii=False)


def strip_markers(value: Any) -> Any:
    """`value` without `cache_control` keys (markers are not prompt text)."""
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def _marked(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("cache_control"), dict)


def _one_text(value: Any) -> tuple[str, bool] | None:
    """The string a content of one plain text block stands for, and whether the block is
    marked; None for any other content. The model reads `[{"type": "text", "text": X}]`
    and `X` alike, so a client (or the proxy, to mark it) may send either form at no cost."""
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], dict):
        return None
    block = value[0]
    text = block.get("text")
    if block.get("type") != "text" or not isinstance(text, str):
        return None
    if not set(block) <= {"type", "text", "cache_control"}:
        return None
    return text, _marked(block)


def blocks(body: Mapping[str, Any], anthropic: bool) -> tuple[tuple[str, bool], ...]:
    """The canonical blocks of a request body, in the order the provider reads them, each
    with whether it carries an explicit cache marker (a top-level one marks the last). A
    Messages content of one text block is read as the string it stands for (`_one_text`)."""
    params = {k: v for k, v in body.items() if k not in VOLATILE and k not in CONVERSATION}
    out = [(dumps(params), False)]
    tools = body.get("tools") or []
    if anthropic:
        out.extend((dumps(tool), _marked(tool)) for tool in tools)
    else:
        out.append((dumps(tools), False))
    system = body.get("system", body.get("instructions"))
    single = _one_text(system) if anthropic else None
    if single is not None:
        out.append((dumps(single[0]), single[1]))
    elif isinstance(system, list):
        out.extend((dumps(block), _marked(block)) for block in system)
    elif system is not None:
        out.append((dumps(system), False))
    items = body.get("messages", body.get("input"))
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        content = item.get("content") if anthropic and isinstance(item, dict) else None
        single = _one_text(content)
        if single is not None:
            out.append((dumps({**item, "content": single[0]}), single[1]))
        elif isinstance(content, list):
            role = item.get("role")
            out.extend(
                (f"{role}|{n}|{dumps(block)}", _marked(block)) for n, block in enumerate(content)
            )
        else:
            out.append((dumps(item), False))
    if _marked(body):
        out[-1] = (out[-1][0], True)
    return tuple(out)


def request_of(line: int, body: Mapping[str, Any], anthropic: bool) -> Request:
    """A logged request as the truth prices it."""
    found = blocks(body, anthropic)
    marks = frozenset(n + 1 for n, (_, marked) in enumerate(found) if marked)
    return Request(line, tuple(text for text, _ in found), marks, anthropic)


def common_prefix(a: str, b: str) -> int:
    """Characters two strings share from the start."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def prompt_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Request:
    """One request of a conversation as the truth sees it."""

    line: int
    blocks: tuple[str, ...]
    marks: frozenset[int]
    """Block boundaries (blocks before them) with an explicit cache marker."""
    anthropic: bool

    @property
    def text(self) -> str:
        return "\n".join(self.blocks)

    def boundary_tokens(self, count: int) -> int:
        """Tokens before block `count` (a block boundary)."""
        return prompt_tokens("\n".join(self.blocks[:count]))


@dataclass(frozen=True)
class Bill:
    """Tokens of one request by how they are billed."""

    read: int
    written: int
    uncached: int

    def dollars(self, spec: str) -> float:
        prices = prices_for(spec)
        if prices is None:
            raise ValueError(f"{spec} has no prices in the table; the truth cannot price it")
        rates = prices.rates
        write = dict(rates.cache_writes).get("5m", rates.input)
        return (
            self.uncached * rates.input + self.read * rates.cache_read + self.written * write
        ) / 1e6


def _automatic(spec: str, requests: Sequence[Request]) -> list[tuple[Bill, Bill]]:
    profile = profile_for(spec)

    def readable(tokens: int, previous: int) -> int:
        if previous < profile.min_cacheable_tokens or tokens < profile.min_cacheable_tokens:
            return 0
        return tokens // profile.increment_tokens * profile.increment_tokens

    out: list[tuple[Bill, Bill]] = []
    for k, request in enumerate(requests):
        size = prompt_tokens(request.text)
        if not k:
            out.append((Bill(0, 0, size), Bill(0, 0, size)))
            continue
        before = requests[k - 1].text
        previous = prompt_tokens(before)
        extends = request.text.startswith(before)
        shared = previous if extends else common_prefix(before, request.text) // CHARS_PER_TOKEN
        shared = min(shared, size)
        read = readable(shared, previous)
        best = readable(min(previous, size), previous)
        out.append((Bill(read, 0, size - read), Bill(best, 0, size - best)))
    return out


def _explicit(spec: str, requests: Sequence[Request]) -> list[tuple[Bill, Bill]]:
    minimum = profile_for(spec).min_cacheable_tokens
    writes: list[tuple[tuple[str, ...], int]] = []
    out: list[tuple[Bill, Bill]] = []
    for k, request in enumerate(requests):
        size = prompt_tokens(request.text)
        previous = prompt_tokens(requests[k - 1].text) if k else 0
        limit = min(previous, size)  # all an append-only loop could reuse
        best = limit if k and limit >= minimum else 0
        new = size - best if size >= minimum else 0
        perfect = Bill(best, new, size - best - new)
        count = len(request.blocks)
        shared = 0
        if k:
            for a, b in zip(requests[k - 1].blocks, request.blocks, strict=False):
                if a != b:
                    break
                shared += 1
        careful = {count} | ({shared} if 0 < shared < count else set())
        # An Anthropic request has the marks it sent (none: nothing read, nothing written).
        marks = request.marks if request.anthropic else careful
        read_at = max(
            (
                at
                for written, at in writes
                if at <= count
                and written[:at] == request.blocks[:at]
                and any(0 <= mark - at < LOOKBACK for mark in marks)
            ),
            default=0,
        )
        read = request.boundary_tokens(read_at) if read_at else 0
        stored = [b for b in marks if request.boundary_tokens(b) >= minimum and b > read_at]
        end = max((request.boundary_tokens(b) for b in stored), default=read)
        writes.extend((request.blocks, b) for b in stored)
        out.append((Bill(read, max(end - read, 0), size - max(end, read)), perfect))
    return out


def bound(spec: str, requests: Sequence[Request]) -> list[Bill]:
    """Per request, the best a perfect cache of exactly these requests allows under `spec`'s
    rules: each reads the longest prefix it shares with any earlier request of its
    conversation (OpenAI, Gemini: by characters, in the model's increments, from its
    minimum; Anthropic: at a block boundary, from its minimum). Under explicit rules a
    request writes only what a later one reads (`_needed`), once, at the first request that
    holds it: a write nothing reads costs the premium and saves nothing, so the best
    sends none (a framework's last request, one whose rebuilt prompt no later request
    shares). For a loop that only appends this is the perfect prefix of `price`, but for
    the last request's write; a framework that rebuilds its prompt is held only to what its
    rebuilt requests still share."""
    profile = profile_for(spec)
    minimum = profile.min_cacheable_tokens
    explicit = profile.mode == "explicit"
    shares = [
        [_shared(spec, earlier, request) for earlier in requests[:k]]
        for k, request in enumerate(requests)
    ]
    reads: list[int] = []
    for shared in shares:
        read = max(shared, default=0)
        if read < minimum:
            read = 0
        elif not explicit:
            read = read // profile.increment_tokens * profile.increment_tokens
        reads.append(read)
    needed = _needed(shares, reads) if explicit else [0] * len(requests)
    out: list[Bill] = []
    for request, read, need in zip(requests, reads, needed, strict=True):
        size = prompt_tokens(request.text)
        written = max(need - read, 0)
        out.append(Bill(read, written, size - read - written))
    return out


def _needed(shares: Sequence[Sequence[int]], reads: Sequence[int]) -> list[int]:
    """Per request, the tokens of it a later request reads (`reads`) from its cache entry:
    each read is served by the first request that shares that much with the reader
    (`shares[j][i]`: what request i's entry could serve request j), so a prefix is written
    once, where it first appears."""
    needed = [0] * len(reads)
    for j, read in enumerate(reads):
        if read:
            source = next(i for i, shared in enumerate(shares[j]) if shared >= read)
            needed[source] = max(needed[source], read)
    return needed


def _shared(spec: str, earlier: Request, request: Request) -> int:
    """Tokens of `request` a cache entry of `earlier` could serve (nothing from an entry
    under the minimum, which is never stored)."""
    previous = prompt_tokens(earlier.text)
    if previous < profile_for(spec).min_cacheable_tokens:
        return 0
    if profile_for(spec).mode == "explicit":
        count = 0
        for a, b in zip(earlier.blocks, request.blocks, strict=False):
            if a != b:
                break
            count += 1
        return request.boundary_tokens(count) if count else 0
    if request.text.startswith(earlier.text):
        return previous
    return min(common_prefix(earlier.text, request.text) // CHARS_PER_TOKEN, previous)


def price(spec: str, requests: Sequence[Request]) -> list[tuple[Bill, Bill]]:
    """Per request, (as sent, perfect prefix) bills under `spec`'s rules."""
    if profile_for(spec).mode == "explicit":
        return _explicit(spec, requests)
    return _automatic(spec, requests)


def read_lines(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """The log's records with their line numbers (from 1); gzip or plain."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield number, json.loads(line)


def truth(path: Path) -> dict[str, Any]:
    """The truth document of one log (see the module docstring)."""
    tasks: dict[str, list[Request]] = {}
    for line, record in read_lines(path):
        body = record["body"]
        anthropic = str(record.get("path", "")).endswith("/messages")
        found = TASK_TAG.search(json.dumps(body, ensure_ascii=False))
        if found is None:
            raise ValueError(f"{path} line {line}: no [task:...] tag in the request")
        tasks.setdefault(found.group(1), []).append(request_of(line, body, anthropic))
    conversations = []
    for task, requests in tasks.items():
        texts = [r.text for r in requests]
        busts = [
            r.line for k, r in enumerate(requests) if k and not texts[k].startswith(texts[k - 1])
        ]
        providers = {}
        for spec in PROVIDERS:
            bills = price(spec, requests)
            actual = sum(a.dollars(spec) for a, _ in bills)
            perfect = sum(p.dollars(spec) for _, p in bills)
            providers[spec] = {
                "actual_usd": actual,
                "perfect_usd": perfect,
                "lost_usd": actual - perfect,
                "bills": [[list(_fields(a)), list(_fields(p))] for a, p in bills],
            }
        conversations.append(
            {
                "task": task,
                "lines": [r.line for r in requests],
                "busts": busts,
                "tokens": [prompt_tokens(t) for t in texts],
                "shared_tokens": [0]
                + [
                    common_prefix(texts[k - 1], texts[k]) // CHARS_PER_TOKEN
                    for k in range(1, len(texts))
                ],
                "providers": providers,
            }
        )
    return {"log": path.name, "conversations": conversations}


def _fields(bill: Bill) -> tuple[int, int, int]:
    return bill.read, bill.written, bill.uncached
