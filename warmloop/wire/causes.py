"""Why a prefix moved: the classifier behind the guard's and the audit's causes.

Pure functions over two requests' wire pieces at the first divergence: the section, the
piece on each side, the offset inside it and the conversation items from there on. Each
answer is a `Cause`: a stable kind (for grouping busts and the dollars they cost) and a
sentence that names what changed (a tool, a parameter, a timestamp's two values).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def _json(text: str) -> object:
    try:
        value: object = json.loads(text.rstrip(","))
        return value
    except ValueError:
        return None


_DECLARATIONS = ("functionDeclarations", "function_declarations")
"""Gemini's one tool entry holding every function (REST spelling, then the SDK's)."""


def _declarations(value: object) -> list[object] | None:
    """The tools of a tools section one per entry: Gemini's declaration lists opened up,
    OpenAI Chat's `function` wrappers unwrapped, any other entry as it is."""
    if not isinstance(value, list):
        return None
    found: list[object] = []
    for tool in value:
        inner = next((tool[k] for k in _DECLARATIONS if isinstance(tool, dict) and k in tool), None)
        if isinstance(inner, list):
            found.extend(inner)
        elif isinstance(tool, dict) and isinstance(tool.get("function"), dict):
            found.append(tool["function"])
        else:
            found.append(tool)
    return found


def _name(tool: object) -> str:
    """A tool's name; a built-in without one (Gemini's `{"googleSearch": {}}`) by its key."""
    if isinstance(tool, dict) and isinstance(tool.get("name"), str):
        return str(tool["name"])
    if isinstance(tool, dict) and len(tool) == 1:
        return str(next(iter(tool)))
    return json.dumps(tool, sort_keys=True)[:60]


def _tool_names(value: object) -> list[str] | None:
    tools = _declarations(value)
    return None if tools is None else [_name(tool) for tool in tools]


def _changed_tool(old: object, new: object) -> str | None:
    """The name of the first tool whose definition differs (same names, same order)."""
    before, after = _declarations(old), _declarations(new)
    if before is None or after is None or len(before) != len(after):
        return None
    return next((_name(a) for a, b in zip(before, after, strict=True) if a != b), None)


# Keys and item types that carry reasoning a provider expects back (Anthropic thinking
# blocks and signatures, OpenAI reasoning items and encrypted content, DeepSeek
# reasoning_content, Gemini thought signatures).
_REASONING_KEYS = frozenset(
    {"signature", "encrypted_content", "reasoning_content", "thoughtSignature", "thought_signature"}
)
_REASONING_TYPES = frozenset({"thinking", "redacted_thinking", "reasoning"})


def _reasoning_marks(value: object) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        found.update(k for k in value if k in _REASONING_KEYS)
        kind = value.get("type")
        if isinstance(kind, str) and kind in _REASONING_TYPES:
            found.add(kind)
        if value.get("thought") is True:
            found.add("thought")
        for child in value.values():
            found |= _reasoning_marks(child)
    elif isinstance(value, list):
        for child in value:
            found |= _reasoning_marks(child)
    return found


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for child in value.values() for s in _strings(child)]
    if isinstance(value, list):
        return [s for child in value for s in _strings(child)]
    return []


