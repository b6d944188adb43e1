"""Each request filed from its own content and keys, never from arrival order (issue 46):
200 clients at once, tenants whose system prompts differ anywhere, Codex's per-turn
`client_metadata`, Claude Code's sub-agents under their parent's `metadata.user_id`, and
prompts rebuilt from their start, each through the proxy's conversations; the busy cases
through the real proxy and the official SDK to the loopback server."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anthropic
import pytest

from tests.proxy.test_proxy_conversations import Clock
from tests.support.proxy_wire import Captured
from tests.support.wire_servers import WireServer
from warmloop.providers.anthropic.record import FORMAT as MESSAGES
from warmloop.providers.openai.record import CHAT_FORMAT as CHAT
from warmloop.providers.openai.record import RESPONSES_FORMAT
from warmloop.proxy.conversations import LiveConversations, Placed
from warmloop.proxy.fixes import Fixes
from warmloop.proxy.server import Proxy

CLIENTS = 200
ROUNDS = 3
LIVENESS_SECONDS = 120.0
"""A guard against a hang, far above what a round needs: not a timing assertion."""
SYSTEM = "You are a careful coding agent. Use the tools; cite the lines you read."
TOOLS: Any = [
    {
        "name": "read",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def turns(task: str, steps: int) -> list[dict[str, Any]]:
    """A tool-using conversation after `steps` steps (a tool call and its result each)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for n in range(steps):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{n}", "name": "read", "input": {"path": "a"}}
                ],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"line {n}"}
        messages.append({"role": "user", "content": [result]})
    return messages


def messages_body(task: str, steps: int, system: str = SYSTEM, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": system,
        "tools": TOOLS,
        "messages": turns(task, steps),
        **extra,
    }


def place(conversations: LiveConversations, body: dict[str, Any], wire: Any = MESSAGES) -> Placed:
    found = conversations.place(wire, body)
    assert found is not None
    return found


def test_two_hundred_clients_at_once_are_two_hundred_conversations_without_a_bust(
    wire_server: WireServer,
) -> None:
    """Every round starts all 200 clients' requests together (a barrier), so each request
    arrives among the other clients'; the tasks come from one template and differ only in
    the number at their end (a batch of jobs), so no leading text tells them apart."""
    captured = Captured()
    wire_server.serve(captured)
    fixes = Fixes(session_header="X-Session-ID")
    barrier = threading.Barrier(CLIENTS, timeout=LIVENESS_SECONDS)
    with Proxy(wire_server.url, None, fixes=fixes, guard=True).start() as proxy:

        def client(n: int) -> None:
            sdk = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
            task = f"Fix the failing test in the parser, then run the suite and report on case {n}"
            for step in range(ROUNDS):
                barrier.wait()
                sdk.messages.create(**messages_body(task, step))

        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(client, range(CLIENTS)))
        page = proxy.status()
    assert page["conversations"] == CLIENTS
    assert page["requests"] == CLIENTS * ROUNDS
    assert page["busts"] == 0
    by_task: dict[str, set[str]] = defaultdict(set)
    for _, headers, body in captured.seen:
        content = body["messages"][0]["content"]  # a text block where a marker went
        task = content if isinstance(content, str) else content[0]["text"]
        by_task[task].add(headers["x-session-id"])
    assert len(by_task) == CLIENTS
    assert all(len(ids) == 1 for ids in by_task.values())


@pytest.mark.parametrize("at", [0, 13, len(SYSTEM) - 1])
def test_tenants_whose_system_prompts_differ_anywhere_never_share_a_conversation(at: int) -> None:
    """Three tenants run the same script (the same messages, one after another); their
    system prompts differ in one character, at the start, after 13, at the end."""
    conversations = LiveConversations(Clock())
    tenants = [SYSTEM[:at] + letter + SYSTEM[at + 1 :] for letter in "XYZ"]
    homes: dict[str, set[str]] = defaultdict(set)
    for system in tenants:
        for step in range(3):
            found = place(conversations, messages_body("Summarise the log.", step, system))
            assert found.check is None or found.check.bust is None
            homes[system].add(found.conversation.id)
    assert all(len(ids) == 1 for ids in homes.values())
    assert len(set.union(*homes.values())) == 3


