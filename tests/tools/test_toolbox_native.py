"""Provider-native deferred loading behind the same Toolbox API, and the local grammar
reaching discovered tools.

Native: Anthropic "Tool search tool" (a `tool_search_tool_bm25_20251119` tool, catalog tools
with `defer_loading: true`, the search's `tool_reference`s echoed in the assistant turn);
OpenAI "Tools > Tool search" (a hosted `{"type": "tool_search"}` tool and deferred
functions). The catalog is sent deferred in name order and a catalog tool the provider
disclosed is called by its own name.
"""

from __future__ import annotations

import anthropic
import pytest
from openai import AsyncOpenAI

from benchmarks.toolbox_session import CORE, catalog
from warmloop import Agent, ScriptedModel, call
from warmloop.messages import (
    AnnouncedTool,
    AssistantTurn,
    Notice,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.protocols.grammar import action_grammar, gateway_alternatives
from warmloop.providers.anthropic.model import AnthropicModel
from warmloop.providers.local.chat_template import render_gemma
from warmloop.providers.openai.responses import OpenAIResponsesModel
from warmloop.tools.gateway import GATEWAY
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript


def native() -> Toolbox:
    return Toolbox(CORE, reversed(catalog()), native=True)


def test_anthropic_gets_the_tool_search_tool_and_the_catalog_deferred() -> None:
    model = AnthropicModel("claude-sonnet-4-6", client=anthropic.AsyncAnthropic(api_key="x"))
    tools = model.render(Transcript([SystemText("s"), UserText("u")]), native().specs())
    block = tools.payload["tools"]
    assert block[0] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert [t.get("defer_loading", False) for t in block[1:4]] == [False] * 3
    deferred = block[4:]
    assert len(deferred) == 120
    assert all(t["defer_loading"] is True for t in deferred)
    assert [t["name"] for t in deferred] == sorted(t["name"] for t in deferred)


def test_openai_responses_gets_hosted_tool_search_and_deferred_functions() -> None:
    model = OpenAIResponsesModel("gpt-5.4", client=AsyncOpenAI(api_key="x"))
    rendered = model.render(Transcript([SystemText("s"), UserText("u")]), native().specs())
    block = rendered.payload["tools"]
    assert block[0] == {"type": "tool_search"}
    assert sum(t.get("defer_loading", False) for t in block) == 120


def test_a_natively_disclosed_tool_is_called_by_its_own_name_and_validated() -> None:
    model = ScriptedModel(
        [
            call("get_invoice", id="inv_1"),
            call("get_invoice", number=3),
            call("submit", answer="x"),
        ]
    )
    run = Agent(model, tools=native()).run_sync("Get the invoice.")
    good, bad, _ = (m for m in run.transcript if isinstance(m, ToolResult))
    assert not good.is_error
    assert '"tool": "get_invoice"' in good.content
    assert bad.is_error
    assert "Invalid arguments for get_invoice" in bad.content


def test_the_local_grammar_calls_announced_tools_through_the_gateway_with_their_schema() -> None:
    pytest.importorskip("llama_cpp")
    box = Toolbox(CORE, catalog())
    spec = next(t.spec for t in catalog() if t.name == "get_invoice")
    schema = '{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}'
    notice = Notice("Discovered tool:", tools=(AnnouncedTool("get_invoice", "Get it.", schema),))
    step = AssistantTurn(
        text='Thought: look\nAction: {"tool": "search_tools", "arguments": {"query": "i"}}',
        tool_calls=(ToolCall("call_0_0", "search_tools", '{"query":"i"}'),),
    )
    found = ToolResult("call_0_0", "search_tools", "1 match")
    before = Transcript([SystemText("s"), UserText("u"), step, found])
    after = Transcript([*before, notice])
    first, second = render_gemma(before, box.specs()), render_gemma(after, box.specs())
    assert second.payload.turns[0] == first.payload.turns[0]  # message 0 never changes
    allowed = second.payload.allowed_tools()
    gateways = [t for t in allowed if t.name == GATEWAY]
    assert len(gateways) == 1
    assert gateways[0].parameters["properties"]["name"] == {"const": "get_invoice"}
    assert gateways[0].parameters["properties"]["arguments"]["required"] == ["id"]
    grammar = action_grammar(allowed)
    assert '"\\"get_invoice\\""' in grammar
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    assert llama_grammar.LlamaGrammar.from_string(grammar, verbose=False) is not None
    # Before any announcement the gateway is no alternative: a call through it could only fail.
    assert GATEWAY not in [t.name for t in gateway_alternatives(box.specs(), [])]
    assert GATEWAY in [t.name for t in first.payload.tools]
    assert spec.name == "get_invoice"
