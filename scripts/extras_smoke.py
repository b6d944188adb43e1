"""Run inside a clean venv holding warmloop with one extra: select and render with each
provider that extra brings, check what it must not bring, and run the README's first
example on the scripted model (it needs no key) against the installed package.

    python scripts/extras_smoke.py none|anthropic|gemini|local

Exit code 0 when every check passes; the first failure is printed and exits 1. Uses only
warmloop and the standard library (the tests' helpers are not installed).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import warmloop
from warmloop import ConfigurationError, ProviderError, SystemText, Transcript, UserText, tool
from warmloop.providers.select import resolve_model

CHECKOUT = Path(__file__).resolve().parent.parent
CLOSED = "http://127.0.0.1:9"
"""A port nothing listens on: requests fail at once with a connection error."""


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return key


TRANSCRIPT = Transcript([SystemText("Be brief."), UserText("Look up k.")])
SPECS = {
    "none": [
        "openai:gpt-5",
        "openai-chat:gpt-5",
        "deepseek:deepseek-chat",
        f"openai-compatible:{CLOSED}/v1#m",
    ],
    "anthropic": ["anthropic:claude-sonnet-4-6"],
    "gemini": ["gemini:gemini-2.5-flash"],
    "local": ["local"],
}
MISSING = {"none": ["anthropic", "gemini", "local"], "anthropic": [], "gemini": [], "local": []}
SDKS = {"anthropic": "anthropic", "gemini": "google.genai", "local": "llama_cpp"}


def check(condition: bool, what: str) -> None:
    if not condition:
        print(f"FAIL: {what}", file=sys.stderr)
        raise SystemExit(1)


def renders(spec: str) -> None:
    model = resolve_model(spec)
    rendered = model.render(TRANSCRIPT, (lookup.spec,))
    check(rendered.length > 0, f"{spec} renders a request")
    again = model.render(TRANSCRIPT, (lookup.spec,))
    check(again.stream == rendered.stream, f"{spec} renders the same bytes twice")
    print(f"ok: {spec} selects and renders ({rendered.length} characters)")


def refuses(prefix: str) -> None:
    """Without its extra, a provider says which extra to install when it is selected."""
    try:
        resolve_model(prefix if prefix == "local" else f"{prefix}:x")
    except ConfigurationError as exc:
        check(f"warmloop[{prefix}]" in str(exc), f"{prefix} names its extra ({exc})")
        print(f"ok: {prefix} without its extra says: {exc}")
        return
    check(False, f"{prefix} works without its extra")


def tools_refused() -> None:
    """Without the code or mcp extra, CodeMode and McpServer are refused when made, naming
    the extra (not when the model first calls run_code, nor after a server's time-out)."""
    from warmloop.tools.code import CodeMode
    from warmloop.tools.mcp import McpServer

    needs: dict[str, tuple[str, Callable[[], object]]] = {
        "code": ("pydantic_monty", CodeMode),
        "mcp": ("mcp", lambda: McpServer("files", command="mcp-files")),
    }
    for extra, (module, make) in needs.items():
        if installed(module):
            continue
        try:
            make()
        except ConfigurationError as exc:
            check(f"warmloop[{extra}]" in str(exc), f"{extra} names its extra ({exc})")
            print(f"ok: {extra} without its extra says: {exc}")
            continue
        check(False, f"{extra} is accepted without its extra")


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


async def network_failure_is_a_provider_error() -> None:
    """The gemini extra's SDK surfaces httpx2 errors: they must become a ProviderError."""
    from google import genai
    from google.genai import types

    from warmloop.providers.gemini.model import GeminiModel

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=CLOSED))
    model = GeminiModel("gemini-2.5-flash", client=client, max_retries=0, timeout=5)
    try:
        await model.send(model.render(TRANSCRIPT, ()), session_id=TRANSCRIPT.id)
    except ProviderError as exc:
        print(f"ok: gemini network failure is a ProviderError: {exc}")
        return
    check(False, "a request to a closed port succeeded")


def first_example() -> None:
    """The README's first example on the scripted model (it needs no key), as a user who
    installed the wheel would run it: in a fresh interpreter, outside the checkout."""
    installed_at = Path(warmloop.__file__).resolve()
    check(
        CHECKOUT not in installed_at.parents,
        f"warmloop is imported from the installed wheel, not the checkout ({installed_at})",
    )
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    keyless = [code for code in examples if "ScriptedModel(" in code]
    check(bool(keyless), "the README has an example on the scripted model")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.endswith("_API_KEY")}
    result = subprocess.run(
        [sys.executable, "-c", keyless[0]], capture_output=True, text=True, env=env, check=False
    )
    check(
        result.returncode == 0 and result.stderr == "",
        f"the README's scripted-model example runs (exit {result.returncode}): {result.stderr}",
    )
    print("ok: the README's scripted-model example runs from the installed wheel")


def main(extra: str) -> None:
    check(extra in SPECS, f"known extra (none, anthropic, gemini, local), got {extra!r}")
    first_example()
    for variable in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        os.environ.setdefault(variable, "smoke-test-key")
    if extra in SDKS:
        check(installed(SDKS[extra]), f"the {extra} extra installs {SDKS[extra]}")
    for spec in SPECS[extra]:
        renders(spec)
    for prefix in MISSING[extra]:
        refuses(prefix)
    tools_refused()
    if extra == "gemini":
        asyncio.run(network_failure_is_a_provider_error())
    if extra == "local":
        engine = resolve_model("local").engine()  # type: ignore[attr-defined]
        print(f"ok: the local engine loads ({type(engine).__name__})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "none")
