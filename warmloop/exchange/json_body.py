"""A request body read and written again with every number as the client wrote it.

A proxy that adds a cache marker writes the body anew; Python's `json` reads `1e400` as
infinity and writes it back as `Infinity` (no JSON at all, refused upstream) and `0.10` as
`0.1`. `loads` keeps each number's text on the float it reads (`Number`, a `float`, so every
reader of the body sees a float), and `dumps` writes back the text of every number whose
own `repr` would differ from it: compact JSON, UTF-8 kept (a lone surrogate escaped again).
"""

from __future__ import annotations

import json
import secrets
from typing import Any


class Number(float):
    """A float read from a body, with the text it was written as."""

    text: str

    def __new__(cls, text: str) -> Number:
        number = super().__new__(cls, text)
        number.text = text
        return number


def loads(data: bytes | str) -> Any:
    """A body as JSON, each float a `Number` (`ValueError`, `RecursionError` as `json`)."""
    return json.loads(data, parse_float=Number)


def dumps(value: Any) -> bytes:
    """`value` as compact JSON bytes, each `Number` written as the client wrote it."""
    marks: dict[str, str] = {}
    nonce = secrets.token_hex(8)
    marked = _marked(value, marks, nonce)
    try:
        text = json.dumps(marked, ensure_ascii=False, separators=(",", ":"))
    except UnicodeEncodeError:  # a lone surrogate the client escaped: escape it again
        text = json.dumps(marked, separators=(",", ":"))
    for mark, written in marks.items():
        text = text.replace(json.dumps(mark), written)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(json.loads(text), separators=(",", ":")).encode()


def _marked(value: Any, marks: dict[str, str], nonce: str) -> Any:
    """`value` with each `Number` whose `repr` is not its text as a unique string (the
    value itself where there is none: nothing copied)."""
    if isinstance(value, Number):
        if float.__repr__(value) == value.text:
            return value
        mark = f"\x00{nonce}:{len(marks)}\x00"
        marks[mark] = value.text
        return mark
    if isinstance(value, dict):
        items = {k: _marked(v, marks, nonce) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if isinstance(value, list):
        listed = [_marked(v, marks, nonce) for v in value]
        return value if all(a is b for a, b in zip(listed, value, strict=True)) else listed
    return value
