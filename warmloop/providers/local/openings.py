"""Saved openings: the local engine's KV state for a prompt's opening, kept on disk.

The local analogue of a provider's prompt cache across processes. Every `warmloop run` on
the embedded model starts with the same opening (instructions, protocol, tools); its KV
state, once evaluated, is saved here, and a fresh process whose first prompt starts with
exactly those tokens loads it instead of evaluating them again.

A file is found by a key that hashes the engine's identity (model file, template, engine
settings) with the exact opening tokens, and it holds those tokens again: a state is used
only when the identity and every token match and its keyed digest does (HMAC-SHA256 over
identity, tokens and state, under a random key the directory keeps in `KEY_FILE`, readable
by its owner only). llama.cpp takes any bytes it is handed (a flipped byte, an absurd
position) and computes on them, and a plain digest anyone can recompute would let a file
written elsewhere through.

What the directory holds is untrusted: a damaged, truncated or foreign file, a header of
the wrong shape, or something that is not a regular file (a FIFO, a directory, a link) is a
warning and a cold start, never the end of a run; a damaged file is removed and rebuilt by
the next save. The directory has a size limit: after each save the least recently used
files go first (a load refreshes a file's time), temporary files killed writers left among
them.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import stat
import sys
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path

from warmloop.errors import ConfigurationError
from warmloop.providers.local.gemma import cache_dir
from warmloop.regular import NOT_REGULAR, open_regular

MAGIC = b"warmloop-kv-opening 2\n"
SUFFIX = ".kv"
TEMPORARY = ".tmp"
KEY_FILE = "key"
"""The directory's digest key: neither a saved opening nor a temporary file, never evicted."""
KEY_BYTES = 32
MAX_HEADER_BYTES = 4096
"""A header is a few short fields; a longer first line is not a saved opening."""
DEFAULT_LIMIT_BYTES = 512 * 1024 * 1024
LOG = logging.getLogger("warmloop.local")


def openings_dir() -> Path:
    """Where saved openings live: `openings/` beside the models in the cache directory."""
    return cache_dir() / "openings"


def token_bytes(tokens: Sequence[int]) -> bytes:
    """Token ids as 32-bit little-endian integers (llama.cpp's token type)."""
    packed = array("i", tokens)
    if sys.byteorder == "big":  # pragma: no cover - big-endian hosts
        packed.byteswap()
    return packed.tobytes()


def opening_key(identity: str, tokens: Sequence[int]) -> str:
    """The file key: a hash of the engine identity and the exact opening tokens."""
    digest = hashlib.sha256(identity.encode())
    digest.update(b"\0")
    digest.update(token_bytes(tokens))
    return digest.hexdigest()


def cache_limit(limit_bytes: object) -> int:
    """`limit_bytes` checked as a size limit: a whole number of bytes, at least 0."""
    if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int) or limit_bytes < 0:
        raise ConfigurationError(
            f"an opening cache limit is a whole number of bytes >= 0, got {limit_bytes!r}"
        )
    return limit_bytes


class NotSaved(Exception):
    """Why a file in the openings directory is not a usable saved opening."""


