"""Chat templates of the embedded models, as pure functions: transcript -> prompt text/tokens.

A template wraps each turn in a start marker, a role line and an end marker: Gemma writes
`<start_of_turn>user\\n...<end_of_turn>\\n` and has no system role (system text joins the
first user turn, as Gemma's own template does); ChatML (SmolLM2, Qwen) writes
`<|im_start|>system\\n...<|im_end|>\\n`. Rendering ends with the open model turn. Markers
are special tokens; text is never parsed for specials, and a model turn is tokenised as
the ids the engine generated for it, so each request is a token prefix extension of the
previous one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from warmloop.errors import ConfigurationError
from warmloop.messages import AssistantTurn, Notice, UserText
from warmloop.protocols import react_text
from warmloop.protocols.fresh import NOTHING_SPENT, Spent, spent
from warmloop.protocols.grammar import gateway_alternatives
from warmloop.providers.base import Rendered
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript
from warmloop.wire.stream import WireStream

DETAILS_KEY = "local"
"""`AssistantTurn.provider_details[DETAILS_KEY]["tokens"]`: the generated token ids."""


@dataclass(frozen=True)
class ChatTemplate:
    """How one model family marks turns. `roles` maps the protocol's roles to the
    template's; a template without a "system" role merges system text into the next user
    turn. `bos` is the text of the beginning-of-sequence token ("" when none is added)."""

    name: str
    bos: str
    start: str
    end: str
    roles: Mapping[react_text.Role, str]

    def header(self, role: str) -> str:
        """The opening of a turn."""
        return f"{self.start}{role}\n"

    @property
    def model_role(self) -> str:
        """The role name of the model's own turns."""
        return self.roles["assistant"]


GEMMA = ChatTemplate(
    "gemma", "<bos>", "<start_of_turn>", "<end_of_turn>", {"user": "user", "assistant": "model"}
)
CHATML = ChatTemplate(
    "chatml",
    "",
    "<|im_start|>",
    "<|im_end|>",
    {"system": "system", "user": "user", "assistant": "assistant"},
)


@dataclass(frozen=True)
class TemplateTurn:
    """One turn; `tokens` are the ids the engine generated for a model turn, if known."""

    role: str
    text: str
    tokens: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TemplatePrompt:
    """A rendered local request: the turns before the open model turn, the tools, and
    `only_tool`, the one tool the newest message allows (the grammar narrows to it)."""

    turns: tuple[TemplateTurn, ...]
    tools: tuple[ToolSpec, ...]
    only_tool: str = ""
    system: str | None = None
    """The opening system text, at the start of turn 0 (its own section of the stream)."""
    template: ChatTemplate = GEMMA
    spent: Spent = NOTHING_SPENT
    """Calls that can tell the model nothing new; the grammar does not offer them."""
    announced: tuple[ToolSpec, ...] = ()
    """Tools the conversation's notices announced: the grammar calls them through the
    gateway with their own argument schemas (the prompt's message 0 never changes)."""
    sampling: tuple[tuple[str, Any], ...] = ()
    """The model settings the engine samples this step with (`max_tokens`, `stop`, `seed`,
    `temperature`, `top_p`), as (name, value) pairs: they go to the sampler, never into
    the prompt's text or tokens, so the KV prefix a setting meets is the same."""

    def with_setting(self, path: tuple[str, ...], value: Any) -> TemplatePrompt:
        """This prompt sampled with `value` for the setting at `path` (one name: the
        local record's `Place`s); the turns, and so the tokens, are unchanged."""
        if len(path) != 1:
            raise ConfigurationError(f"a local prompt keeps settings by one name, not {path!r}")
        if isinstance(value, list):
            value = tuple(value)  # the prompt stays immutable (a stop list)
        kept = tuple((name, held) for name, held in self.sampling if name != path[0])
        return replace(self, sampling=(*kept, (path[0], value)))

    def allowed_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the grammar offers for this step."""
        narrowed = tuple(t for t in self.tools if t.name == self.only_tool)
        return narrowed or gateway_alternatives(self.tools, self.announced)

    def grammar_spent(self) -> Spent:
        """What the grammar leaves out: nothing when the step must call one tool."""
        return NOTHING_SPENT if self.only_tool else self.spent


def generated_tokens(turn: AssistantTurn) -> tuple[int, ...] | None:
    """The token ids a local engine generated for `turn` (kept in its provider details)."""
    found = turn.provider_details.get(DETAILS_KEY, {}).get("tokens")
    if isinstance(found, list) and all(isinstance(t, int) for t in found):
        return tuple(found)
    return None


def template_turns(
    pieces: Sequence[tuple[react_text.Role, str]],
    template: ChatTemplate,
    echoes: Sequence[tuple[int, ...] | None] = (),
) -> list[TemplateTurn]:
    """The protocol's pieces as the template's turns. A role the template lacks (system)
    joins the user turn after it, with a blank line between; `echoes` are the model
    turns' generated ids, in order."""
    out: list[TemplateTurn] = []
    pending = list(echoes)
    for role, text in pieces:
        if role == "assistant":
            out.append(TemplateTurn(template.model_role, text, pending.pop(0) if pending else None))
            continue
        name = template.roles.get(role, template.roles["user"])
        if out and out[-1].role == name:
            out[-1] = TemplateTurn(name, f"{out[-1].text}\n\n{text}")
        else:
            out.append(TemplateTurn(name, text))
    return out


