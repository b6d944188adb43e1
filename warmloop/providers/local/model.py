"""The in-process local engine: a small GGUF model in llama.cpp, driven by the text protocol.

`render` is pure: the model family's chat template as a string, ending with the open model
turn (`chat_template.py`). `send` tokenises it, keeps the longest common token prefix with
what the engine already holds in its KV cache, evaluates only the rest, and samples (greedily
unless model settings say otherwise, `local_sampling.py`) under a grammar that makes every
step parse. The assistant turn stored is exactly the
generated text, and its generated token ids travel with it, so the next prompt starts with
every token the engine already holds and the whole previous request is reused.
"""

from __future__ import annotations

import asyncio
import ctypes
import importlib
import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from warmloop.errors import ConfigurationError, ContextWindowExceeded, require_extra
from warmloop.facts.model_facts import ModelFacts, table_facts
from warmloop.facts.usage import Usage
from warmloop.protocols.fresh import Spent
from warmloop.protocols.grammar import action_grammar, tools_key
from warmloop.providers.base import ModelResponse, Rendered, text_protocol_reply
from warmloop.providers.local.chat_template import (
    DETAILS_KEY,
    TemplatePrompt,
    prompt_parts,
    render_chat,
)
from warmloop.providers.local.models import DEFAULT_N_CTX, EmbeddedModel, embedded_model
from warmloop.providers.local.openings import OpeningCache
from warmloop.providers.local.sampling import Sampling, sampling_of, step_tokens
from warmloop.tools.schema import ToolSpec
from warmloop.transcript import Transcript

DEFAULT_MAX_TOKENS = 256
DEFAULT_SEED = 1234
GRAMMARS_KEPT = 16


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


_quiet: list[Any] = []
LOG = logging.getLogger("warmloop.llama_cpp")


