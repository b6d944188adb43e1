"""Disclosure: the 120-tool session of issue 9 (124 tools registered: 120 in the catalog,
3 core, `run_code`) priced six ways on real wire formats.

The same 40-request plan (`benchmarks.toolbox_session`: 6 catalog tools discovered at
different steps, then used through the gateway and from `run_code`) is run by warmloop's
Agent on the ScriptedModel under six ways of disclosing tools, every request rendered by the
provider's own renderer and priced with the cache simulator and the dated prices
(`benchmarks.session_costs`):

- warmloop: core tools + `search_tools`/`call_tool`/`run_code` in a byte-stable tool block,
  each search's best match taught once by an announcement in the transcript;
- optimum: the same, but a search teaches in full exactly the tools the plan goes on to use
  (it knows the future): the fewest descriptions any gateway can carry;
- native deferred: the provider's own tool search (Anthropic `tool_search_tool_bm25` with
  `defer_loading`; OpenAI Responses hosted `tool_search`): all 120 tools in the request,
  deferred. Billed as the providers document it: Anthropic leaves deferred tools out of the
  context and expands each `tool_reference` a search returns into the full definition in
  place; OpenAI still shows each deferred function's name and description up front and loads
  its parameter schema where the search output stands. A search happens inside the model's
  response (no round trip), so this arm makes fewer requests;
- all schemas (cached): every tool in the tool block on every request, no search;
- re-sent each step: the gateway, but every tool a search found has its full schema sent
  again after every step (what a loop that re-lists its discovered tools each turn does);
- tool block grows: search as warmloop does, but each discovered tool is added to the tool
  block and called by name (dynamic tool binding); every discovery rewrites the start of
  the prompt, so the cache is lost from the top.

Every arm performs the same tool uses and all of them succeed (checked). A second table
says where each arm's dollars go (`benchmarks.toolbox_dollars`: tool definitions, searches,
the rest of the conversation, output, and the part paid for re-reads) and which tools it
taught in full, the optimum's choices beside warmloop's.

    python -m benchmarks toolbox
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.session_costs import (
    ANTHROPIC_RULES,
    OPENAI_RULES,
    RecordingModel,
    Rules,
    blocks,
    dollars,
)
from benchmarks.toolbox_dollars import PARTS, Spend, labelled, spend
from benchmarks.toolbox_session import CORE, TARGETS, Arm, Step, catalog, plan, reply
from warmloop import (
    Agent,
    AssistantTurn,
    Notice,
    Toolbox,
    ToolCall,
    ToolResult,
    ToolSpec,
    Transcript,
)
from warmloop.protocols.react_text import call_id
from warmloop.providers.anthropic.record import LAYOUT as ANTHROPIC
from warmloop.providers.base import Rendered
from warmloop.providers.scripted import Script
from warmloop.simulate import SimRequest, simulate
from warmloop.tools.announce import announcement
from warmloop.tools.invoke import Execution
from warmloop.tools.search import Index
from warmloop.tools.toolbox import OWN_CAP, Cap, Disclosure

RULES = (ANTHROPIC_RULES, OPENAI_RULES)
ARMS: tuple[tuple[Arm, str], ...] = (
    ("gateway", "warmloop disclosure"),
    ("ideal", "optimum: only the tools used taught"),
    ("native", "native deferred loading"),
    ("all", "all 120 schemas (cached)"),
    ("resend", "discovered schemas re-sent each step"),
    ("grow", "discovered tools added to the tool block"),
)
SECONDS_BETWEEN_REQUESTS = 10.0


class Resending(Disclosure):
    """The gateway, but after every step the full schema of every tool its searches found so
    far is sent again (the baseline this benchmark measures warmloop's teach-once against)."""

    def announcements(self) -> tuple[Notice, ...]:
        discovered = sorted(self.callable)
        self.known.update(self.found)
        self.found = []
        if not discovered:
            return ()
        specs = [e.spec for n in discovered if (e := self.box.catalog.get(n))]
        return (announcement(specs, "call_tool", "run_code"),)


class ResendingToolbox(Toolbox):
    def conversation(self) -> Disclosure:
        return Resending(self)


class Teaching(Disclosure):
    """The optimum's choice: the gateway, but a search teaches in full only the tools the
    plan goes on to use (it knows the future), each once, after the step that found it."""

    def announcements(self) -> tuple[Notice, ...]:
        self.found = [n for n in self.found if n in TARGETS]
        return super().announcements()


class TeachingToolbox(Toolbox):
    def conversation(self) -> Disclosure:
        return Teaching(self)


class Growing(Disclosure):
    """Search as warmloop does, but a discovered tool is called by its own name (it joins
    the tool block, see `tool_block`) and nothing is announced."""

    box: GrowingToolbox

    def step(
        self,
        transcript: Transcript,
        *,
        max_result_chars: Cap = OWN_CAP,
        errors_to_model: bool = False,
    ) -> Disclosure:
        super().step(transcript, max_result_chars=max_result_chars, errors_to_model=errors_to_model)
        self.known |= self.box.bound  # bound tools are the (remembered) discovered ones
        return self

    async def run(self, call: ToolCall) -> Execution:
        if call.name in self.box.catalog and call.name in self.box.bound:
            return await self._catalog_call(call, call.name, json.loads(call.arguments))
        execution = await super().run(call)
        self.box.bound.update(self.found)
        return execution

    def announcements(self) -> tuple[Notice, ...]:
        self.found = []
        return ()


class GrowingToolbox(Toolbox):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bound: set[str] = set()

    def conversation(self) -> Disclosure:
        return Growing(self)


_LISTED = re.compile(r"^- (\w+)\(", re.MULTILINE)


def tool_block(arm: Arm, transcript: Transcript, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """The tool block of a request: fixed, except in the growing arm, where every tool the
    transcript's searches found so far has joined it, in the order found."""
    if arm != "grow":
        return list(tools)
    specs = {t.name: t.spec for t in catalog()}
    found: list[str] = []
    for message in transcript:
        if isinstance(message, ToolResult) and message.name == "search_tools":
            found += [n for n in _LISTED.findall(message.content) if n not in found]
    return [*tools, *(specs[n] for n in found)]


def toolbox(arm: Arm) -> Toolbox:
    if arm == "grow":
        return GrowingToolbox(CORE, catalog(), code=True)
    if arm == "all":
        return Toolbox([*CORE, *catalog()], code=True)
    if arm == "resend":
        return ResendingToolbox(CORE, catalog(), code=True)
    if arm == "ideal":
        return TeachingToolbox(CORE, catalog(), code=True)
    return Toolbox(CORE, catalog(), code=True, native=arm == "native")


def native_turn(search: Step, use: Step, index: Index, specs: dict[str, ToolSpec]) -> Script:
    """The model's response in the native arm: the provider's server-side search (as each
    provider returns it, in the raw blocks the renderer echoes) and the call it leads to."""
    query = search.arguments["query"]
    found = [name for name, _ in index.rank(query, 5)]
    arguments = json.dumps(use.arguments, ensure_ascii=False)

    def turn(rendered: Rendered) -> AssistantTurn:
        cid = call_id(rendered.turn_index)
        server = f"srvtoolu_{rendered.turn_index}"
        anthropic = [
            {
                "type": "server_tool_use",
                "id": server,
                "name": "tool_search_tool_bm25",
                "input": {"query": query},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": server,
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": n} for n in found],
                },
            },
            {"type": "tool_use", "id": cid, "name": use.name, "input": use.arguments},
        ]
        openai = [
            {
                "type": "tool_search_call",
                "id": f"ts_{cid}",
                "call_id": f"tsc_{cid}",
                "execution": "server",
                "status": "completed",
                "arguments": {"query": query},
            },
            {
                "type": "tool_search_output",
                "id": f"tso_{cid}",
                "call_id": f"tsc_{cid}",
                "execution": "server",
                "status": "completed",
                "tools": [
                    {
                        "type": "function",
                        "name": n,
                        "description": specs[n].description,
                        "parameters": specs[n].parameters,
                        "strict": False,
                    }
                    for n in found
                ],
            },
            {"type": "function_call", "call_id": cid, "name": use.name, "arguments": arguments},
        ]
        return AssistantTurn(
            tool_calls=(ToolCall(cid, use.name, arguments),),
            provider_details={"anthropic": {"content": anthropic}, "openai_responses": openai},
        )

    return turn


def script(arm: Arm) -> list[Script]:
    """The replies for one arm, from the shared plan."""
    steps = plan()
    tools = catalog()
    index = Index(t.spec for t in tools)
    specs = {t.name: t.spec for t in tools}
    out: list[Script] = []
    for k, step in enumerate(steps):
        if arm == "native" and step.kind == "search":
            continue
        if arm == "native" and k and steps[k - 1].kind == "search":
            out.append(native_turn(steps[k - 1], step, index, specs))
            continue
        item = reply("gateway" if arm == "ideal" else arm, step)
        if item is not None:
            out.append(item)
    return out


def billed(payload: dict[str, Any], rules: Rules, specs: dict[str, ToolSpec]) -> dict[str, Any]:
    """What a native-search request puts in the model's context, as the provider documents
    it (see the module docstring); other requests are billed as sent."""
    payload = copy.deepcopy(payload)
    if rules.layout is ANTHROPIC:
        payload["tools"] = [t for t in payload.get("tools", []) if not t.get("defer_loading")]
        for message in payload["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_search_tool_result":
                    for ref in block["content"]["tool_references"]:
                        spec = specs[ref["tool_name"]]
                        ref["definition"] = {
                            "name": spec.name,
                            "description": spec.description,
                            "input_schema": spec.parameters,
                        }
        return payload
    payload["tools"] = [
        {k: v for k, v in t.items() if k not in ("parameters", "strict")}
        if t.get("defer_loading")
        else t
        for t in payload.get("tools", [])
    ]
    return payload


@dataclass(frozen=True)
class Row:
    """One arm under one provider's rules."""

    arm: str
    provider: str
    requests: int
    input_tokens: int
    dollars: float
    spend: Spend
    taught: tuple[str, ...]


def run_arm(arm: Arm) -> tuple[list[Transcript], tuple[ToolSpec, ...]]:
    """Run the plan (two runs: the task and its follow-up) and return what was sent."""
    model = RecordingModel(script(arm), name=f"toolbox-{arm}")
    agent = Agent(model, tools=toolbox(arm), max_steps=30, maintenance=None)
    first = agent.run_sync("Sort out the delayed refunds.")
    follow = agent.run_sync("Now the rest.", history=first.transcript)
    results = [m for m in follow.transcript if isinstance(m, ToolResult)]
    failed = [r.content[:200] for r in results if r.is_error]
    assert not failed, f"{arm}: tool calls failed: {failed}"
    uses = sorted(
        json.loads(c.arguments)["name"] if c.name == "call_tool" else c.name
        for m in follow.transcript
        if isinstance(m, AssistantTurn)
        for c in m.tool_calls
        if c.name not in ("search_tools", "run_code", "submit")
    )
    expected = sorted(s.name for s in plan() if s.kind in ("use", "core"))
    assert uses == expected, f"{arm}: the tool uses differ from the plan"
    return model.sent, agent.tool_specs


def price_arm(arm: Arm, sent: Sequence[Transcript], tools: Sequence[ToolSpec]) -> list[Row]:
    specs = {t.name: t.spec for t in catalog()}
    taught = tuple(t.name for m in sent[-1] if isinstance(m, Notice) for t in m.tools)
    rows = []
    for rules in RULES:
        requests, parts = [], []
        for k, transcript in enumerate(sent):
            payload = rules.render(transcript, tool_block(arm, transcript, tools))
            if arm == "native":
                payload = billed(payload, rules, specs)
            cut = blocks(payload, rules)
            requests.append(SimRequest(k * SECONDS_BETWEEN_REQUESTS, cut, 100))
            parts.append(labelled(payload, rules, cut))
        outcomes = simulate(requests, rules.profile, rules.prices)
        tokens = sum(b.tokens for r in requests for b in r.blocks)
        paid = spend(requests, parts, outcomes, rules)
        rows.append(Row(arm, rules.name, len(requests), tokens, dollars(outcomes), paid, taught))
    return rows


def measure() -> list[Row]:
    """Every arm under every provider's rules."""
    rows: list[Row] = []
    for arm, _ in ARMS:
        sent, tools = run_arm(arm)
        rows += price_arm(arm, sent, tools)
    return rows


def table(rows: Sequence[Row]) -> str:
    """A markdown table: each arm's cost also as a share of sending all schemas (cached)."""
    names: dict[str, str] = dict(ARMS)
    base = {r.provider: r.dollars for r in rows if r.arm == "all"}
    lines = [
        "| disclosure | provider | requests | input tokens | cost $ | vs all schemas cached |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        share = r.dollars / base[r.provider]
        lines.append(
            f"| {names[r.arm]} | {r.provider} | {r.requests} | {r.input_tokens:,} | "
            f"{r.dollars:.4f} | {share:.2f}x |"
        )
    return "\n".join(lines)


def where(rows: Sequence[Row]) -> str:
    """Where each arm's dollars go, and the tools it taught in full (announced)."""
    names: dict[str, str] = dict(ARMS)
    head = " | ".join(PARTS)
    lines = [
        f"| disclosure | provider | {head} | of which re-reads | tools taught in full |",
        "|---|---|" + "---|" * len(PARTS) + "---|---|",
    ]
    for r in rows:
        cells = " | ".join(f"{r.spend.dollars[p]:.4f}" for p in PARTS)
        distinct = sorted(set(r.taught))
        taught = f"{len(r.taught)} ({len(distinct)} tools)" if r.taught else "-"
        if r.taught and len(r.taught) == len(distinct):
            taught = f"{len(distinct)}: {', '.join(r.taught)}"
        lines.append(
            f"| {names[r.arm]} | {r.provider} | {cells} | {r.spend.rereads:.4f} | {taught} |"
        )
    return "\n".join(lines)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    size = sum(len(json.dumps(t.spec.full())) for t in catalog()) / 4 / len(catalog())
    print(
        f"120-tool catalog, about {size:.0f} tokens a tool (Anthropic's tool search guide: "
        "a five-server setup of 58 tools is about 55k tokens)\n"
    )
    rows = measure()
    print(table(rows))
    print("\nWhere the dollars go ($; the tool block and announcements are tool definitions):\n")
    print(where(rows))
    print("\ncommand: python -m benchmarks toolbox")
