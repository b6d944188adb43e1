"""Refusing real model requests in a test run (pydantic-ai's `ALLOW_MODEL_REQUESTS`): a
test suite turns them off once, and a test that reaches a provider's API by mistake (an
agent made at import with a real model, an override forgotten) fails loudly instead of
spending money or hanging on the network.

    import warmloop.testing

    warmloop.testing.ALLOW_MODEL_REQUESTS = False  # in conftest.py

or `WARMLOOP_ALLOW_MODEL_REQUESTS=0` in the test run's environment. Every request a
provider's SDK would send (Anthropic, OpenAI, Chat Completions servers, Gemini) is refused
with `ModelRequestsRefused` before it leaves; the scripted model and a model of your own
are never refused, nor the embedded model, which sends nothing anywhere.
"""

from __future__ import annotations

import os

from warmloop.errors import ModelRequestsRefused

ALLOW_MODEL_REQUESTS = True
"""Whether models may send requests to a provider's API; set False in a test suite."""
ALLOW_VARIABLE = "WARMLOOP_ALLOW_MODEL_REQUESTS"
"""The environment variable that turns requests off for a whole process (`0`, `false`)."""
OFF = ("0", "false", "no", "off")


def model_requests_allowed() -> bool:
    """Whether a request may go to a provider's API now (the switch and the variable)."""
    return ALLOW_MODEL_REQUESTS and os.environ.get(ALLOW_VARIABLE, "").strip().lower() not in OFF


def check_allow_model_requests(model: str) -> None:
    """`ModelRequestsRefused` naming `model` when requests are off (see the module)."""
    if model_requests_allowed():
        return
    how = (
        "warmloop.testing.ALLOW_MODEL_REQUESTS is False"
        if not ALLOW_MODEL_REQUESTS
        else f"{ALLOW_VARIABLE}={os.environ.get(ALLOW_VARIABLE)}"
    )
    raise ModelRequestsRefused(
        f"a request to {model} was refused: model requests are off in this process ({how}); "
        "run the agent on a ScriptedModel in tests (with agent.override(model=...))"
    )