def quiet_llama_logs() -> None:
    """Send llama.cpp's own log lines (model loading, the full-size SWA cache notice) to
    the `warmloop.llama_cpp` logger at debug level instead of stderr. The callback is
    process-wide; a reference is kept so ctypes never frees it."""
    if _quiet:
        return
    llama_cpp = importlib.import_module("llama_cpp")

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def to_logging(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        LOG.debug("%s", text.decode("utf-8", errors="replace").rstrip())

    llama_cpp.llama_log_set(to_logging, ctypes.c_void_p(0))
    _quiet.append(to_logging)


def context_needed(prompt: int, max_tokens: int) -> int:
    """The context size to suggest for a prompt that does not fit: the next power of two."""
    size = 1024
    while size < prompt + max_tokens:
        size *= 2
    return size


class LocalModel:
    """A small model in-process (llama.cpp): greedy unless its `ModelSettings` ask for
    sampling (`local_sampling.py`), grammar-constrained, KV-cache reusing.

    `model` names one of `local_models.MODELS` (default: `DEFAULT_MODEL`); `model_path`
    runs another GGUF file of that family. One engine holds one KV state, shared by every
    session sent to it; usage reports the engine's real work for each request (tokens
    evaluated vs reused from its KV cache). `openings` keeps the KV state of each opening
    (instructions, protocol, tools) on disk, so the first request of a fresh process loads
    it instead of evaluating it: True for the user's cache directory (`OpeningCache()`),
    False for none, or an `OpeningCache`. Without llama-cpp-python it is refused here
    (MissingExtra, naming the model's extra), not at its first request.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        model_path: str | Path | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = DEFAULT_SEED,
        n_threads: int = 2,
        context_window: int | None = None,
        openings: OpeningCache | bool = True,
    ) -> None:
        self.family: EmbeddedModel = embedded_model(model)
        extra = self.family.extra  # every embedded model's extra brings the engine
        require_extra("llama_cpp", what="the local model", package="llama-cpp-python", extra=extra)
        self.name = f"local:{self.family.name}"
        self.model_path = Path(model_path) if model_path is not None else None
        self.max_tokens = max_tokens
        self.seed = seed
        self.n_threads = n_threads
        # Its window is its context size: `context_window` is another name for `n_ctx`.
        self.resize(n_ctx if context_window is None else context_window)
        self._llama: Any = None
        self._grammars: dict[str, Any] = {}
        self.openings = opening_cache(openings)
        self._identity = ""
        # llama.cpp blocks and holds one KV state: calls run one at a time, from any loop.
        self._lock = threading.Lock()

    def resize(self, n_ctx: int) -> None:
        """Set the context window (tokens); only before the engine is loaded."""
        if n_ctx < 512 or not 16 <= self.max_tokens < n_ctx or self.n_threads < 1:
            raise ConfigurationError(
                "LocalModel needs n_ctx >= 512, 16 <= max_tokens < n_ctx and n_threads >= 1 "
                f"(got n_ctx={n_ctx}, max_tokens={self.max_tokens}, n_threads={self.n_threads})"
            )
        if getattr(self, "_llama", None) is not None:
            raise ConfigurationError("the context size is fixed once the engine is loaded")
        self.n_ctx = n_ctx

    @property
    def context_window(self) -> int:
        """Prompt tokens that fit: the context less room for the longest step generated."""
        return self.n_ctx - self.max_tokens

    @property
    def facts(self) -> ModelFacts:
        """The engine's own window (`n_ctx`, told: it is this engine's setting), with
        `max_tokens` kept for the answer, and a local engine's cache rules (never priced)."""
        return table_facts(self.name, context_window=self.n_ctx, output_reserve=self.max_tokens)

    async def discover(self) -> ModelFacts:
        """The facts as they stand: an in-process engine has nothing more to publish."""
        return self.facts

    def render(self, transcript: Transcript, tools: Sequence[ToolSpec]) -> Rendered:
        """Pure: the model family's chat-template prompt (see `chat_template.render_chat`)."""
        return render_chat(transcript, tools, self.family.template)

    async def send(self, rendered: Rendered, *, session_id: str) -> ModelResponse:
        """Generate one step in a worker thread; unparseable text is returned, not raised."""
        prompt = rendered.payload
        if not isinstance(prompt, TemplatePrompt) or prompt.template != self.family.template:
            raise ConfigurationError("LocalModel.send takes what LocalModel.render returned")
        text, generated, usage = await asyncio.to_thread(self.complete, prompt)
        # Re-tokenising generated text does not always give the generated ids back (the
        # grammar can steer the sampler to a non-canonical split), so the ids travel with
        # the turn and the next prompt holds exactly what the KV cache holds.
        details: dict[str, Any] = {DETAILS_KEY: {"tokens": generated}}
        return text_protocol_reply(text, rendered.turn_index, usage, details)

    def complete(self, prompt: TemplatePrompt) -> tuple[str, list[int], Usage]:
        """Blocking: one step for `prompt`: its raw text, generated token ids and usage."""
        with self._lock:
            tokens, opening = prompt_parts(self.engine(), prompt)
            sampling = self.sampling(prompt)
            if len(tokens) > self.n_ctx - sampling.max_tokens:
                # The agent's maintenance prunes and retries once on this error; if it
                # still does not fit, the message says how to make room.
                raise ContextWindowExceeded(
                    f"the local context window is full: the prompt has {len(tokens)} tokens "
                    f"and up to {sampling.max_tokens} more may be generated, but the window "
                    f"holds {self.n_ctx}; raise it with `warmloop run --n-ctx "
                    f"{context_needed(len(tokens), sampling.max_tokens)}` "
                    "(LocalModel(n_ctx=...) in Python) or give a narrower task",
                    prompt_tokens=len(tokens),
                    window=self.n_ctx - sampling.max_tokens,
                )
            reused, held = self._warm_opening(tokens, opening)
            grammar = self.grammar(prompt.allowed_tools(), prompt.grammar_spent())
            generated = list(self._generate(tokens[held:], grammar, sampling))
            text = self.engine().detokenize(generated).decode("utf-8", errors="replace")
            usage = Usage(len(tokens), reused, output_tokens=len(generated))
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
            return Usage(len(tokens), reused)

    def _warm_opening(self, tokens: Sequence[int], opening: int) -> tuple[int, int]:
        """Keep the reusable KV prefix for `tokens`, first loading the saved state of
        their opening when the engine does not hold it; an opening evaluated here is
        saved. Returns how many tokens were reused (held or loaded), and how many the
        engine now holds."""
        reused = self._keep_prefix(tokens)
        if self.openings is None or reused >= opening or opening >= len(tokens):
            return reused, reused
        head = tokens[:opening]
        state = self.openings.load(self._identity, head)
        llama = self.engine()
        if state is not None:
            if load_sequence(llama, state, head):
                loaded = self._keep_prefix(tokens)
                return loaded, loaded
            reused = 0  # a refused load leaves the engine holding nothing
        llama.n_tokens = reused
        llama.eval(list(tokens[reused:opening]))
        self.openings.save(self._identity, head, save_sequence(llama))
        return reused, opening

    def _keep_prefix(self, tokens: Sequence[int]) -> int:
        """Keep the reusable KV prefix for `tokens`; returns its length."""
        llama = self.engine()
        reused = reusable_prefix(list(llama.eval_tokens), tokens)
        # `Llama.eval` first drops the KV cells from position `n_tokens` on, so this keeps
        # exactly the reused prefix and the next eval decodes only the rest.
        llama.n_tokens = reused
        return reused

    def sampling(self, prompt: TemplatePrompt) -> Sampling:
        """How `prompt`'s step is sampled: its model settings over this model's own
        `max_tokens` and `seed`, greedy unless a temperature or top_p is set."""
        return sampling_of(prompt.sampling, max_tokens=self.max_tokens, seed=self.seed)

    def _generate(self, suffix: list[int], grammar: Any, sampling: Sampling) -> Iterator[int]:
        llama = self.engine()
        is_eog = importlib.import_module("llama_cpp").llama_vocab_is_eog
        llama.set_seed(sampling.seed)  # the sampler `generate` builds draws from it
        # reset=False: `_keep_prefix` has settled the prefix already.
        stream = llama.generate(
            suffix, reset=False, grammar=grammar, **sampling.generate_arguments()
        )
        yield from step_tokens(
            stream,
            sampling,
            is_end=lambda token: bool(is_eog(llama._model.vocab, token)),
            text_of=lambda ids: llama.detokenize(list(ids)).decode("utf-8", errors="replace"),
        )

    def grammar(self, tools: tuple[ToolSpec, ...], spent: Spent | None = None) -> Any:
        """The step grammar for `tools` without `spent` calls, built once per key (the
        most recent few are kept: spent calls change every step)."""
        key = f"{tools_key(tools)}|{(spent or Spent()).key()}"
        found = self._grammars.pop(key, None)
        if found is None:
            grammars = importlib.import_module("llama_cpp.llama_grammar")
            text = action_grammar(tools, spent=spent)
            found = grammars.LlamaGrammar.from_string(text, verbose=False)
        self._grammars[key] = found
        while len(self._grammars) > GRAMMARS_KEPT:
            self._grammars.pop(next(iter(self._grammars)))
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
            quiet_llama_logs()
            path = self.model_path or self.family.locate()
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
                    # can be cut back to an arbitrary prefix (other models ignore it).
                    swa_full=True,
                    verbose=False,
                )
            except ValueError as exc:
                raise ConfigurationError(
                    f"llama.cpp could not load {path} ({exc}); pass a valid GGUF model file"
                ) from exc
            self._identity = engine_identity(
                path, self.family.template.name, llama_cpp.__version__, self.n_ctx
            )
        return self._llama