def prompt_stream(prompt: TemplatePrompt) -> WireStream:
    """The template text of `prompt` as a canonical stream: one piece per turn (`message
    <i>`), the open model turn last; the system text (with the taught protocol) is its own
    `system` section, the whole system turn where the template has one, so the guard can
    name a changed system prompt. This is the text that is tokenised, so the stream is
    the local wire."""
    template = prompt.template
    head: list[tuple[str, str]] = []
    pieces: list[str] = []
    for index, turn in enumerate(prompt.turns):
        whole = f"{template.header(turn.role)}{turn.text}{template.end}\n"
        if index == 0:
            whole = template.bos + whole
            system = prompt.system
            if system is not None and turn.text == system:
                head.append(("system", whole))  # a system turn of its own (ChatML)
                continue
            if system is not None and turn.text.startswith(system):
                cut = len(template.bos) + len(template.header(turn.role)) + len(system) + 2
                head.append(("system", whole[:cut]))
                whole = whole[cut:]
        pieces.append(whole)
    opening = template.header(template.model_role)
    pieces.append(opening if prompt.turns else template.bos + opening)
    ends, total = [], 0
    for piece in pieces:
        total += len(piece)
        ends.append(total)
    return WireStream(tuple(head), tuple(pieces), tuple(ends))


def only_tool(transcript: Transcript, tools: Sequence[ToolSpec]) -> str:
    """The tool the newest message allows alone (the loop's extract request and last-step
    notice say so in data), when the agent has it; "" for any tool."""
    if not len(transcript):
        return ""
    last = transcript[-1]
    wanted = last.only_tool if isinstance(last, UserText | Notice) else ""
    return wanted if any(t.name == wanted for t in tools) else ""


def render_chat(
    transcript: Transcript, tools: Sequence[ToolSpec], template: ChatTemplate
) -> Rendered:
    """Pure: the chat-template prompt for `transcript`, ending with the open model turn."""
    visible = transcript.visible_messages()
    pieces = react_text.turns(visible, tools)
    system = pieces[0][1] if pieces and pieces[0][0] == "system" else None
    echoes = [generated_tokens(m) for m in visible if isinstance(m, AssistantTurn)]
    turns = template_turns(pieces, template, echoes)
    chosen = only_tool(transcript, tools)
    used = spent(visible, tools)
    announced = tuple(
        ToolSpec(t.name, t.description, json.loads(t.parameters))
        for m in visible
        if isinstance(m, Notice)
        for t in m.tools
    )
    prompt = TemplatePrompt(tuple(turns), tuple(tools), chosen, system, template, used, announced)
    return Rendered(prompt, prompt_stream, transcript.assistant_turns())


def render_gemma(transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
    """Pure: the Gemma chat-template prompt for `transcript`."""
    return render_chat(transcript, tools, GEMMA)


def render_chatml(transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
    """Pure: the ChatML prompt for `transcript` (SmolLM2, Qwen)."""
    return render_chat(transcript, tools, CHATML)


def special_token(llama: Any, marker: str, template: ChatTemplate) -> int:
    """The id of a special marker token; a model without it does not use this template."""
    ids: list[int] = llama.tokenize(marker.encode(), add_bos=False, special=True)
    if len(ids) != 1:
        raise ConfigurationError(
            f"the model file has no single {marker} token, so it does not use the "
            f"{template.name} chat template; pass a model file of that family"
        )
    return ids[0]


def prompt_tokens(llama: Any, prompt: TemplatePrompt) -> list[int]:
    """The prompt's token ids for an engine's vocabulary (see `prompt_parts`)."""
    return prompt_parts(llama, prompt)[0]


def prompt_parts(llama: Any, prompt: TemplatePrompt) -> tuple[list[int], int]:
    """The prompt's token ids for an engine's vocabulary, and how many of them are the
    opening (the system text: instructions, protocol, tools; 0 when there is none), the
    part every run of one agent shares. Markers are special tokens; text is never parsed
    for specials (a tool result cannot forge a turn); each piece is tokenised on its own,
    so no token depends on what follows it (the system text is a piece of its own, also
    where it shares a turn with the task); a model turn uses its generated ids when they
    spell its text."""
    template = prompt.template
    start = special_token(llama, template.start, template)
    end = special_token(llama, template.end, template)
    newline = llama.tokenize(b"\n", add_bos=False)
    out: list[int] = [llama.token_bos()] if template.bos else []
    opening = 0
    for index, turn in enumerate(prompt.turns):
        out += [start, *llama.tokenize(f"{turn.role}\n".encode(), add_bos=False)]
        body = turn.text.encode()
        system = prompt.system if index == 0 else None
        if turn.tokens is not None and llama.detokenize(list(turn.tokens)) == body:
            out += turn.tokens
        elif system and turn.text.startswith(system) and turn.text != system:
            out += llama.tokenize(system.encode(), add_bos=False)
            opening = len(out)
            out += llama.tokenize(turn.text[len(system) :].encode(), add_bos=False)
        else:
            out += llama.tokenize(body, add_bos=False)
        out += [end, *newline]
        if system and turn.text == system:
            opening = len(out)
    out += [start, *llama.tokenize(f"{template.model_role}\n".encode(), add_bos=False)]
    return out, opening
