"""The embedded model's record: `local` (and `local:<name>`), in process, priced never,
registered through the same call a third party makes (docs/adding-a-provider.md).

Settings go to llama-cpp-python's sampler through the prompt (`TemplatePrompt.sampling`),
never into its tokens (`local/sampling.py`); it has no reasoning and calls one tool a step.
"""

from __future__ import annotations

from warmloop.providers.local.models import DEFAULT_MODEL, DEFAULT_N_CTX, MODELS
from warmloop.providers.model_settings import Place
from warmloop.providers.records import ProviderRecord
from warmloop.providers.registry import register_provider

SETTINGS = tuple(
    Place(name, (name,)) for name in ("temperature", "top_p", "max_tokens", "stop", "seed")
)

RECORD = ProviderRecord(
    "local",
    "warmloop.providers.local.model:LocalModel",
    needs_name=None,
    extra="local",
    example="local",
    options="warmloop.providers.local.options:LocalOptions",
    settings=SETTINGS,
    in_process=True,
    about=(
        f"`local` is the embedded {MODELS[DEFAULT_MODEL].title} (a {DEFAULT_N_CTX}-token "
        "window unless --n-ctx says another); other embedded models: "
        + ", ".join(f"local:{name}" for name in MODELS if name != DEFAULT_MODEL)
        + "."
    ),
    checks_answers=True,
)

register_provider(RECORD)