def opening_cache(openings: object) -> OpeningCache | None:
    """`LocalModel(openings=...)` checked now, not at the first request: True for the
    user's cache directory, False for none, or an `OpeningCache`."""
    if openings is True:
        return OpeningCache()
    if openings is False:
        return None
    if isinstance(openings, OpeningCache):
        return openings
    raise ConfigurationError(
        f"openings is True (the user's cache directory), False (none) or an OpeningCache "
        f"(OpeningCache(directory, limit_bytes=...)); got {openings!r}"
    )


def engine_identity(path: Path, template: str, version: str, n_ctx: int) -> str:
    """What a saved KV state depends on besides its tokens: the model file (its path, size
    and modification time), the chat template, the engine's version and context size."""
    stat = path.stat()
    return (
        f"model={path.resolve()} size={stat.st_size} mtime_ns={stat.st_mtime_ns} "
        f"template={template} llama_cpp={version} n_ctx={n_ctx} swa_full=1"
    )


def save_sequence(llama: Any) -> bytes:
    """The KV state of the engine's sequence 0 (what `Llama.eval` fills), as bytes."""
    lib = importlib.import_module("llama_cpp")
    size = lib.llama_state_seq_get_size(llama._ctx.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = lib.llama_state_seq_get_data(llama._ctx.ctx, buffer, size, 0)
    return ctypes.string_at(buffer, written)


def load_sequence(llama: Any, state: bytes, tokens: Sequence[int]) -> bool:
    """Load a saved sequence-0 state holding `tokens`; False if the engine refuses it
    (then the engine holds nothing and the caller evaluates the tokens itself)."""
    lib = importlib.import_module("llama_cpp")
    llama.n_tokens = 0
    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    if not lib.llama_state_seq_set_data(llama._ctx.ctx, buffer, len(state), 0):
        LOG.warning("llama.cpp refused a saved opening; evaluating it again")
        llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        return False
    llama.input_ids[: len(tokens)] = tokens
    llama.n_tokens = len(tokens)
    return True
