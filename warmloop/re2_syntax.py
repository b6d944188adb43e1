"""Python's regular-expression spellings in RE2's syntax: one translation, shared by the
workspace's search (`workspace.pattern`) and the patterns of remote tool schemas
(`tools.remote_schema`), both of which run on RE2 so that no pattern can take exponential
time. Only spellings RE2 has under another name are rewritten (`\\Z`, `\\uXXXX`,
`\\UXXXXXXXX`, `{,n}`); what RE2 lacks is left for RE2 to refuse."""

from __future__ import annotations

import re

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_UP_TO = re.compile(r"\{,(\d+)\}")  # Python's `{,n}`: RE2 reads it as literal text


def to_re2(pattern: str, *, whole_text: bool = False) -> str:
    """`pattern` with Python-only spellings rewritten in RE2 syntax; the rest unchanged.

    With `whole_text`, the line anchors `\\A`, `\\Z` and `\\z` become `^` and `$`, for use
    in multi-line mode over a whole text.
    """
    out: list[str] = []
    i, in_class, class_start = 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            width = {"u": 4, "U": 8}.get(escape, 0)
            digits = pattern[i + 2 : i + 2 + width]
            if whole_text and escape in "AZz" and not in_class:
                out.append("^" if escape == "A" else "$")
                i += 2
            elif escape == "Z" and not in_class:
                out.append("\\z")  # Python's \Z is end of text, which RE2 spells \z
                i += 2
            elif width and len(digits) == width and set(digits) <= _HEX_DIGITS:
                out.append(f"\\x{{{digits}}}")
                i += 2 + width
            else:
                out.append(pattern[i : i + 2])
                i += 2
            continue
        if in_class:
            end = pattern.find(":]", i + 2) if pattern.startswith("[:", i) else -1
            if end != -1:  # a POSIX class such as [:alpha:] does not end the set
                out.append(pattern[i : end + 2])
                i = end + 2
                continue
            # A `]` first in the set (`[]a]`, `[^]a]`) is a member, not the end.
            in_class = not (char == "]" and i > class_start)
        elif char == "[":
            in_class = True
            class_start = i + 2 if pattern.startswith("^", i + 1) else i + 1
        elif (up_to := _UP_TO.match(pattern, i)) is not None:
            out.append(f"{{0,{up_to.group(1)}}}")
            i = up_to.end()
            continue
        out.append(char)
        i += 1
    return "".join(out)
