"""File names as the workspace tools print them, and back.

A plain name is printed as it is. A name that could be misread is printed as a JSON string
literal instead: one with control characters (a newline would split a listing line), format
or separator characters, lone surrogates (the bytes of a name that is not valid UTF-8, which
os.listdir hands back as U+DC80..U+DCFF and which no UTF-8 transcript can hold), leading or
trailing whitespace, or a leading double quote (so a plain name never looks quoted). The
escaped form is pure JSON, so `parse_name(show_name(n)) == n` for every name.
"""

from __future__ import annotations

import json
import unicodedata

# Cc controls, Cf format (bidi overrides), Cs surrogates, Zl/Zp line and paragraph separators.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}


def _needs_escape(char: str) -> bool:
    return unicodedata.category(char) in _ESCAPED_CATEGORIES


def _escape(char: str) -> str:
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    if not _needs_escape(char):
        return char
    code = ord(char)
    if code > 0xFFFF:  # JSON spells astral code points as a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def is_plain(name: str) -> bool:
    """True if `name` is printed unchanged: nothing in it can be misread or break UTF-8."""
    return (
        name != ""
        and not name.startswith('"')
        and name == name.strip()
        and not any(_needs_escape(char) for char in name)
    )


def show_name(name: str) -> str:
    """`name` as the tools print it: unchanged if plain, else a JSON string literal."""
    if is_plain(name):
        return name
    return '"' + "".join(_escape(char) for char in name) + '"'


def parse_name(shown: str) -> str:
    """The name that `shown` stands for: a JSON string literal is decoded, the rest is literal.

    Models also quote plain paths by habit (`"src/app.py"`); decoding those is harmless.
    """
    if len(shown) >= 2 and shown.startswith('"') and shown.endswith('"'):
        try:
            value = json.loads(shown)
        except ValueError:
            return shown
        if isinstance(value, str):
            return value
    return shown
