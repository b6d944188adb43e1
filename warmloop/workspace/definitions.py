"""What one file defines: its classes, functions, constants and imports, as the file spells them.

The map of a workspace, `find_definition` and the search that forgives all read files as
their definitions. Python is read by its syntax tree (`ast`): every class, function and
method, every module constant and class attribute with its value, the bases of each class,
the first line of each docstring, and the names each import binds (so a name can be
followed to the module it comes from). Headers and values are the file's own text
(`def order_total(stock: Stock, lines: list[OrderLine]) -> float`, `MAXINT = 2**31-1`),
its lines joined and its runs of white space made one space, never re-written by
`ast.unparse`: what a tool shows is what a read would show. Other source files are read by
their keyword definitions at the left margin (`function f`, `fn f`, `class C`) and settings
files (`.toml`, `.ini`, `.cfg`, `.env`) by their `key = value` lines. Pure and deterministic.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from warmloop.workspace.outline import INDENTED_SUFFIXES, KEYWORD_DEFINITION, PYTHON_SUFFIXES

SETTINGS_SUFFIXES = (".toml", ".ini", ".cfg", ".env", ".properties", ".conf")
MAX_HEADER_CHARS = 160
MAX_VALUE_CHARS = 60
MAX_DOC_CHARS = 1000
"""A docstring is kept this long for the search that forgives; its first line is shown."""
SPACE = re.compile(r"\s+")
BRACKET_SPACE = re.compile(r"([(\[]) ")
CLOSING_SPACE = re.compile(r",? ([)\]])")
SETTING = re.compile(r"^(?P<name>[A-Za-z_][\w.-]*)\s*[=:]\s*(?P<value>\S.*?)\s*$")
SECTION = re.compile(r"^\[+\s*(?P<name>[^\]]+?)\s*\]+\s*$")

CLASS, FUNCTION, METHOD, CONSTANT, ATTRIBUTE, SETTING_KIND = (
    "class",
    "function",
    "method",
    "constant",
    "attribute",
    "setting",
)


@dataclass(frozen=True)
class Definition:
    """A name one file defines: `name` qualified inside the file (`Stock.remove`), what it
    is (`kind`), its lines, its header as the file spells it, its docstring, and for a
    class its bases as written (`ProtocolError`, `socketserver.TCPServer`)."""

    name: str
    kind: str
    line: int
    end_line: int
    header: str
    doc: str = ""
    bases: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        """The last part of the name (`remove` for `Stock.remove`)."""
        return self.name.rsplit(".", 1)[-1]

    @property
    def summary(self) -> str:
        """The docstring's first line ("" when it has none)."""
        return self.doc.strip().split("\n", 1)[0].strip()

    @property
    def top_level(self) -> bool:
        """Whether the file defines it outside any class or function."""
        return "." not in self.name


@dataclass(frozen=True)
class Imported:
    """A name an import binds in a file: `from ._parser import loads as load` binds `load`
    to `loads` of the module `._parser` (`module` keeps the leading dots of a relative
    import); `import xml.dom` binds `xml` to the module itself (`original` is "")."""

    name: str
    module: str
    original: str
    line: int


@dataclass(frozen=True)
class Parsed:
    """What one file defines and imports, and its module docstring."""

    definitions: tuple[Definition, ...] = ()
    imports: tuple[Imported, ...] = ()
    doc: str = ""


def parse(path: str, text: str) -> Parsed:
    """What the file shown as `path` holding `text` defines: nothing for a file of no kind
    read here, or Python that does not parse."""
    if path.endswith(PYTHON_SUFFIXES):
        return _python(text)
    if path.endswith(INDENTED_SUFFIXES):
        return _keyword_source(text)
    if path.endswith(SETTINGS_SUFFIXES):
        return _settings(text)
    return Parsed()


def one_line(text: str, limit: int = MAX_HEADER_CHARS) -> str:
    """`text` on one line, its white space runs made one space, cut to `limit` with `…`."""
    flat = SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _python(text: str) -> Parsed:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Parsed()  # not Python after all, a NUL, or nested past the parser
    reader = _PythonReader(text.split("\n"))
    definitions: list[Definition] = []
    imports: list[Imported] = []
    for node in _module_statements(tree.body):
        if isinstance(node, ast.Import | ast.ImportFrom):
            imports += _imports(node)
        else:
            definitions += reader.definitions(node, "")
    doc = ast.get_docstring(tree, clean=True) or ""
    return Parsed(tuple(definitions), tuple(imports), doc[:MAX_DOC_CHARS])


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a module runs at its top level, also inside `if`, `try` and `with`
    blocks (`try: import gzip except ImportError: gzip = None`), never inside a function
    or a class."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If | ast.With | ast.AsyncWith):
            stack += reversed([*node.body, *getattr(node, "orelse", [])])
        elif isinstance(node, ast.Try | ast.TryStar):
            handled = [s for h in node.handlers for s in h.body]
            stack += reversed([*node.body, *handled, *node.orelse, *node.finalbody])
        else:
            yield node


