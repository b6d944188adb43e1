"""`--save FILE`: checked before a run sends anything, written atomically after it, also
when the run fails or is interrupted."""

from __future__ import annotations

import os
from pathlib import Path

from warmloop.cli.shared import fail
from warmloop.transcript import Transcript


def check_writable(path: Path) -> None:
    """Fail now, before any model work, if `path` cannot take the transcript: a file is
    created and removed beside it, as saving will."""
    if path.is_dir():
        fail(f"--save {path} is a directory; pass a file path")
    probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as exc:
        fail(
            f"could not save the transcript to {path} ({exc.strerror}); "
            "pass a --save path in a writable directory"
        )


def write_transcript(transcript: Transcript, path: Path) -> str | None:
    """Write the transcript's JSON to `path` atomically (a temporary file in the same
    directory, then a rename), so an existing file is never left half written. Returns
    what went wrong, or None."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temp.open("w", encoding="utf-8") as out:
            out.write(transcript.dump())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        return (
            f"could not save the transcript to {path} ({exc.strerror}); "
            "pass a --save path in a writable directory"
        )
    return None


def save_transcript(transcript: Transcript, path: Path) -> None:
    """`write_transcript`; failing to save is an error, not a traceback."""
    problem = write_transcript(transcript, path)
    if problem is not None:
        fail(problem)
