"""The audit reads a logged Messages request as the model does (issue 46).

Claude Code 2.1 sends the message it marks as text blocks and, once it marks a later one,
the same message as a string ("Messages > Create a Message": a string `content` is
shorthand for one text block). The model reads both alike, so the audit, as the proxy,
names no bust where only the form changed (it named `messages-summarised` on a real log)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.audit.test_audit_grouping import audited, causes

ENVIRONMENT = "# Environment\nWorking directory: /work\nPlatform: linux\n" * 4


def body(environment: Any, *steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Run the tests."}]},
            {"role": "user", "content": environment},
            *steps,
        ],
    }


def test_a_message_sent_as_blocks_then_as_its_string_is_no_bust(tmp_path: Path) -> None:
    marked = [{"type": "text", "text": ENVIRONMENT, "cache_control": {"type": "ephemeral"}}]
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}
    steps = [
        {"role": "assistant", "content": [call]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
        },
    ]
    report = audited(tmp_path, [body(marked), body(ENVIRONMENT, *steps)])
    assert len(report.conversations) == 1
    assert causes(report) == [{}]
