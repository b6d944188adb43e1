"""File names as the tools show them: escaped when they could mislead, taken back escaped.

A newline in a name would split a listing line; a name that is not UTF-8 comes from
os.listdir with lone surrogates that break saving a transcript; control, bidi and separator
characters, a leading quote or edge spaces would be misread. Such names are shown as JSON
string literals, and read_file, list_files and search accept exactly what they show.
"""

from __future__ import annotations

import os
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.workspace_cases import Case, check, write
from warmloop.workspace import Workspace
from warmloop.workspace.names import is_plain, parse_name, show_name

CASES: dict[str, Case] = {
    "newline-name-listed": Case(
        "list_files", {}, write("nl\nname.txt", b"x\n"), equals='README.md\n"nl\\nname.txt"'
    ),
    "newline-name-read": Case(
        "read_file",
        {"path": '"nl\\nname.txt"'},
        write("nl\nname.txt", b"x\n"),
        shows=('"nl\\nname.txt": lines 1-1 of 1',),
    ),
    "newline-name-searched": Case(
        "search", {"pattern": "^x$"}, write("nl\nname.txt", b"x\n"), shows=('"nl\\nname.txt":1: x',)
    ),
    "newline-directory-listed": Case(
        "list_files",
        {"path": '"we\\nird"'},
        write("we\nird/in.txt", b""),
        shows=('"we\\nird/in.txt"',),
    ),
    "non-utf8-name-listed": Case(
        "list_files", {}, write(b"report-\xff.txt", b"x\n"), shows=('"report-\\udcff.txt"',)
    ),
    "non-utf8-name-read-escaped": Case(
        "read_file",
        {"path": '"report-\\udcff.txt"'},
        write(b"report-\xff.txt", b"x\n"),
        shows=('"report-\\udcff.txt": lines 1-1 of 1',),
    ),
    # A raw lone surrogate from a model is made encodable before any tool sees it
    # (tools.parse_arguments), so only the quoted form list_files shows reaches the file.
    "non-utf8-name-read-raw": Case(
        "read_file",
        {"path": "report-\udcff.txt"},
        write(b"report-\xff.txt", b"x\n"),
        error="'report-\ufffd.txt' does not exist in the workspace",
    ),
    "non-utf8-name-searched": Case(
        "search",
        {"pattern": "x"},
        write(b"report-\xff.txt", b"x\n"),
        shows=('"report-\\udcff.txt":1: x',),
    ),
    "lone-surrogate-in-path": Case(
        "read_file", {"path": "x\ud800"}, error="'x\ufffd' does not exist in the workspace"
    ),
    "nul-in-quoted-path": Case("read_file", {"path": '"bad\\u0000name"'}, error="NUL character"),
    "escape-sequence-name": Case(
        "list_files", {}, write("\x1b[2Jred.txt", b""), shows=('"\\u001b[2Jred.txt"',)
    ),
    "bidi-override-name": Case(
        "list_files", {}, write("abc\u202etxt.exe", b""), shows=('"abc\\u202etxt.exe"',)
    ),
    "line-separator-name": Case("list_files", {}, write("a\u2028b", b""), shows=('"a\\u2028b"',)),
    "leading-quote-name": Case(
        "read_file",
        {"path": '"\\"q\\".txt"'},
        write('"q".txt', b"x\n"),
        shows=('"\\"q\\".txt": lines',),
    ),
    "trailing-space-name": Case(
        "list_files", {}, write("space.txt ", b""), shows=('"space.txt "',)
    ),
    "unicode-name-stays-plain": Case(
        "list_files", {}, write("café.txt", b""), equals="README.md\ncafé.txt"
    ),
    "habitually-quoted-path": Case(
        "read_file", {"path": '"README.md"'}, shows=("README.md: lines",)
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
async def test_odd_name_is_shown_escaped_and_taken_back(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    await check(case, tmp_path, monkeypatch, pytestconfig)


# What os.listdir can return: any text, where the bytes that are not UTF-8 come as the lone
# surrogates U+DC80..U+DCFF (surrogateescape); no high surrogate, so none can pair up.
NAMES = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0xD7FF),
        st.characters(min_codepoint=0xE000),
        st.integers(0xDC80, 0xDCFF).map(chr),
    ),
    max_size=30,
)


@given(NAMES)
def test_every_name_comes_back_from_how_it_is_shown(name: str) -> None:
    assert parse_name(show_name(name)) == name


@given(NAMES)
def test_a_shown_name_is_one_line_of_valid_utf8(name: str) -> None:
    shown = show_name(name)
    shown.encode("utf-8")  # strict: no lone surrogate
    assert len(shown.splitlines()) <= 1  # no newline, CR, separator or other line break
    assert not any(unicodedata.category(c) in ("Cc", "Cs", "Cf", "Zl", "Zp") for c in shown)


@given(NAMES)
def test_plain_names_are_shown_as_they_are(name: str) -> None:
    assert (show_name(name) == name) == is_plain(name)


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=1, max_size=60).filter(lambda b: b"/" not in b and b"\0" not in b))
def test_any_file_name_bytes_can_be_listed_and_read_back(raw: bytes) -> None:
    if raw in (b".", b".."):
        return
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(os.fsencode(tmp), raw), "wb") as file:
            file.write(b"found me\n")
        workspace = Workspace(Path(tmp))
        shown = workspace.list_files()
        shown.encode("utf-8")
        assert shown == show_name(os.fsdecode(raw))
        assert workspace.read_file(shown).endswith("1 | found me")
        assert workspace.search("found", shown).splitlines()[0] == f"{shown}:1: found me"