def _imports(node: ast.Import | ast.ImportFrom) -> list[Imported]:
    if isinstance(node, ast.Import):  # `import a.b` binds `a`; `import a.b as c` binds `c`
        return [
            Imported(a.asname, a.name, "", node.lineno)
            if a.asname
            else Imported(a.name.split(".")[0], a.name.split(".")[0], "", node.lineno)
            for a in node.names
        ]
    module = "." * node.level + (node.module or "")
    return [
        Imported(a.asname or a.name, module, a.name, node.lineno)
        for a in node.names
        if a.name != "*"
    ]


class _PythonReader:
    """Definitions of one Python file, spelled as its lines spell them."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def segment(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        """The text between two (line, column) places, comments dropped, on one line."""
        (first, column), (last, end_column) = start, end
        if first == last:
            return self.lines[first - 1][column:end_column]
        parts = [self.lines[first - 1][column:]]
        parts += self.lines[first : last - 1]
        parts.append(self.lines[last - 1][:end_column])
        return " ".join(_uncommented(p) for p in parts)

    def header(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
        """`def f(x: int) -> str` or `class C(Base)`: the file's text from the keyword to
        the colon that opens the body."""
        body = node.body[0]
        text = self.segment((node.lineno, node.col_offset), (body.lineno, body.col_offset))
        text = _uncommented(text).rstrip()
        if text.endswith(";"):
            text = text[:-1].rstrip()
        # A signature over several lines, joined: `f( a, b, )` reads `f(a, b)`.
        text = BRACKET_SPACE.sub(r"\1", one_line(text.removesuffix(":"), 10 * MAX_HEADER_CHARS))
        return one_line(CLOSING_SPACE.sub(r"\1", text))

    def value(self, node: ast.expr) -> str:
        end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
        return one_line(self.segment((node.lineno, node.col_offset), end), MAX_VALUE_CHARS)

    def definitions(self, node: ast.stmt, outer: str) -> list[Definition]:
        """What `node` defines, inside the class `outer` ("" at the module's top level)."""
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef):
            name = f"{outer}{node.name}"
            bases = tuple(self.value(b) for b in node.bases)
            found = [
                Definition(name, CLASS, node.lineno, end, self.header(node), _doc(node), bases)
            ]
            for child in node.body:
                found += self.definitions(child, f"{name}.")
            return found
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kind = METHOD if outer else FUNCTION
            return [
                Definition(
                    f"{outer}{node.name}", kind, node.lineno, end, self.header(node), _doc(node)
                )
            ]
        targets, value = _assigned(node)
        if value is None:
            return []
        shown = self.value(value)
        kind = ATTRIBUTE if outer else CONSTANT
        return [
            Definition(f"{outer}{t}", kind, node.lineno, end, one_line(f"{t} = {shown}"))
            for t in targets
        ]


def _assigned(node: ast.stmt) -> tuple[list[str], ast.expr | None]:
    """The plain names an assignment binds and its value (`a = b = 1` binds a and b)."""
    if isinstance(node, ast.Assign):
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        return names, node.value if names else None
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
        return [node.target.id], node.value
    return [], None


def _doc(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    return (ast.get_docstring(node, clean=True) or "")[:MAX_DOC_CHARS]


def _uncommented(line: str) -> str:
    """`line` without a trailing `# comment` (a `#` inside quotes is kept)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:index].rstrip()
    return line


def _keyword_source(text: str) -> Parsed:
    """Definitions at the left margin of a source file read by keywords (`function f`)."""
    found = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line[:1].isspace():
            continue
        defined = KEYWORD_DEFINITION.match(line)
        if defined is not None:
            header = one_line(line.rstrip().removesuffix("{").rstrip())
            kind = CLASS if re.search(r"\b(?:class|struct|interface|trait)\s", line) else FUNCTION
            found.append(Definition(defined["name"], kind, number, number, header))
    return Parsed(tuple(found))


def _settings(text: str) -> Parsed:
    """`key = value` lines of a settings file, each named by its section (`reorder.batch`)."""
    found = []
    section = ""
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if (head := SECTION.match(stripped)) is not None:
            section = f"{head['name']}."
        elif (setting := SETTING.match(stripped)) is not None and not line[:1].isspace():
            header = one_line(f"{setting['name']} = {setting['value']}", MAX_VALUE_CHARS)
            name = f"{section}{setting['name']}"
            found.append(Definition(name, SETTING_KIND, number, number, header))
    return Parsed(tuple(found))
