"""Which definition a line of a file is in: `decoder.py:85 in py_scanstring: raise ...`.

A search hit names a file and a line; a question asks which function raises a message or
which class holds a setting. The definition a line is in is then the answer, so the tools
show it beside the line, for any model. Python is read by its syntax tree: the innermost
function or class whose lines hold the line, qualified by the classes and functions around
it (`JSONDecoder.raw_decode`); a `def` or `class` line is in what encloses it, since the
line shows its own name. Other source files are read by indentation: the nearest line above
with less indentation that defines a name (`function f`, `fn f`, `class C`, ...), and so on
outward. A file that does not parse, and any file that is not source, has no outline: its
hits are shown as before. Pure and deterministic.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

PYTHON_SUFFIXES = (".py", ".pyi")
INDENTED_SUFFIXES = (
    *(".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".kts"),
    *(".swift", ".scala", ".cs", ".c", ".h", ".cc", ".cpp", ".hpp", ".rb", ".php", ".lua"),
)
"""Source whose definitions start with a keyword and whose bodies are indented."""
KEYWORD_DEFINITION = re.compile(
    r"^(?:(?:export|pub(?:\([^)]*\))?|public|private|protected|internal|static|abstract|final"
    r"|async|default|open|override)\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|trait|interface|impl|module|object)\s+"
    r"(?P<name>[A-Za-z_$][\w$]*)"
)
"""A line that opens a definition by a keyword (`export function f`, `pub fn f`, `class C`)."""


class Outline:
    """The qualified name of the definition each line of one file is in (1-based)."""

    def __init__(self, within: dict[int, str]) -> None:
        self._within = within

    @classmethod
    def of(cls, path: str, text: str) -> Outline:
        """The outline of the file shown as `path` holding `text`; empty when the file is
        not source this module can read, or does not parse."""
        if path.endswith(PYTHON_SUFFIXES):
            return cls(_python(text))
        if path.endswith(INDENTED_SUFFIXES):
            return cls(_indented(text))
        return cls({})

    def at(self, line: int) -> str | None:
        """The definition line `line` is in, or None at the top level."""
        return self._within.get(line)


def _python(text: str) -> dict[int, str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}  # not Python after all, a NUL, or nested past the parser: no outline
    within: dict[int, str] = {}
    for start, end, name in _spans(tree):
        # Outer spans come first, so an inner definition's lines are written over them.
        for line in range(start + 1, end + 1):
            within[line] = name
    return within


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _spans(tree: ast.Module) -> Iterator[tuple[int, int, str]]:
    """(def line, last line, qualified name) of every function and class in `tree`, outer
    before inner. Iterative: a deeply nested file cannot exhaust the stack."""
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, outer = stack.pop()
        if isinstance(node, DEFINITIONS):
            name = f"{outer}{node.name}"
            yield node.lineno, node.end_lineno or node.lineno, name
            outer = f"{name}."
        stack.extend((child, outer) for child in reversed(list(ast.iter_child_nodes(node))))


def _indented(text: str) -> dict[int, str]:
    within: dict[int, str] = {}
    open_: list[tuple[int, str]] = []  # (indentation, qualified name), outermost first
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if not stripped or stripped.startswith(("}", ")", "]")):
            if open_:
                within[number] = open_[-1][1]
            continue
        indent = len(line) - len(stripped)
        while open_ and open_[-1][0] >= indent:
            open_.pop()
        if open_:
            within[number] = open_[-1][1]
        defined = KEYWORD_DEFINITION.match(stripped)
        if defined is not None:
            outer = f"{open_[-1][1]}." if open_ else ""
            open_.append((indent, f"{outer}{defined['name']}"))
    return within