def _shape(value: object) -> object:
    """The structure of a value with its strings blanked: what stays when content is edited."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return "" if isinstance(value, str) else value


_VOLATILE = (
    (
        "uuid",
        re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
    ),
    (
        "timestamp",
        re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(?::\d{2})?|^\d{10}(?:\d{3})?(?:\.\d+)?$"),
    ),
    ("path", re.compile(r"(?:^|[\s=:])(?:~|[A-Za-z]:)?[\\/][^\s/\\]+[\\/]|^\.{0,2}/\w")),
    ("counter", re.compile(r"^\d+$")),
    ("id", re.compile(r"^[0-9a-fA-F]{8,}$|^[A-Za-z]+[_-][A-Za-z0-9]{6,}$")),
)
_TOKEN_CHARS = re.compile(r"[^\s\"',;()\[\]{}<>|]")


def _token_at(text: str, offset: int) -> str:
    """The run of non-delimiter characters that holds `offset` (or ends just before it)."""
    if not text:
        return ""
    offset = max(0, min(offset, len(text) - 1))
    if not _TOKEN_CHARS.match(text[offset]) and offset and _TOKEN_CHARS.match(text[offset - 1]):
        offset -= 1
    start = end = offset
    while start > 0 and _TOKEN_CHARS.match(text[start - 1]):
        start -= 1
    while end < len(text) and _TOKEN_CHARS.match(text[end]):
        end += 1
    return text[start:end].rstrip(".:")


def volatile_value(old_piece: str, new_piece: str, offset: int) -> tuple[str, str, str] | None:
    """(kind, old, new) when the text at `offset` of both pieces is a value that changes by
    itself between requests: a uuid, timestamp, path, counter or id."""
    old, new = _token_at(old_piece, offset), _token_at(new_piece, offset)
    if not old or not new or old == new:
        return None
    for kind, pattern in _VOLATILE:
        if pattern.search(old) and pattern.search(new):
            return kind, old, new
    return None


@dataclass(frozen=True)
class Cause:
    """A classified reason for a moved prefix: a stable `kind` and a sentence for people.

    Kinds: key-order, tools-changed, tool-schema, parameters, model, volatile-value,
    system-changed, reasoning-dropped, messages-removed, messages-summarised,
    messages-inserted, message-rebuilt, content-replaced, content-truncated,
    history-trimmed, history-rewritten.
    """

    kind: str
    text: str


_PLACEHOLDER_WORDS = re.compile(
    r"clear|omit|prun|remov|truncat|elided|redact|hidden|placeholder|\.\.\.|…", re.IGNORECASE
)
_SUMMARY_WORDS = re.compile(r"summar|compact|condens|recap", re.IGNORECASE)


def _item_cause(
    section: str,
    old_value: object,
    new_value: object,
    old_items: Sequence[str],
    new_items: Sequence[str],
) -> Cause | None:
    """Causes that need the conversation items from the divergence on (both requests)."""
    dropped = _reasoning_marks(old_value) - _reasoning_marks(new_value)
    if dropped:
        what = ", ".join(sorted(dropped))
        return Cause(
            "reasoning-dropped",
            f"reasoning or signatures dropped from {section} ({what}): the provider expects "
            "them back unchanged",
        )
    if old_items and len(new_items) > len(old_items):
        moved = len(old_items)
        if list(new_items[-moved:]) == list(old_items):
            return Cause(
                "messages-inserted",
                f"rebuilt prompt: {len(new_items) - moved} message(s) inserted before {section}, "
                f"which moves down every step and is re-sent with all after it: append new "
                "turns after it (a trailing instruction belongs in the newest turn only)",
            )
    later_old = list(old_items[1:])
    if new_items and new_items[0] in later_old:
        removed = later_old.index(new_items[0]) + 1
        return Cause(
            "messages-removed",
            f"{removed} message(s) removed at {section}: history was trimmed (a sliding window?)",
        )
    if old_value is not None and new_value is not None and _shape(old_value) != _shape(new_value):
        # A different kind of item takes this place: were later items kept, shifted down?
        kept = [i for i, item in enumerate(new_items[1:], 1) if item in later_old]
        summary = any(_SUMMARY_WORDS.search(s) for s in _strings(new_value))
        if summary or (kept and later_old.index(new_items[kept[0]]) + 1 > kept[0]):
            return Cause(
                "messages-summarised",
                f"messages from {section} on were replaced by a summary (compaction)",
            )
    return None


def _content_cause(section: str, old_value: object, new_value: object) -> Cause | None:
    """An item that kept its structure but whose text was cut or swapped for a placeholder."""
    if old_value is None or _shape(old_value) != _shape(new_value):
        return None
    pairs = [
        (a, b) for a, b in zip(_strings(old_value), _strings(new_value), strict=True) if a != b
    ]
    if not pairs:
        return None
    old, new = pairs[0]
    if len(new) >= len(old):
        return None
    stem = new.rstrip(". …\n").removesuffix("[truncated]").rstrip(". …\n")
    if stem and old.startswith(stem):
        return Cause(
            "content-truncated",
            f"content of {section} was truncated ({len(old)} -> {len(new)} characters)",
        )
    if len(new) <= max(200, len(old) // 2) or _PLACEHOLDER_WORDS.search(new):
        return Cause(
            "content-replaced",
            f"content of {section} was replaced by a shorter placeholder "
            f"({len(old)} -> {len(new)} characters: pruning or cleared tool results)",
        )
    return None


INSERTED_AT_LEAST = 16
"""Characters an edit must add inside a message to read as an insertion rather than a
value that changed (a counter going from 9 to 10 adds one)."""


def _inserted(section: str, old_piece: str, new_piece: str, offset: int | None) -> Cause | None:
    """Text inserted before the end of a message: everything the old piece held after the
    divergence is found again at the end of the new one, after the new text."""
    if offset is None or offset >= len(old_piece):
        return None
    tail = old_piece[offset:]
    added = len(new_piece) - len(old_piece)
    if added < INSERTED_AT_LEAST or not new_piece.endswith(tail):
        return None
    return Cause(
        "message-rebuilt",
        f"rebuilt message: text inserted before the end of {section} ({added:,} characters; "
        f"the {len(tail):,} after them move down and are re-sent every step): append each "
        "step as a new turn instead of rebuilding one message",
    )


CACHE_KEYED_SETTINGS = {
    "thinking": "thinking_budget",
    "tool_choice.disable_parallel_tool_use": "parallel_tool_calls",
}
"""Request fields a provider keys its cache on (Anthropic, "Prompt caching > What
invalidates the cache": thinking and tool choice) that a `ModelSettings` field sets, with
that field: a follow-up run given other settings than the conversation's misses here."""


def _keyed_settings(
    keys: list[str], old: Mapping[str, object], new: Mapping[str, object]
) -> list[str]:
    """The changed `keys` a model setting sets, each named with its setting."""
    found = []
    for key in keys:
        field = key
        inner = "disable_parallel_tool_use"
        if any(isinstance(v, dict) and inner in v for v in (old.get(key), new.get(key))):
            field = f"{key}.{inner}"
        if field in CACHE_KEYED_SETTINGS:
            found.append(f"{field} (model setting {CACHE_KEYED_SETTINGS[field]})")
    return found


def _request_cause(old_value: object, new_value: object) -> Cause:
    if isinstance(old_value, dict) and isinstance(new_value, dict):
        keys = sorted(
            k for k in old_value.keys() | new_value.keys() if old_value.get(k) != new_value.get(k)
        )
        if "model" in keys:
            was, now = old_value.get("model"), new_value.get("model")
            return Cause("model", f"the model changed ({was!r} -> {now!r})")
        keyed = _keyed_settings(keys, old_value, new_value)
        if keyed:
            return Cause(
                "parameters",
                f"model settings the provider keys its cache on changed mid-conversation: "
                f"{', '.join(keyed)}; every message after them is written again: keep them "
                "the same for a whole conversation",
            )
        if keys:
            return Cause("parameters", f"request parameters changed: {', '.join(keys)}")
    return Cause("parameters", "request parameters changed (model, tool choice or another setting)")


def _tools_cause(old_value: object, new_value: object) -> Cause:
    """What changed in the tools section: their order, which tools, or one's definition."""
    old_names, new_names = _tool_names(old_value), _tool_names(new_value)
    if old_names is not None and new_names is not None:
        if sorted(old_names) == sorted(new_names) and old_names != new_names:
            return Cause("tools-changed", "tools reordered (same tools, another order)")
        if set(old_names) != set(new_names):
            added = sorted(set(new_names) - set(old_names))
            removed = sorted(set(old_names) - set(new_names))
            detail = "; ".join(
                part
                for part in (
                    f"added {', '.join(added)}" if added else "",
                    f"removed {', '.join(removed)}" if removed else "",
                )
                if part
            )
            return Cause("tools-changed", f"tools added or removed ({detail})")
    name = _changed_tool(old_value, new_value)
    named = f" ({name!r}: description or schema)" if name else " (description or schema)"
    return Cause("tool-schema", f"a tool's definition changed{named}")


def _value_cause(
    section: str, old_piece: str, new_piece: str, before: str, after: str, offset: int | None
) -> Cause:
    """The last resort: a value that changes by itself (a uuid, a timestamp, a number), or a
    section re-rendered."""
    volatile = volatile_value(old_piece, new_piece, offset) if offset is not None else None
    digits = any(c.isdigit() for c in before[:8]) and any(c.isdigit() for c in after[:8])
    if volatile is not None:
        kind, was, now = volatile
        lead = f"a number changed in {section}" if digits else f"a {kind} changed in {section}"
        return Cause("volatile-value", f"{lead}: a {kind} in the prompt ({was!r} -> {now!r})")
    if digits:
        return Cause(
            "volatile-value",
            f"a number changed in {section}: a counter, timestamp or id in the prompt?",
        )
    if section == "system":
        return Cause("system-changed", "the system prompt changed between requests")
    return Cause(
        "history-rewritten", f"{section} was replaced or re-rendered: history is not append-only"
    )


def classify(
    section: str,
    old_piece: str,
    new_piece: str,
    before: str,
    after: str,
    *,
    offset: int | None = None,
    old_items: Sequence[str] = (),
    new_items: Sequence[str] = (),
) -> Cause:
    """Why a prefix moved, from the section and what changed there (pure).

    `offset` is where the divergence sits inside the pieces (to name a volatile value);
    `old_items`/`new_items` are the conversation items from the diverging one on, in both
    requests (to tell removed or summarised messages from an edit).
    """
    old_value, new_value = _json(old_piece), _json(new_piece)
    if old_value is not None and old_value == new_value:
        return Cause("key-order", f"key order changed in {section}: same content, different bytes")
    if section == "tools":
        return _tools_cause(old_value, new_value)
    if section == "request":
        return _request_cause(old_value, new_value)
    if section.startswith("message") or section == "system":
        found = _item_cause(section, old_value, new_value, old_items, new_items)
        if found is not None:
            return found
        found = _content_cause(section, old_value, new_value)
        if found is not None:
            return found
        found = _inserted(section, old_piece, new_piece, offset)
        if found is not None:
            return found
    return _value_cause(section, old_piece, new_piece, before, after, offset)
