"""Saved openings: the local engine's KV state of an opening, kept on disk across processes.

The store is tested with stand-in state bytes; one test (marked `engine`) runs two fresh
llama.cpp engines on Gemma 3 270M and shows the second loading the first's opening."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.errors import ConfigurationError
from warmloop.messages import SystemText, UserText
from warmloop.outputs import Outputs
from warmloop.providers.chat_template import TemplatePrompt, prompt_parts, render_gemma
from warmloop.providers.gemma import gemma_path
from warmloop.providers.local import LocalModel
from warmloop.providers.openings import MAGIC, OpeningCache, opening_key, openings_dir
from warmloop.transcript import Transcript

IDENTITY = "model=/m/a.gguf size=10 mtime_ns=1 template=chatml llama_cpp=0.3 n_ctx=2048"
TOKENS = (151644, 8948, 198, 2610, 525, 264)
STATE = bytes(range(256)) * 8


def test_a_saved_state_is_used_only_for_the_same_identity_and_exact_tokens(tmp_path: Path) -> None:
    cache = OpeningCache(tmp_path)
    assert cache.save(IDENTITY, TOKENS, STATE) is not None
    assert cache.load(IDENTITY, TOKENS) == STATE
    other_model = IDENTITY.replace("size=10", "size=11")
    other_template = IDENTITY.replace("chatml", "gemma")
    assert cache.load(other_model, TOKENS) is None
    assert cache.load(other_template, TOKENS) is None
    assert cache.load(IDENTITY, (*TOKENS[:-1], 9)) is None  # one token changed
    assert cache.load(IDENTITY, TOKENS[:-1]) is None  # a shorter opening
    assert cache.load(IDENTITY, (*TOKENS, 1)) is None  # a longer opening


def test_a_file_under_the_right_name_but_for_other_tokens_is_not_used(tmp_path: Path) -> None:
    # A hash collision, or a file copied over another: the tokens inside must match too.
    cache = OpeningCache(tmp_path)
    written = cache.save(IDENTITY, (1, 2, 3), STATE)
    assert written is not None
    os.replace(written, cache.path(IDENTITY, (1, 2, 4)))
    assert cache.load(IDENTITY, (1, 2, 4)) is None
    other = IDENTITY.replace("n_ctx=2048", "n_ctx=4096")
    written = cache.save(IDENTITY, (1, 2, 3), STATE)
    assert written is not None
    os.replace(written, cache.path(other, (1, 2, 3)))
    assert cache.load(other, (1, 2, 3)) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated mid-state
        lambda data: data[: len(MAGIC) + 5],  # truncated in the header
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # one bit of the state flipped
        lambda data: b"x" + data[1:],  # not a saved opening
        lambda data: b"",
    ],
)
def test_a_damaged_or_truncated_file_is_ignored_with_a_warning_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: object
) -> None:
    cache = OpeningCache(tmp_path)
    path = cache.save(IDENTITY, TOKENS, STATE)
    assert path is not None
    assert callable(damage)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="warmloop.local"):
        assert cache.load(IDENTITY, TOKENS) is None
    assert "damaged or truncated" in caplog.text
    assert not path.exists()
    assert cache.save(IDENTITY, TOKENS, STATE) == path
    assert cache.load(IDENTITY, TOKENS) == STATE


def test_the_size_limit_holds_and_the_least_recently_used_go_first(tmp_path: Path) -> None:
    openings = [(*TOKENS, n) for n in range(6)]
    probe = OpeningCache(tmp_path / "probe").save(IDENTITY, openings[0], STATE)
    assert probe is not None
    cache = OpeningCache(tmp_path / "kv", limit_bytes=3 * probe.stat().st_size)
    for index, tokens in enumerate(openings):
        path = cache.save(IDENTITY, tokens, STATE)
        assert path is not None
        os.utime(path, ns=(index * 10**9, index * 10**9))  # an injected clock, not wall time
        if index == 2:
            assert cache.load(IDENTITY, openings[0]) == STATE  # used: now the newest
        sizes = [p.stat().st_size for p in (tmp_path / "kv").glob("*.kv")]
        assert sum(sizes) <= cache.limit_bytes
    kept = {tokens for tokens in openings if cache.path(IDENTITY, tokens).exists()}
    assert kept == {openings[0], openings[4], openings[5]}


def test_a_state_larger_than_the_whole_limit_is_not_kept(tmp_path: Path) -> None:
    cache = OpeningCache(tmp_path, limit_bytes=len(STATE))
    assert cache.save(IDENTITY, TOKENS, STATE) is None
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigurationError, match=">= 0"):
        OpeningCache(tmp_path, limit_bytes=-1)


def test_openings_live_in_the_users_cache_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARMLOOP_CACHE", "/srv/models")
    assert openings_dir() == Path("/srv/models/openings")
    assert OpeningCache().directory == Path("/srv/models/openings")


def test_a_local_model_keeps_openings_in_the_cache_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("WARMLOOP_CACHE", str(tmp_path))
    default = LocalModel("gemma-3-270m").openings
    assert default is not None
    assert default.directory == tmp_path / "openings"
    assert LocalModel("gemma-3-270m", openings=False).openings is None
    mine = OpeningCache(tmp_path / "mine", limit_bytes=10)
    assert LocalModel("gemma-3-270m", openings=mine).openings is mine


@given(
    st.lists(st.integers(0, 2**31 - 1), max_size=20),
    st.lists(st.integers(0, 2**31 - 1), max_size=20),
)
def test_the_key_tells_token_sequences_apart(a: list[int], b: list[int]) -> None:
    assert (opening_key(IDENTITY, a) == opening_key(IDENTITY, b)) == (a == b)
    assert opening_key(IDENTITY, a) != opening_key(IDENTITY + " ", a)


# ---- the real engine ----


def first_prompt(task: str) -> TemplatePrompt:
    transcript = Transcript([SystemText("You are a careful agent."), UserText(task)], id="t_kv")
    prompt = render_gemma(transcript, (Outputs().spec,)).payload
    assert isinstance(prompt, TemplatePrompt)
    return prompt


@pytest.mark.engine
def test_a_fresh_engine_loads_the_saved_opening_instead_of_evaluating_it(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    cache = OpeningCache(tmp_path)

    def fresh() -> LocalModel:
        # One thread: CI cores are shared; this test counts tokens, it does not time them.
        return LocalModel("gemma-3-270m", n_ctx=1024, max_tokens=16, n_threads=1, openings=cache)

    first = fresh()
    text, _, cold = first.complete(first_prompt("Say hello."))
    tokens, opening = prompt_parts(first.engine(), first_prompt("Say hello."))
    first.close()
    assert 0 < opening < len(tokens)
    assert cold.cache_read_tokens == 0
    assert cold.input_tokens == len(tokens)
    assert len(list(tmp_path.glob("*.kv"))) == 1

    second = fresh()  # a new llama.cpp context, as in a new process
    again, _, warm = second.complete(first_prompt("Say hello."))
    assert warm.cache_read_tokens == opening  # the opening came from disk
    assert warm.input_tokens == len(tokens) - opening
    assert again == text  # the same state: the same greedy answer
    _, _, other = second.complete(first_prompt("Say goodbye."))  # same opening, new task
    assert other.cache_read_tokens >= opening
    second.close()

    elsewhere = LocalModel("gemma-3-270m", n_ctx=2048, max_tokens=16, n_threads=1, openings=cache)
    _, _, changed = elsewhere.complete(first_prompt("Say hello."))  # another engine setting
    elsewhere.close()
    assert changed.cache_read_tokens == 0


def test_the_opening_is_the_system_text_every_task_shares() -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    vocab = llama_cpp.Llama(str(gemma_path()), vocab_only=True, verbose=False)
    try:
        hello, opening = prompt_parts(vocab, first_prompt("Say hello."))
        bye, same = prompt_parts(vocab, first_prompt("Say goodbye."))
        assert opening == same
        assert 0 < opening < min(len(hello), len(bye))
        assert hello[:opening] == bye[:opening]
        assert hello[opening:] != bye[opening:]
        no_system = render_gemma(Transcript([UserText("Say hello.")], id="t"), ()).payload
        assert isinstance(no_system, TemplatePrompt)
        assert prompt_parts(vocab, no_system)[1] == 0
    finally:
        vocab.close()


# Round three (issue 38): the documented size limit.


def test_the_directory_keeps_at_most_the_documented_512_mib(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert "keeps at most 512 MiB" in readme
    assert OpeningCache(tmp_path).limit_bytes == 512 * 1024 * 1024
