"""What warmloop reads of a Gemini exchange, for its record: its usage object
(`usageMetadata`, camelCase over REST, snake_case from the SDK) and whether a body or a
usage object has its shape."""

from __future__ import annotations

from collections.abc import Mapping

from warmloop.facts.usage import Usage, count_at


def read_usage(raw: Mapping[str, object]) -> Usage:
    """Gemini's `usageMetadata` (camelCase over REST, snake_case from the SDK)."""
    camel = "promptTokenCount" in raw
    prompt = count_at(raw, "promptTokenCount" if camel else "prompt_token_count")
    cached = count_at(raw, "cachedContentTokenCount" if camel else "cached_content_token_count")
    output = count_at(raw, "candidatesTokenCount" if camel else "candidates_token_count")
    thoughts = count_at(raw, "thoughtsTokenCount" if camel else "thoughts_token_count")
    # Tool-use prompt tokens are input too, as the provider's own parser counts them.
    tool_use = count_at(raw, "toolUsePromptTokenCount" if camel else "tool_use_prompt_token_count")
    return Usage.of_parts(max(prompt - cached, 0) + tool_use, cached, 0, output + thoughts)


def claims_usage(raw: Mapping[str, object]) -> int:
    """3 for a usage object with Gemini's prompt count, -1 otherwise."""
    return 3 if "promptTokenCount" in raw or "prompt_token_count" in raw else -1


def detect(body: Mapping[str, object]) -> int:
    """3 for a body with Gemini's `contents`, -1 otherwise."""
    return 3 if "contents" in body else -1


SERVER_TOOLS = frozenset(
    {
        "google_search",
        "googleSearch",
        "google_search_retrieval",
        "googleSearchRetrieval",
        "code_execution",
        "codeExecution",
        "url_context",
        "urlContext",
        "file_search",
        "fileSearch",
    }
)
"""Gemini's built-in tools (Grounding with Google Search, code execution, URL context, file
search; the SDK's snake_case and the REST body's camelCase), run by the API: what they fetch
or compute is billed as the request's input."""


def server_tools(tools: object) -> bool:
    """Whether a Gemini request's tools include a built-in one (`SERVER_TOOLS`)."""
    return isinstance(tools, list) and any(
        isinstance(tool, Mapping) and not SERVER_TOOLS.isdisjoint(tool) for tool in tools
    )
