"""The workspace map across processes: each file's parse kept on disk by its content.

Every `warmloop run` over a workspace starts by mapping it (`code_map`). The map is a pure
function of the files, so a second process could build it again; but parsing a package of
20,000 lines takes a second or more on a busy machine, and the point of a saved opening is
that a second question starts at once. So the parses are kept here, one JSON file per
workspace root, each parse under the SHA-256 of the file's bytes: a process reads and
hashes the files and parses only those whose bytes changed since the last map. The file
also keeps the last map's digest, so a refresh can say what it cost: which files were
parsed again and whether the map, and so the opening the engine must evaluate again,
changed.

What the directory holds is untrusted: a file of the wrong shape, or one that cannot be
read or written, is a cold build (every file parsed), never a failed run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from warmloop.workspace.code_index import ParseMemo
from warmloop.workspace.definitions import Definition, Imported, Parsed

CACHE_ENV = "WARMLOOP_CACHE"
VERSION = 1
MAX_CACHE_BYTES = 64 * 1024 * 1024
"""A cache file larger than this is not read (the bounds of a workspace keep it smaller)."""
LOG = logging.getLogger("warmloop.workspace")


def maps_dir() -> Path:
    """Where workspace maps are kept: `maps/` under `$WARMLOOP_CACHE` (where the embedded
    models are kept too), else `~/.cache/warmloop/maps`."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".cache" / "warmloop"
    return base / "maps"


@dataclass(frozen=True)
class Remembered:
    """What the cache held for a workspace: its parses and the digest of its last map
    ("" when it held nothing)."""

    memo: ParseMemo
    map_digest: str


class MapCache:
    """Parses of each workspace's files, by content digest, in one directory."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else maps_dir()

    def path(self, root: Path) -> Path:
        """The file that holds (or would hold) the parses of the workspace at `root`."""
        key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:32]
        return self.directory / f"{key}.json"

    def load(self, root: Path) -> Remembered:
        """The parses kept for `root`; empty when there are none or they do not read back."""
        path = self.path(root)
        try:
            if path.stat().st_size > MAX_CACHE_BYTES:
                raise ValueError(f"over {MAX_CACHE_BYTES} bytes")
            held = json.loads(path.read_text(encoding="utf-8"))
            return Remembered(ParseMemo(_parses(held)), str(held.get("map", "")))
        except FileNotFoundError:
            return Remembered(ParseMemo(), "")
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            LOG.warning("workspace map cache %s is not used (%s); parsing again", path, exc)
            return Remembered(ParseMemo(), "")

    def save(self, root: Path, memo: ParseMemo, keep: set[str], map_text: str) -> None:
        """Keep the parses named in `keep` (the files the map was built from) and the map's
        digest, atomically; a failure is a warning (the next process parses again)."""
        kept = {key: _dumped(parsed) for key, parsed in memo.parsed.items() if key in keep}
        body = json.dumps(
            {"version": VERSION, "map": map_digest(map_text), "parsed": kept},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        path = self.path(root)
        temporary = ""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(body)
            os.replace(temporary, path)
            temporary = ""
        except OSError as exc:
            LOG.warning("cannot save the workspace map cache to %s (%s)", path, exc)
        finally:
            if temporary:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)


def map_digest(text: str) -> str:
    """The digest a map is remembered by."""
    return hashlib.sha256(text.encode()).hexdigest()


def _dumped(parsed: Parsed) -> dict[str, object]:
    return {
        "definitions": [
            [d.name, d.kind, d.line, d.end_line, d.header, d.doc, list(d.bases)]
            for d in parsed.definitions
        ],
        "imports": [[i.name, i.module, i.original, i.line] for i in parsed.imports],
        "doc": parsed.doc,
    }


def _parses(held: object) -> dict[str, Parsed]:
    """The parses a cache file holds; ValueError when it is not one this version wrote."""
    if not isinstance(held, dict) or held.get("version") != VERSION:
        raise ValueError("written by another version")
    found = {}
    for key, item in dict(held["parsed"]).items():
        definitions = tuple(
            Definition(str(n), str(k), int(a), int(b), str(h), str(doc), tuple(map(str, bases)))
            for n, k, a, b, h, doc, bases in item["definitions"]
        )
        imports = tuple(
            Imported(str(n), str(m), str(o), int(line)) for n, m, o, line in item["imports"]
        )
        found[str(key)] = Parsed(definitions, imports, str(item["doc"]))
    return found