def test_codex_turn_ids_never_make_a_bust() -> None:
    """Codex sends `client_metadata.turn_id`, new every turn; the model never reads it."""
    conversations = LiveConversations(Clock())
    items: list[Any] = [{"role": "user", "content": "Fix the parser."}]
    for turn in range(3):
        body = {
            "model": "gpt-5.6",
            "instructions": SYSTEM,
            "input": list(items),
            "prompt_cache_key": "codex-session",
            "client_metadata": {"turn_id": f"turn-{turn}"},
        }
        found = place(conversations, body, RESPONSES_FORMAT)
        assert found.check is None or found.check.bust is None
        items += [
            {"type": "function_call", "call_id": f"c{turn}", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{turn}", "output": "ok"},
        ]
    assert len(conversations) == 1


def claude_code(system: str, task: str, steps: int) -> dict[str, Any]:
    """A Claude Code request: every request of a session and its sub-agents carries the same
    `metadata.user_id` (device, account and session ids)."""
    user_id = json.dumps({"device_id": "d" * 64, "session_id": "5e55-10n"})
    return messages_body(task, steps, system, metadata={"user_id": user_id})


def test_sub_agents_are_one_lineage_with_their_parent_and_no_bust() -> None:
    conversations = LiveConversations(Clock())
    agent = "You are a sub-agent: search the code and report what you find."
    parent = [place(conversations, claude_code(SYSTEM, "Refactor the parser.", 0))]
    parent.append(place(conversations, claude_code(SYSTEM, "Refactor the parser.", 1)))
    first = [place(conversations, claude_code(agent, "Find every caller of parse().", 0))]
    second = [place(conversations, claude_code(agent, "List the parser's tests.", 0))]
    for step in (1, 2):  # the two sub-agents and the parent interleave
        first.append(
            place(conversations, claude_code(agent, "Find every caller of parse().", step))
        )
        second.append(place(conversations, claude_code(agent, "List the parser's tests.", step)))
    parent.append(place(conversations, claude_code(SYSTEM, "Refactor the parser.", 2)))
    everything = [*parent, *first, *second]
    assert all(p.check is None or p.check.bust is None for p in everything)
    ids = [{p.conversation.id for p in line} for line in (parent, first, second)]
    assert all(len(found) == 1 for found in ids)
    root, one, two = (found.pop() for found in ids)
    assert len({root, one, two}) == 3
    page = {c.id: c for c in conversations.snapshot()}
    assert {page[i].lineage for i in (root, one, two)} == {root}
    assert (page[root].parent, page[one].parent, page[two].parent) == (None, root, root)


def test_the_status_page_shows_keys_hashed(wire_server: WireServer) -> None:
    wire_server.serve(Captured())
    with Proxy(wire_server.url, None, fixes=Fixes()).start() as proxy:
        sdk = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0)
        sdk.messages.create(**claude_code(SYSTEM, "Refactor the parser.", 0))
        page = proxy.status()
    (row,) = page["by_conversation"]
    assert row["key"].startswith("metadata.user_id#")
    assert "5e55-10n" not in json.dumps(page)


def test_a_prompt_rebuilt_with_its_iteration_number_first_is_its_conversations_bust() -> None:
    """A loop that writes its iteration number first and the history after: no request
    extends the one before, yet each carries it on; the guard names the counter."""
    conversations = LiveConversations(Clock())
    history = ""
    found = []
    for n in range(5):
        history += f" Step {n}: read the file and found {n} more callers of parse()."
        prompt = f"Iteration {n}. Task: fix the parser. History:{history}"
        body = {"model": "gpt-5", "messages": [{"role": "user", "content": prompt}]}
        found.append(place(conversations, body, CHAT))
    assert len(conversations) == 1
    kinds = [p.check.bust.kind for p in found[1:] if p.check and p.check.bust]
    assert kinds == ["volatile-value"] * 4


def test_a_summary_in_place_of_the_oldest_turns_is_its_conversations_bust() -> None:
    conversations = LiveConversations(Clock())
    steps = [
        {"role": "user" if n % 2 else "assistant", "content": f"turn {n}: " + "detail " * 40}
        for n in range(12)
    ]
    opening = [{"role": "system", "content": "You are terse."}]
    task = {"role": "user", "content": "Migrate the database."}
    place(conversations, {"model": "gpt-5", "messages": [*opening, task, *steps]}, CHAT)
    summary = {"role": "user", "content": "Summary of the earlier turns: migrated 3 tables."}
    later = [*opening, summary, *steps[8:], {"role": "assistant", "content": "next " * 10}]
    found = place(conversations, {"model": "gpt-5", "messages": later}, CHAT)
    assert len(conversations) == 1
    assert found.check is not None
    assert found.check.bust is not None


def test_tools_found_mid_conversation_are_its_bust_not_a_new_one() -> None:
    """A framework that adds the tools a search found, without a key: the same system
    prompt, the messages extended; the tools are no part of who the conversation is."""
    conversations = LiveConversations(Clock())
    first = place(conversations, messages_body("Refactor the parser.", 1))
    more = messages_body("Refactor the parser.", 2)
    more["tools"] = [*TOOLS, {"name": "grep", "input_schema": {"type": "object"}}]
    found = place(conversations, more)
    assert found.conversation is first.conversation
    assert found.check is not None
    assert found.check.bust is not None
    assert found.check.bust.kind == "tools-changed"


def test_a_system_prompt_changed_under_a_key_is_its_bust_where_the_messages_extend() -> None:
    """Claude Code writes the date into its system prompt: past midnight the next request
    extends the session's messages under a system prompt of its own; the key and the
    extension say it is the same conversation, and the guard names the change."""
    conversations = LiveConversations(Clock())
    first = place(conversations, claude_code(SYSTEM + " Today is 2026-11-01.", "Fix it.", 1))
    later = place(conversations, claude_code(SYSTEM + " Today is 2026-11-02.", "Fix it.", 2))
    assert later.conversation is first.conversation
    assert later.check is not None
    assert later.check.bust is not None
    assert later.check.bust.section == "system"
