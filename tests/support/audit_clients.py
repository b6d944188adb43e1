"""Agent clients written on the official SDKs, each breaking the prompt cache one way.

Each runs five requests against `base` (the recorder), appends the model's tool call and a
realistic tool result per step, and moves the test clock a few seconds per step. The
docstring of each says which request is the first to move the prefix.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from tests.support.fake_api import Clock

STEPS = 5
SYSTEM = (
    "You are a careful coding agent working in a Python repository. Read files before you "
    "change them, run the tests after every change, and report what you did. "
) * 12
NAMES = ("read_file", "search", "run_tests")
DESCRIPTIONS = {
    "read_file": "Read a file of the repository and return its numbered lines.",
    "search": "Search the repository with a regular expression; returns matching lines.",
    "run_tests": "Run the test suite (or one test file) and return pytest's output.",
}
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def file_listing(path: str) -> str:
    """What `read_file` returns: about 8,000 characters of numbered Python."""
    rows = [
        f"{n:4d}  def handle_{n}(order):  # {path}: the total for region {n % 7}, in cents"
        for n in range(1, 100)
    ]
    return "\n".join(rows)


def chat_tools(names: tuple[str, ...] = NAMES) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": n, "description": DESCRIPTIONS[n], "parameters": SCHEMA},
        }
        for n in names
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    return [{"name": n, "description": DESCRIPTIONS[n], "input_schema": SCHEMA} for n in NAMES]


def chat_loop(base: str, clock: Clock, key: str, *, stream: bool, reorder_at: int = 0) -> None:
    """Chat Completions. Append-only unless `reorder_at`: from that request on the tools come
    in another order (an MCP server reconnected and listed them sorted differently)."""
    # Any: the tests drive the SDKs with plain dicts, as users do; the wire is what counts.
    client: Any = openai.OpenAI(base_url=f"{base}/v1", api_key="test", max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Task for {key}: find why the order total is off."},
    ]
    for k in range(1, STEPS + 1):
        tools = chat_tools(tuple(reversed(NAMES)) if reorder_at and k >= reorder_at else NAMES)
        if stream:
            chunks = client.chat.completions.create(
                model="gpt-5",
                messages=messages,
                tools=tools,
                prompt_cache_key=key,
                stream=True,
                stream_options={"include_usage": True},
            )
            calls: dict[int, dict[str, Any]] = {}
            for chunk in chunks:
                for choice in chunk.choices:
                    for delta in choice.delta.tool_calls or ():
                        call = calls.setdefault(delta.index, {"id": "", "name": "", "args": ""})
                        call["id"] = delta.id or call["id"]
                        if delta.function is not None:
                            call["name"] = delta.function.name or call["name"]
                            call["args"] += delta.function.arguments or ""
            call_id, arguments = calls[0]["id"], calls[0]["args"]
        else:
            reply = client.chat.completions.create(
                model="gpt-5",
                messages=messages,
                tools=tools,
                prompt_cache_key=key,
            )
            tool_call = (reply.choices[0].message.tool_calls or [])[0]
            call_id, arguments = tool_call.id, tool_call.function.arguments
        function = {"name": "read_file", "arguments": arguments}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        path = json.loads(arguments)["path"]
        messages.append({"role": "tool", "tool_call_id": call_id, "content": file_listing(path)})
        clock.advance(4)


def anthropic_loop(base: str, clock: Clock, user: str, *, timestamp: bool, clear: bool) -> None:
    """Anthropic Messages with a top-level cache marker. `timestamp`: the current time is in
    the system prompt (every request from the 2nd moves the prefix; cache diagnostics are
    asked for). `clear`: every tool result but the newest is replaced by a placeholder
    before each request (from the 3rd request on)."""
    client: Any = anthropic.Anthropic(base_url=base, api_key="test", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": f"Task for {user}: fix the total."}]
    previous: str | None = None
    for _ in range(STEPS):
        now = datetime.fromtimestamp(clock(), UTC).isoformat(timespec="seconds")
        system = f"Current time: {now}. {SYSTEM}" if timestamp else SYSTEM
        if clear:
            for message in messages[:-1]:
                for block in message["content"] if isinstance(message["content"], list) else ():
                    if block.get("type") == "tool_result":
                        block["content"] = "[tool result cleared to save context]"
        arguments: dict[str, Any] = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "system": system,
            "tools": anthropic_tools(),
            "messages": messages,
            "metadata": {"user_id": user},
            "cache_control": {"type": "ephemeral"},
        }
        if timestamp:
            arguments["diagnostics"] = {"previous_message_id": previous}
            events = client.messages.create(**arguments, stream=True)
            uses: list[dict[str, Any]] = []
            for event in events:
                if event.type == "message_start":
                    previous = event.message.id
                elif event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    uses.append(
                        {"type": "tool_use", "id": block.id, "name": block.name, "json": ""}
                    )
                elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                    uses[-1]["json"] += event.delta.partial_json
            content = [
                {
                    "type": "tool_use",
                    "id": u["id"],
                    "name": u["name"],
                    "input": json.loads(u["json"]),
                }
                for u in uses
            ]
        else:
            reply = client.messages.create(**arguments)
            content = [block.to_dict(mode="json") for block in reply.content]
        use = content[0]
        messages.append({"role": "assistant", "content": content})
        result = {"type": "tool_result", "tool_use_id": use["id"]}
        result["content"] = file_listing(use["input"]["path"])
        messages.append({"role": "user", "content": [result]})
        clock.advance(4)


def responses_loop(base: str, clock: Clock, key: str) -> None:
    """OpenAI Responses, streamed, stateless with encrypted reasoning; the client keeps only
    the newest reasoning item, so from the 3rd request on an earlier one is dropped."""
    # Any: the tests drive the SDKs with plain dicts, as users do; the wire is what counts.
    client: Any = openai.OpenAI(base_url=f"{base}/v1", api_key="test", max_retries=0)
    tools = [
        {"type": "function", "name": n, "description": DESCRIPTIONS[n], "parameters": SCHEMA}
        for n in NAMES
    ]
    items: list[Any] = [{"role": "user", "content": f"Task for {key}: fix the total."}]
    for _ in range(STEPS):
        events = client.responses.create(
            model="gpt-5",
            input=items,
            tools=tools,
            prompt_cache_key=key,
            store=False,
            include=["reasoning.encrypted_content"],
            stream=True,
        )
        output: list[dict[str, Any]] = []
        for event in events:
            if event.type == "response.completed":
                output = [item.to_dict(mode="json") for item in event.response.output]
        items = [item for item in items if item.get("type") != "reasoning"]  # the bug
        items += output
        call = next(item for item in output if item["type"] == "function_call")
        path = json.loads(call["arguments"])["path"]
        items.append(
            {
                "type": "function_call_output",
                "call_id": call["call_id"],
                "output": file_listing(path),
            }
        )
        clock.advance(4)


def gemini_loop(
    base: str, clock: Clock, task: str, *, stream: bool, summarise_at: int = 0, idle_at: int = 0
) -> None:
    """Gemini generateContent (no routing key). `summarise_at`: before that request, every
    turn after the task but the newest exchange is replaced by a summary. `idle_at`: the
    client waits ten minutes before that request."""
    client: Any = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=base))
    declarations = [
        types.FunctionDeclaration(
            name=n, description=DESCRIPTIONS[n], parameters_json_schema=SCHEMA
        )
        for n in NAMES
    ]
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM, tools=[types.Tool(function_declarations=declarations)]
    )
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=task)])]
    for k in range(1, STEPS + 1):
        if k == summarise_at:
            summary = types.Part(text="Summary of the work so far: read three modules; no bug yet.")
            contents = [contents[0], types.Content(role="user", parts=[summary]), *contents[-2:]]
        if k == idle_at:
            clock.advance(600)
        if stream:
            parts = []
            for chunk in client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents, config=config
            ):
                for candidate in chunk.candidates or ():
                    parts += list(candidate.content.parts or ()) if candidate.content else []
        else:
            reply = client.models.generate_content(
                model="gemini-2.5-flash", contents=contents, config=config
            )
            content = (reply.candidates or [])[0].content
            parts = list(content.parts or ()) if content else []
        call = next(p.function_call for p in parts if p.function_call is not None)
        contents.append(types.Content(role="model", parts=parts))
        path = str((call.args or {})["path"])
        response = types.Part.from_function_response(
            name=str(call.name), response={"output": file_listing(path)}
        )
        contents.append(types.Content(role="user", parts=[response]))
        clock.advance(4)
