"""A whole reply of each wire, said again as that wire's documented server-sent events, so
a streamed request is answered with exactly what the non-streamed one gets.

- Anthropic, "Streaming Messages" (https://docs.claude.com/en/docs/build-with-claude/streaming,
  "Event types"): `message_start` (the message with empty content and its usage, cache
  counters included), per block `content_block_start` / `content_block_delta` (`text_delta`,
  `input_json_delta`) / `content_block_stop`, then `message_delta` (stop reason, cumulative
  output tokens) and `message_stop`.
- OpenAI Responses, "Streaming events"
  (https://platform.openai.com/docs/api-reference/responses-streaming): `response.created`,
  per item `response.output_item.added`, `response.output_text.delta` or
  `response.function_call_arguments.delta`, `response.output_item.done`, and
  `response.completed` carrying the whole response with its `usage`.
- Chat Completions, "The chat completion chunk object"
  (https://platform.openai.com/docs/api-reference/chat-streaming) and `stream_options`
  (https://platform.openai.com/docs/api-reference/chat/create#chat-create-stream_options):
  `data:` chunks with `choices[].delta` (content, then `tool_calls` by index, the id and
  name in the first), a chunk with `finish_reason`, the usage chunk (`choices: []`) that
  `include_usage` asks for, and `data: [DONE]`.
- Gemini, `models.streamGenerateContent`
  (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent) with
  `alt=sse`: `data:` GenerateContentResponse chunks, the last with `finishReason` and
  `usageMetadata`; no end marker.

Each text and each argument string is cut in two pieces, so a client that keeps only the
last piece is caught.
"""

from __future__ import annotations

import json
from typing import Any


def event_stream(path: str, whole: dict[str, Any]) -> bytes:
    """`whole` (a reply in the wire of `path`) as that wire's server-sent events."""
    if path.endswith("/messages"):
        return _sse(anthropic_events(whole), named=True)
    if path.endswith("/responses"):
        return _sse(responses_events(whole), named=True)
    if path.endswith("/chat/completions"):
        return _sse(chat_chunks(whole), named=False) + b"data: [DONE]\n\n"
    if path.endswith(":streamGenerateContent"):
        return _sse(gemini_chunks(whole), named=False)
    raise AssertionError(f"no streamed wire is served at {path}")


def halves(text: str) -> list[str]:
    """`text` in two pieces (one when too short to cut)."""
    cut = len(text) // 2
    return [text[:cut], text[cut:]] if cut else [text]


def _sse(events: list[dict[str, Any]], *, named: bool) -> bytes:
    lines = []
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        lines.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(lines).encode()


def anthropic_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    usage = message["usage"]
    opening = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    opening["usage"] = {**usage, "output_tokens": 1}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": opening}]
    for index, block in enumerate(message["content"]):
        start: dict[str, Any]
        if block["type"] == "text":
            start, pieces = {"type": "text", "text": ""}, halves(block["text"])
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            start = {**block, "input": {}}
            pieces = halves(json.dumps(block["input"]))
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    final = {"output_tokens": usage["output_tokens"]}
    events.append({"type": "message_delta", "delta": stop, "usage": final})
    events.append({"type": "message_stop"})
    return events


def responses_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    created = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": created}]
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "content": []},
                }
            )
            events += [
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": piece,
                }
                for piece in halves(text)
            ]
        else:
            added = {**item, "arguments": "", "status": "in_progress"}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": added}
            )
            events += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "delta": piece,
                }
                for piece in halves(item["arguments"])
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def chat_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    head = {key: completion[key] for key in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in halves(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        first, *rest = halves(function["arguments"])
        opened = {"name": function["name"], "arguments": first}
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call["id"], "type": "function", "function": opened}
                    ]
                }
            )
        )
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in rest
        ]
    chunks.append(chunk({}, choice["finish_reason"]))
    chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


def gemini_chunks(response: dict[str, Any]) -> list[dict[str, Any]]:
    candidate = response["candidates"][0]
    chunks = []
    for part in candidate["content"]["parts"]:
        pieces = [{"text": piece} for piece in halves(part["text"])] if "text" in part else [part]
        for piece in pieces:
            content = {"role": "model", "parts": [piece]}
            chunks.append(
                {
                    "candidates": [{"content": content, "index": 0}],
                    "modelVersion": response["modelVersion"],
                    "responseId": response["responseId"],
                }
            )
    last = chunks[-1]
    last["candidates"][0]["finishReason"] = candidate["finishReason"]
    last["usageMetadata"] = response["usageMetadata"]
    return chunks