def read_opening(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit`; FileNotFoundError when
    there is none, NotSaved for anything else there (a FIFO, a directory, a link, a
    device, a file larger than the cache may hold): never blocked on, never followed."""
    try:
        fd = open_regular(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symbolic link; EACCES, EISDIR; not a regular file
        if exc.strerror == NOT_REGULAR:
            raise NotSaved(NOT_REGULAR) from exc
        raise NotSaved(f"it cannot be opened as a file ({os.strerror(exc.errno or 0)})") from exc
    try:
        info = os.fstat(fd)
        if info.st_size > limit:
            raise NotSaved(f"it is {info.st_size} bytes, over the cache's limit of {limit}")
        chunks: list[bytes] = []
        left = limit + 1  # one byte over tells a file that keeps growing from a full one
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise NotSaved(f"it cannot be read ({os.strerror(exc.errno or 0)})") from exc
    finally:
        os.close(fd)
    if left <= 0:
        raise NotSaved(f"it holds more than the cache's limit of {limit} bytes")
    return b"".join(chunks)


def state_digest(key: bytes, identity: str, tokens: Sequence[int], state: bytes) -> str:
    """The keyed digest a saved file carries: only a holder of `key` can write one that
    matches, and it binds the state to the identity and tokens it was saved for."""
    mac = hmac.new(key, identity.encode(), hashlib.sha256)
    mac.update(b"\0")
    mac.update(token_bytes(tokens))
    mac.update(state)
    return mac.hexdigest()


def trusted_key(path: Path) -> None:
    """NotSaved unless the key file is this user's and no one else may read or write it:
    with a key another user planted, or could read, they sign openings this process loads."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError as exc:
        raise NotSaved(f"the key file {path} cannot be read ({exc.strerror})") from exc
    if info.st_uid != os.geteuid():
        raise NotSaved(
            f"the key file {path} belongs to another user, who could sign openings with it; "
            "remove it (a new one, yours only, is made on the next save)"
        )
    if info.st_mode & 0o077:
        raise NotSaved(
            f"the key file {path} has mode {stat.S_IMODE(info.st_mode):04o}: other users could "
            f"sign openings with it; run chmod 600 {path} if you made it, or remove it (a new "
            "one, yours only, is made on the next save)"
        )


def directory_key(directory: Path) -> bytes:
    """The directory's digest key, made once (random, owner-only, published atomically so
    concurrent first writers agree on one); NotSaved when it cannot be read or made."""
    path = directory / KEY_FILE
    for _ in range(2):
        try:
            key = read_opening(path, KEY_BYTES)
        except FileNotFoundError:
            pass
        else:
            if len(key) != KEY_BYTES:
                raise NotSaved(f"the key file {path} is damaged; remove it")
            trusted_key(path)
            return key
        temporary = ""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=directory, suffix=TEMPORARY)
            with os.fdopen(handle, "wb") as out:  # mkstemp makes it readable by its owner only
                out.write(os.urandom(KEY_BYTES))
            os.link(temporary, path)  # fails if another writer published one first: use it
        except FileExistsError:
            pass
        except OSError as exc:
            raise NotSaved(f"no key file can be made ({os.strerror(exc.errno or 0)})") from exc
        finally:
            if temporary:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
    raise NotSaved(f"the key file {path} cannot be read")


def parse_opening(data: bytes, key: bytes, identity: str, tokens: Sequence[int]) -> bytes | None:
    """The state a saved file holds for exactly `identity` and `tokens`, checked against
    its keyed digest; None for a file of any other shape or content."""
    if not data.startswith(MAGIC):
        return None
    line_end = data.find(b"\n", len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
    if line_end < 0:
        return None
    try:
        header = json.loads(data[len(MAGIC) : line_end])
    except (ValueError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    size, digest, count = header.get("size"), header.get("hmac_sha256"), header.get("tokens")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (size, count)):
        return None  # 800.0 is not a count: a writer of this version never wrote it
    if header.get("identity") != identity or count != len(tokens) or not isinstance(digest, str):
        return None
    body = data[line_end + 1 :]
    held, state = body[: 4 * len(tokens)], body[4 * len(tokens) :]
    if held != token_bytes(tokens) or len(state) != size:
        return None
    expected = state_digest(key, identity, tokens, state)
    return state if hmac.compare_digest(expected, digest) else None


class OpeningCache:
    """Saved KV states of openings in one directory, at most `limit_bytes` in all."""

    def __init__(self, directory: Path | None = None, *, limit_bytes: int = DEFAULT_LIMIT_BYTES):
        self.limit_bytes = cache_limit(limit_bytes)
        self.directory = directory if directory is not None else openings_dir()

    def path(self, identity: str, tokens: Sequence[int]) -> Path:
        """The file that holds (or would hold) the state for this identity and tokens."""
        return self.directory / f"{opening_key(identity, tokens)}{SUFFIX}"

    def load(self, identity: str, tokens: Sequence[int]) -> bytes | None:
        """The saved state for exactly this identity and these tokens, or None. A file
        that does not read back whole is reported, removed and treated as absent; what is
        not a regular file is reported and left alone."""
        path = self.path(identity, tokens)
        try:
            data = read_opening(path, self.limit_bytes)
            key = directory_key(self.directory)
        except FileNotFoundError:
            return None
        except NotSaved as exc:
            LOG.warning("saved opening %s is not used (%s); evaluating it again", path, exc)
            return None
        state = parse_opening(data, key, identity, tokens)
        if state is None:
            LOG.warning("saved opening %s is damaged or truncated; ignored and rebuilt", path)
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used: the last to be evicted
        return state

    def save(self, identity: str, tokens: Sequence[int], state: bytes) -> Path | None:
        """Write the state atomically, then evict down to the limit; the path, or None
        when it could not be written (nothing partial is left) or is larger than the
        whole limit."""
        path = self.path(identity, tokens)
        if len(MAGIC) + 4 * len(tokens) + len(state) > self.limit_bytes:
            return None
        try:
            key = directory_key(self.directory)
        except NotSaved as exc:
            LOG.warning("cannot save the opening to %s (%s); it is evaluated again", path, exc)
            return None
        header = {
            "identity": identity,
            "tokens": len(tokens),
            "size": len(state),
            "hmac_sha256": state_digest(key, identity, tokens, state),
        }
        blob = b"".join(
            (MAGIC, json.dumps(header, sort_keys=True).encode(), b"\n", token_bytes(tokens), state)
        )
        if len(blob) > self.limit_bytes:
            return None
        temporary: str | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=TEMPORARY)
            with os.fdopen(handle, "wb") as out:
                out.write(blob)
            os.replace(temporary, path)
        except OSError as exc:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            LOG.warning("cannot save the opening to %s (%s); it is evaluated again", path, exc)
            return None
        self.evict(keep=path)
        return path

    def evict(self, *, keep: Path | None = None) -> None:
        """Remove the least recently used files (saved openings and temporary files a
        killed writer left) until the directory fits its limit; anything that is not a
        regular file is not the cache's and is left alone."""
        entries: list[tuple[int, int, Path]] = []
        for pattern in (f"*{SUFFIX}", f"*{TEMPORARY}"):
            for found in self.directory.glob(pattern):
                try:
                    info = found.lstat()
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    entries.append((info.st_mtime_ns, info.st_size, found))
        total = sum(size for _, size, _ in entries)
        for _, size, found in sorted(entries, key=lambda e: (e[2] == keep, e[0])):
            if total <= self.limit_bytes:
                break
            with contextlib.suppress(OSError):
                found.unlink(missing_ok=True)
            total -= size
