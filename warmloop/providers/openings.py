"""Saved openings: the local engine's KV state for a prompt's opening, kept on disk.

The local analogue of a provider's prompt cache across processes. Every `warmloop run` on
the embedded model starts with the same opening (instructions, protocol, tools); its KV
state, once evaluated, is saved here, and a fresh process whose first prompt starts with
exactly those tokens loads it instead of evaluating them again.

A file is found by a key that hashes the engine's identity (model file, template, engine
settings) with the exact opening tokens, and it holds those tokens again: a state is used
only when the identity and every token match. A damaged or truncated file is ignored with
a warning, removed, and rebuilt by the next save. The directory has a size limit: after
each save the least recently used files go first (a load refreshes a file's time).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import tempfile
from array import array
from collections.abc import Sequence
from pathlib import Path

from warmloop.errors import ConfigurationError
from warmloop.providers.gemma import cache_dir

MAGIC = b"warmloop-kv-opening 1\n"
SUFFIX = ".kv"
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


class OpeningCache:
    """Saved KV states of openings in one directory, at most `limit_bytes` in all."""

    def __init__(self, directory: Path | None = None, *, limit_bytes: int = DEFAULT_LIMIT_BYTES):
        if limit_bytes < 0:
            raise ConfigurationError(f"an opening cache limit must be >= 0, got {limit_bytes}")
        self.directory = directory if directory is not None else openings_dir()
        self.limit_bytes = limit_bytes

    def path(self, identity: str, tokens: Sequence[int]) -> Path:
        """The file that holds (or would hold) the state for this identity and tokens."""
        return self.directory / f"{opening_key(identity, tokens)}{SUFFIX}"

    def load(self, identity: str, tokens: Sequence[int]) -> bytes | None:
        """The saved state for exactly this identity and these tokens, or None. A file
        that does not read back whole is reported, removed and treated as absent."""
        path = self.path(identity, tokens)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            LOG.warning("saved opening %s cannot be read (%s); evaluating it again", path, exc)
            return None
        state = self._parse(data, identity, tokens)
        if state is None:
            LOG.warning("saved opening %s is damaged or truncated; ignored and rebuilt", path)
            path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used: the last to be evicted
        return state

    @staticmethod
    def _parse(data: bytes, identity: str, tokens: Sequence[int]) -> bytes | None:
        if not data.startswith(MAGIC):
            return None
        line_end = data.find(b"\n", len(MAGIC))
        if line_end < 0:
            return None
        try:
            header = json.loads(data[len(MAGIC) : line_end])
            size, digest, count = int(header["size"]), str(header["sha256"]), header["tokens"]
        except (ValueError, KeyError, TypeError):
            return None
        if header.get("identity") != identity or count != len(tokens):
            return None
        body = data[line_end + 1 :]
        held, state = body[: 4 * count], body[4 * count :]
        if held != token_bytes(tokens) or len(state) != size:
            return None
        return state if hashlib.sha256(state).hexdigest() == digest else None

    def save(self, identity: str, tokens: Sequence[int], state: bytes) -> Path | None:
        """Write the state atomically, then evict down to the limit; the path, or None
        when it could not be written or is larger than the whole limit."""
        path = self.path(identity, tokens)
        header = {
            "identity": identity,
            "tokens": len(tokens),
            "size": len(state),
            "sha256": hashlib.sha256(state).hexdigest(),
        }
        blob = b"".join(
            (MAGIC, json.dumps(header, sort_keys=True).encode(), b"\n", token_bytes(tokens), state)
        )
        if len(blob) > self.limit_bytes:
            return None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "wb") as out:
                out.write(blob)
            os.replace(temporary, path)
        except OSError as exc:
            LOG.warning("cannot save the opening to %s (%s); it is evaluated again", path, exc)
            return None
        self.evict(keep=path)
        return path

    def evict(self, *, keep: Path | None = None) -> None:
        """Remove the least recently used files until the directory fits its limit."""
        entries: list[tuple[int, int, Path]] = []
        for found in self.directory.glob(f"*{SUFFIX}"):
            try:
                stat = found.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime_ns, stat.st_size, found))
        total = sum(size for _, size, _ in entries)
        for _, size, found in sorted(entries, key=lambda e: (e[2] == keep, e[0])):
            if total <= self.limit_bytes:
                break
            found.unlink(missing_ok=True)
            total -= size
