"""The in-process local engine: Gemma 3 270M in llama.cpp, driven by the text protocol.

`render` is pure: the Gemma chat template as a string, ending with the open model turn.
`send` tokenises it, keeps the longest common token prefix with what the engine already
holds in its KV cache, evaluates only the rest, and samples greedily under a grammar that
makes every step parse. The assistant turn stored is exactly the generated text, and its
generated token ids travel with it, so the next prompt starts with every token the engine
already holds and the whole previous request is reused.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from warmloop.cache.usage import Usage
from warmloop.cache.wire import WireStream
from warmloop.errors import ConfigurationError, ContextWindowExceeded
from warmloop.protocols import react_text
from warmloop.protocols.grammar import action_grammar, gateway_alternatives, tools_key
from warmloop.providers.base import ModelResponse, Rendered, text_protocol_reply
from warmloop.providers.gemma import gemma_path
from warmloop.tools import ToolSpec
from warmloop.transcript import AssistantTurn, Notice, Transcript, UserText

GemmaRole = Literal["user", "model"]
BOS = "<bos>"
START = "<start_of_turn>"
END = "<end_of_turn>"
DEFAULT_N_CTX = 8192
DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 1234
DETAILS_KEY = "local"
"""`AssistantTurn.provider_details[DETAILS_KEY]["tokens"]`: the generated token ids."""


@dataclass(frozen=True)
class GemmaTurn:
    """One Gemma turn; `tokens` are the ids the engine generated for a model turn, if known."""

    role: GemmaRole
    text: str
    tokens: tuple[int, ...] | None = None


@dataclass(frozen=True)
class GemmaPrompt:
    """A rendered local request: the turns before the open model turn, the tools, and
    `only_tool`, the one tool the newest message allows (the grammar narrows to it)."""

    turns: tuple[GemmaTurn, ...]
    tools: tuple[ToolSpec, ...]
    only_tool: str = ""
    system: str | None = None
    """The opening system text merged into turn 0 (its own section of the stream)."""
    announced: tuple[ToolSpec, ...] = ()
    """Tools the conversation's notices announced: the grammar calls them through the
    gateway with their own argument schemas (the prompt's message 0 never changes)."""

    def allowed_tools(self) -> tuple[ToolSpec, ...]:
        """The tools the grammar offers for this step."""
        narrowed = tuple(t for t in self.tools if t.name == self.only_tool)
        return narrowed or gateway_alternatives(self.tools, self.announced)


def generated_tokens(turn: AssistantTurn) -> tuple[int, ...] | None:
    """The token ids a local engine generated for `turn` (kept in its provider details)."""
    found = turn.provider_details.get(DETAILS_KEY, {}).get("tokens")
    if isinstance(found, list) and all(isinstance(t, int) for t in found):
        return tuple(found)
    return None


def gemma_turns(
    pieces: Sequence[tuple[react_text.Role, str]], echoes: Sequence[tuple[int, ...] | None] = ()
) -> list[GemmaTurn]:
    """Gemma has only `user` and `model`: system text joins the user turn after it, with a
    blank line between, as Gemma's own template does. `echoes` are the model turns' ids."""
    out: list[GemmaTurn] = []
    pending = list(echoes)
    for role, text in pieces:
        if role == "assistant":
            out.append(GemmaTurn("model", text, pending.pop(0) if pending else None))
        elif out and out[-1].role == "user":
            out[-1] = GemmaTurn("user", f"{out[-1].text}\n\n{text}")
        else:
            out.append(GemmaTurn("user", text))
    return out


def header(role: GemmaRole) -> str:
    """The opening of a turn."""
    return f"{START}{role}\n"


def prompt_stream(prompt: GemmaPrompt) -> WireStream:
    """The template text of `prompt` as a canonical stream: one piece per turn (`message
    <i>`), the open model turn last; the system text merged into turn 0 is its own `system`
    section, so the guard can name a changed system prompt. This is the text that is
    tokenised, so the stream is the local wire."""
    head: list[tuple[str, str]] = []
    pieces: list[str] = []
    for index, turn in enumerate(prompt.turns):
        whole = f"{header(turn.role)}{turn.text}{END}\n"
        if index == 0:
            whole = BOS + whole
            system = prompt.system
            if system is not None and turn.text.startswith(system) and turn.text != system:
                cut = len(BOS) + len(header(turn.role)) + len(system) + len("\n\n")
                head.append(("system", whole[:cut]))
                whole = whole[cut:]
        pieces.append(whole)
    pieces.append(header("model") if prompt.turns else BOS + header("model"))
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


def render_gemma(transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
    """Pure: the Gemma chat-template prompt for `transcript`, ending with the open model turn."""
    visible = transcript.visible_messages()
    pieces = react_text.turns(visible, tools)
    system = pieces[0][1] if pieces and pieces[0][0] == "system" else None
    echoes = [generated_tokens(m) for m in visible if isinstance(m, AssistantTurn)]
    turns = gemma_turns(pieces, echoes)
    announced = tuple(
        ToolSpec(t.name, t.description, json.loads(t.parameters))
        for m in visible
        if isinstance(m, Notice)
        for t in m.tools
    )
    prompt = GemmaPrompt(
        tuple(turns), tuple(tools), only_tool(transcript, tools), system, announced
    )
    return Rendered(prompt, prompt_stream, transcript.assistant_turns())


def common_token_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def reusable_prefix(held: Sequence[int], prompt: Sequence[int]) -> int:
    """How many prompt tokens the KV cache can serve: the common prefix with what it holds,
    less one when that covers the whole prompt, because sampling needs fresh logits from
    at least one evaluated token (llama-cpp-python's `Llama.generate` does the same)."""
    return min(common_token_prefix(held, prompt), len(prompt) - 1)


def special_token(llama: Any, marker: str) -> int:
    """The id of a special marker token; a model without it is not a Gemma model."""
    ids: list[int] = llama.tokenize(marker.encode(), add_bos=False, special=True)
    if len(ids) != 1:
        raise ConfigurationError(
            f"the model file has no single {marker} token, so it is not a Gemma model; "
            "pass a Gemma GGUF as model_path"
        )
    return ids[0]


def prompt_tokens(llama: Any, prompt: GemmaPrompt) -> list[int]:
    """The prompt's token ids for an engine's vocabulary. Markers are special tokens; text
    is never parsed for specials (a tool result cannot forge a turn); each piece is
    tokenised on its own, so no token depends on what follows it; a model turn uses its
    generated ids when they spell its text."""
    start, end = special_token(llama, START), special_token(llama, END)
    newline = llama.tokenize(b"\n", add_bos=False)
    out: list[int] = [llama.token_bos()]
    for turn in prompt.turns:
        out += [start, *llama.tokenize(f"{turn.role}\n".encode(), add_bos=False)]
        body = turn.text.encode()
        if turn.tokens is not None and llama.detokenize(list(turn.tokens)) == body:
            out += turn.tokens
        else:
            out += llama.tokenize(body, add_bos=False)
        out += [end, *newline]
    out += [start, *llama.tokenize(b"model\n", add_bos=False)]
    return out


class LocalModel:
    """Gemma 3 270M in-process (llama.cpp): greedy, grammar-constrained, KV-cache reusing.

    One engine holds one KV state, shared by every session sent to it; usage reports the
    engine's real work for each request (tokens evaluated vs reused from its KV cache).
    """

    name = "local:gemma-3-270m"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = DEFAULT_SEED,
        n_threads: int = 2,
    ) -> None:
        if n_ctx < 512 or not 16 <= max_tokens < n_ctx or n_threads < 1:
            raise ConfigurationError(
                "LocalModel needs n_ctx >= 512, 16 <= max_tokens < n_ctx and n_threads >= 1 "
                f"(got n_ctx={n_ctx}, max_tokens={max_tokens}, n_threads={n_threads})"
            )
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.seed = seed
        self.n_threads = n_threads
        self._llama: Any = None
        self._grammars: dict[str, Any] = {}
        # llama.cpp blocks and holds one KV state: calls run one at a time, from any loop.
        self._lock = threading.Lock()

    @property
    def context_window(self) -> int:
        """Prompt tokens that fit: the context less room for the longest step generated."""
        return self.n_ctx - self.max_tokens

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: see `render_gemma`."""
        return render_gemma(transcript, tools)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Generate one step in a worker thread; unparseable text is returned, not raised."""
        prompt = rendered.payload
        if not isinstance(prompt, GemmaPrompt):
            raise ConfigurationError("LocalModel.send takes what LocalModel.render returned")
        text, generated, usage = await asyncio.to_thread(self.complete, prompt)
        # Re-tokenising generated text does not always give the generated ids back (the
        # grammar can steer the sampler to a non-canonical split), so the ids travel with
        # the turn and the next prompt holds exactly what the KV cache holds.
        details: dict[str, Any] = {DETAILS_KEY: {"tokens": generated}}
        return text_protocol_reply(text, rendered.turn_index, usage, details)

    def complete(self, prompt: GemmaPrompt) -> tuple[str, list[int], Usage]:
        """Blocking: one step for `prompt`: its raw text, generated token ids and usage."""
        with self._lock:
            tokens = prompt_tokens(self.engine(), prompt)
            if len(tokens) > self.context_window:
                raise ContextWindowExceeded(
                    f"the prompt has {len(tokens)} tokens and up to {self.max_tokens} more "
                    f"may be generated, but the local context holds {self.n_ctx}; "
                    "use LocalModel(n_ctx=...) with a larger context or a shorter task",
                    prompt_tokens=len(tokens),
                    window=self.context_window,
                )
            reused = self._keep_prefix(tokens)
            generated = list(self._generate(tokens[reused:], prompt.allowed_tools()))
            text = self.engine().detokenize(generated).decode("utf-8", errors="replace")
            usage = Usage(len(tokens) - reused, reused, output_tokens=len(generated))
            return text, generated, usage

    def prefill(self, tokens: Sequence[int]) -> Usage:
        """Blocking: evaluate a prompt without generating (its prefill work, for benchmarks)."""
        if not 0 < len(tokens) <= self.n_ctx:
            raise ConfigurationError(f"a prompt needs 1 to {self.n_ctx} tokens, got {len(tokens)}")
        with self._lock:
            reused = self._keep_prefix(tokens)
            llama = self.engine()
            llama.eval(list(tokens[reused:]))
            # Decoding may finish asynchronously; wait, so the caller times the real work.
            importlib.import_module("llama_cpp").llama_synchronize(llama._ctx.ctx)
            return Usage(len(tokens) - reused, reused)

    def _keep_prefix(self, tokens: Sequence[int]) -> int:
        """Keep the reusable KV prefix for `tokens`; returns its length."""
        llama = self.engine()
        reused = reusable_prefix(list(llama.eval_tokens), tokens)
        # `Llama.eval` first drops the KV cells from position `n_tokens` on, so this keeps
        # exactly the reused prefix and the next eval decodes only the rest.
        llama.n_tokens = reused
        return reused

    def _generate(self, suffix: list[int], tools: tuple[ToolSpec, ...]) -> Iterator[int]:
        llama = self.engine()
        is_eog = importlib.import_module("llama_cpp").llama_vocab_is_eog
        # reset=False: `_keep_prefix` has settled the prefix already.
        stream = llama.generate(suffix, reset=False, temp=0.0, grammar=self.grammar(tools))
        for count, token in enumerate(stream, start=1):
            if is_eog(llama._model.vocab, token):
                return
            yield token
            if count >= self.max_tokens:
                return

    def grammar(self, tools: tuple[ToolSpec, ...]) -> Any:
        """The step grammar for `tools`, built once per tool set."""
        key = tools_key(tools)
        found = self._grammars.get(key)
        if found is None:
            grammars = importlib.import_module("llama_cpp.llama_grammar")
            found = grammars.LlamaGrammar.from_string(action_grammar(tools), verbose=False)
            self._grammars[key] = found
        return found

    def close(self) -> None:
        """Free the engine now (it is loaded again on the next request)."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    def engine(self) -> Any:
        """The llama.cpp engine, loaded on first use."""
        if self._llama is None:
            try:
                llama_cpp = importlib.import_module("llama_cpp")
            except ImportError as exc:
                raise ConfigurationError(
                    "the local model needs llama-cpp-python; "
                    "install it with: pip install 'warmloop[local]'"
                ) from exc
            path = self.model_path or gemma_path()
            if not path.is_file():
                raise ConfigurationError(f"no model file at {path}; pass an existing GGUF path")
            try:
                self._llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    seed=self.seed,
                    # Gemma 3 uses sliding-window attention; only a full-size window cache
                    # can be cut back to an arbitrary prefix.
                    swa_full=True,
                    verbose=False,
                )
            except ValueError as exc:
                raise ConfigurationError(
                    f"llama.cpp could not load {path} ({exc}); pass a valid GGUF model file"
                ) from exc
        return self._llama
