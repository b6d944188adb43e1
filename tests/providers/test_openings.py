"""Saved openings: the local engine's KV state of an opening, kept on disk across processes.

The store is tested with stand-in state bytes; one test (marked `engine`) runs two fresh
llama.cpp engines on Gemma 3 270M and shows the second loading the first's opening."""

from __future__ import annotations

import errno
import json
import logging
import math
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmloop.errors import ConfigurationError
from warmloop.messages import SystemText, UserText
from warmloop.outputs import Outputs
from warmloop.providers.local.chat_template import TemplatePrompt, prompt_parts, render_gemma
from warmloop.providers.local.gemma import gemma_path
from warmloop.providers.local.model import LocalModel
from warmloop.providers.local.openings import (
    KEY_FILE,
    MAGIC,
    OpeningCache,
    opening_key,
    openings_dir,
    token_bytes,
)
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


def saved_with_header(cache: OpeningCache, header: bytes) -> Path:
    """A file at the path of (IDENTITY, TOKENS) whose header line is `header`."""
    path = cache.path(IDENTITY, TOKENS)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MAGIC + header + b"\n" + token_bytes(TOKENS) + STATE)
    return path


def good_header(cache: OpeningCache, **changes: object) -> bytes:
    cache.save(IDENTITY, TOKENS, STATE)
    data = cache.path(IDENTITY, TOKENS).read_bytes()
    header = json.loads(data[len(MAGIC) : data.index(b"\n", len(MAGIC))])
    return json.dumps(header | changes).encode()


@pytest.mark.parametrize(
    "header",
    [
        lambda cache: good_header(cache, tokens=float(len(TOKENS))),  # 6.0, not a count
        lambda cache: good_header(cache, size=float(len(STATE))),
        lambda cache: good_header(cache, tokens=True),
        lambda cache: good_header(cache, hmac_sha256=7),
        lambda cache: b"[" * 200_000 + b"]" * 200_000,  # nested 200,000 levels
        lambda cache: b"[" * 3000 + b"]" * 3000,  # deep, and short enough to be parsed
        lambda cache: b"[1, 2]",
        lambda cache: b" " * 10_000 + good_header(cache),  # a first line too long
    ],
)
def test_a_header_of_another_shape_is_a_warning_and_a_cold_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, header: object
) -> None:
    cache = OpeningCache(tmp_path)
    assert callable(header)
    path = saved_with_header(cache, header(cache))
    with caplog.at_level(logging.WARNING, logger="warmloop.local"):
        assert cache.load(IDENTITY, TOKENS) is None
    assert "damaged or truncated" in caplog.text
    assert not path.exists()
    assert cache.save(IDENTITY, TOKENS, STATE) == path
    assert cache.load(IDENTITY, TOKENS) == STATE


def test_a_state_written_under_another_key_is_not_used(tmp_path: Path) -> None:
    # A foreign file, or one tampered with and its header's digest recomputed by anyone
    # without this directory's key: llama.cpp would compute on whatever it is handed.
    here, elsewhere = OpeningCache(tmp_path / "here"), OpeningCache(tmp_path / "elsewhere")
    foreign = elsewhere.save(IDENTITY, TOKENS, STATE)
    assert foreign is not None
    here.directory.mkdir()
    os.replace(foreign, here.path(IDENTITY, TOKENS))
    assert here.load(IDENTITY, TOKENS) is None
    assert (tmp_path / "here" / KEY_FILE).stat().st_mode & 0o077 == 0  # the owner's only


def test_a_fifo_a_link_or_a_directory_in_the_cache_is_a_warning_and_left_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = OpeningCache(tmp_path, limit_bytes=10 * len(STATE))
    path = cache.path(IDENTITY, TOKENS)
    for make in (os.mkfifo, lambda p: os.symlink("/dev/zero", p), os.mkdir):
        make(path)
        with caplog.at_level(logging.WARNING, logger="warmloop.local"):
            assert cache.load(IDENTITY, TOKENS) is None  # never blocked on, never followed
        assert "is not used" in caplog.text
        assert os.path.lexists(path)
        caplog.clear()
        assert cache.save(IDENTITY, (*TOKENS, 1), STATE) is not None  # the rest works on
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)
    (tmp_path / "old.kv").mkdir()  # not ours, and the oldest: eviction passes it by
    os.utime(tmp_path / "old.kv", ns=(0, 0))
    small = OpeningCache(tmp_path, limit_bytes=len(STATE) + 1000)  # room for one opening
    assert small.save(IDENTITY, TOKENS, STATE) is not None
    assert (tmp_path / "old.kv").is_dir()
    assert not small.path(IDENTITY, (*TOKENS, 1)).exists()  # evicted instead


def test_temporary_files_killed_writers_left_are_evicted(tmp_path: Path) -> None:
    stale = tmp_path / "tmpkilled.tmp"
    stale.write_bytes(b"x" * 5_000_000)
    os.utime(stale, ns=(10**9, 10**9))  # an injected clock, not wall time
    cache = OpeningCache(tmp_path, limit_bytes=2_000_000)
    assert cache.save(IDENTITY, TOKENS, STATE) is not None
    assert not stale.exists()
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= cache.limit_bytes


def test_a_failed_save_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = OpeningCache(tmp_path)
    cache.save(IDENTITY, (1,), STATE)  # the key exists: only the opening's write fails
    before = set(tmp_path.iterdir())
    real_fdopen = os.fdopen

    class DiskFull:
        def __init__(self, handle: int, mode: str) -> None:
            self.out = real_fdopen(handle, mode)

        def __enter__(self) -> DiskFull:
            return self

        def __exit__(self, *exc: object) -> None:
            self.out.close()

        def write(self, data: bytes) -> int:
            self.out.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fdopen", DiskFull)
    assert cache.save(IDENTITY, TOKENS, STATE) is None
    assert set(tmp_path.iterdir()) == before


@pytest.mark.parametrize("limit", ["1000", 1.5, math.nan, True, -1])
def test_a_limit_that_is_not_a_whole_number_of_bytes_is_refused_at_once(
    tmp_path: Path, limit: object
) -> None:
    with pytest.raises(ConfigurationError, match="whole number of bytes"):
        OpeningCache(tmp_path, limit_bytes=limit)  # type: ignore[arg-type]


@pytest.mark.parametrize("openings", ["~/.cache/kv", 5, math.nan, None, Path("/tmp")])
def test_openings_that_is_not_a_switch_or_a_cache_is_refused_at_once(openings: object) -> None:
    with pytest.raises(ConfigurationError, match="OpeningCache"):
        LocalModel("gemma-3-270m", openings=openings)  # type: ignore[arg-type]


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
    assert cold.input_tokens == cold.uncached_tokens == len(tokens)
    assert len(list(tmp_path.glob("*.kv"))) == 1

    second = fresh()  # a new llama.cpp context, as in a new process
    again, _, warm = second.complete(first_prompt("Say hello."))
    assert warm.cache_read_tokens == opening  # the opening came from disk
    assert warm.uncached_tokens == len(tokens) - opening  # only the rest was evaluated
    assert warm.input_tokens == len(tokens)
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
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "embedded-model.md"
    assert "keeps at most 512 MiB" in guide.read_text()
    assert OpeningCache(tmp_path).limit_bytes == 512 * 1024 * 1024
