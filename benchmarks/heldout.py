"""The held-out eval: questions over third-party code no one on this project wrote.

Five packages of the running Python's standard library (tomllib, json, wsgiref, zoneinfo,
logging), each
copied by `prepare` into its own workspace under the cache directory (nothing downloaded,
nothing committed), asked the same kinds of question as the example-workspace eval:
lookups of a value in a named file, names found by search, two-read chains (one file
names what to look up in another) and the function or class enclosing a line (zoneinfo
and logging, added in issue 37 with their questions written before any change was measured
on them). Answers were written for CPython 3.11's files and are
graded by a regular expression.

These questions are held out: the taught prompt, its worked examples and the search help
are never tuned on them. A change to the prompt is measured here, not written for here.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from warmloop.providers.local.gemma import cache_dir

PACKAGES = ("tomllib", "json", "wsgiref", "zoneinfo", "logging")
UNSEEN_PACKAGES = ("xmlrpc", "h11")
"""The packages of `UNSEEN`: one of the standard library, one third-party package installed
beside warmloop (a dependency of httpx), neither used by any eval before."""


@dataclass(frozen=True)
class Question:
    """A task with a known answer in one workspace; `accept` is searched in the answer."""

    kind: str
    task: str
    accept: str
    codebase: str = ""
    """The workspace it is asked over ("" for the example workspace)."""


def held(codebase: str, kind: str, task: str, accept: str) -> Question:
    return Question(kind, task, accept, codebase)


NUMBER = r"(?<![\d.]){}(?![\d.])"


def only_file(stem: str) -> str:
    """An answer that names the file `<stem>.py` and no other Python file (a list of
    guesses is not an answer)."""
    other = rf"\b(?!{stem}\.py\b)\w+\.py\b"
    return rf"(?s)^(?!.*{other}).*\b{stem}\.py\b"


QUESTIONS: tuple[Question, ...] = (
    # tomllib
    held(
        "tomllib",
        "lookup",
        "What is the value of EXPLICIT_NEST in tomllib/_parser.py?",
        NUMBER.format("1"),
    ),
    held(
        "tomllib",
        "lookup",
        "What is the value of the FROZEN flag in tomllib/_parser.py?",
        NUMBER.format("0"),
    ),
    held(
        "tomllib",
        "lookup",
        "What maxsize does the lru_cache on cached_tz use in tomllib/_re.py?",
        r"\bnone\b",
    ),
    held(
        "tomllib",
        "lookup",
        "Besides letters and digits, which characters are in BARE_KEY_CHARS in tomllib/_parser.py?",
        r"-_|_-|hyphen|dash",
    ),
    held(
        "tomllib",
        "search",
        "Which function in tomllib parses an inline table?",
        r"\bparse_inline_table\b",
    ),
    held(
        "tomllib",
        "search",
        "Which exception class does tomllib raise for invalid TOML?",
        r"\bTOMLDecodeError\b",
    ),
    held(
        "tomllib",
        "search",
        "Which function in tomllib turns a regex match into a datetime?",
        r"\bmatch_to_datetime\b",
    ),
    held(
        "tomllib",
        "search",
        "Which file of tomllib defines RE_NUMBER?",
        only_file("_re"),
    ),
    held("tomllib", "search", "Which function in tomllib skips a comment?", r"\bskip_comment\b"),
    held(
        "tomllib",
        "two reads",
        "tomllib's load function returns the result of another function; what is its name?",
        r"\bloads\b",
    ),
    held(
        "tomllib",
        "two reads",
        "What is the base class of the exception that tomllib/__init__.py imports from ._parser?",
        r"\bValueError\b",
    ),
    # json
    held("json", "lookup", "What is __version__ in json/__init__.py?", r"2\.0\.9"),
    held(
        "json",
        "lookup",
        "What is the default --indent of the command line in json/tool.py?",
        NUMBER.format("4"),
    ),
    held(
        "json",
        "lookup",
        "Which encoding does detect_encoding in json/__init__.py return for a UTF-8 BOM?",
        r"utf-8-sig",
    ),
    held("json", "lookup", "Who is the __author__ in json/__init__.py?", r"Ippolito"),
    held("json", "lookup", "What float value does NegInf hold in json/decoder.py?", r"-\s*inf"),
    held(
        "json",
        "search",
        "Which function in the json package decodes a \\uXXXX escape?",
        r"\b_decode_uXXXX\b",
    ),
    held(
        "json",
        "search",
        "Which exception class does the json package raise when decoding fails?",
        r"\bJSONDecodeError\b",
    ),
    held(
        "json",
        "search",
        "Which file of the json package defines NUMBER_RE?",
        only_file("scanner"),
    ),
    held(
        "json",
        "search",
        "Which function in the json package is the pure-Python scanner factory?",
        r"\bpy_make_scanner\b",
    ),
    held(
        "json",
        "two reads",
        "json/__init__.py makes _default_encoder from a class; which file defines that class?",
        only_file("encoder"),
    ),
    held(
        "json",
        "two reads",
        "json/__init__.py makes _default_decoder from a class; which file defines that class?",
        only_file("decoder"),
    ),
    # wsgiref
    held(
        "wsgiref",
        "lookup",
        "What is __version__ in wsgiref/simple_server.py?",
        r"(?<![\d.])0\.2(?![\d.])",
    ),
    held(
        "wsgiref",
        "lookup",
        "What is the http_version of BaseHandler in wsgiref/handlers.py?",
        r"(?<![\d.])1\.0(?![\d.])",
    ),
    held(
        "wsgiref",
        "lookup",
        "What is the error_status of BaseHandler in wsgiref/handlers.py?",
        r"\b500\b",
    ),
    held(
        "wsgiref",
        "lookup",
        "What default blksize does FileWrapper take in wsgiref/util.py?",
        NUMBER.format("8192"),
    ),
    held(
        "wsgiref",
        "lookup",
        "Which port does the demo at the end of wsgiref/simple_server.py serve on?",
        NUMBER.format("8000"),
    ),
    held(
        "wsgiref",
        "search",
        "Which function in wsgiref tells whether a header is hop-by-hop?",
        r"\bis_hop_by_hop\b",
    ),
    held(
        "wsgiref",
        "search",
        "Which function in wsgiref formats a timestamp as an HTTP date?",
        r"\bformat_date_time\b",
    ),
    held(
        "wsgiref",
        "search",
        "Which file of wsgiref defines the Headers class?",
        only_file("headers"),
    ),
    held(
        "wsgiref",
        "search",
        "Which function in wsgiref shifts a name from PATH_INFO to SCRIPT_NAME?",
        r"\bshift_path_info\b",
    ),
    held(
        "wsgiref",
        "two reads",
        "ServerHandler in wsgiref/simple_server.py subclasses a class; which file defines it?",
        only_file("handlers"),
    ),
    held(
        "wsgiref",
        "two reads",
        "BaseHandler in wsgiref/handlers.py sets headers_class to a class; which file defines it?",
        only_file("headers"),
    ),
    # zoneinfo (issue 37: written before any change was measured on them)
    held(
        "zoneinfo", "lookup", "What year is EPOCH in zoneinfo/_zoneinfo.py?", NUMBER.format("1970")
    ),
    held(
        "zoneinfo",
        "lookup",
        "What is the base class of ZoneInfoNotFoundError in zoneinfo/_common.py?",
        r"\bKeyError\b",
    ),
    held(
        "zoneinfo",
        "lookup",
        "Which class does InvalidTZPathWarning inherit from in zoneinfo/_tzpath.py?",
        r"\bRuntimeWarning\b",
    ),
    held(
        "zoneinfo",
        "lookup",
        "Which environment variable does zoneinfo/_tzpath.py read the time zone path from?",
        r"\bPYTHONTZPATH\b",
    ),
    held(
        "zoneinfo",
        "search",
        "Which function in zoneinfo lists every available time zone?",
        r"\bavailable_timezones\b",
    ),
    held(
        "zoneinfo",
        "search",
        "Which function in zoneinfo finds the file of a time zone key?",
        r"\bfind_tzfile\b",
    ),
    held("zoneinfo", "search", "Which file of zoneinfo defines _TZifHeader?", only_file("_common")),
    held(
        "zoneinfo",
        "search",
        "Which exception does zoneinfo raise when no time zone has the key asked for?",
        r"\bZoneInfoNotFoundError\b",
    ),
    held(
        "zoneinfo",
        "enclosing",
        "Which function raises 'is not a valid TZ string'?",
        r"\b_parse_tz_str\b",
    ),
    held(
        "zoneinfo",
        "enclosing",
        "Which function raises the error 'Invalid time'?",
        r"\b_parse_transition_time\b",
    ),
    held(
        "zoneinfo",
        "enclosing",
        "Which method raises 'fromutc() requires a datetime argument'?",
        r"\bfromutc\b",
    ),
    held(
        "zoneinfo",
        "enclosing",
        "Which function raises 'No time zone found with key'?",
        r"\bload_tzdata\b",
    ),
    held(
        "zoneinfo",
        "two reads",
        "What is the base class of the exception zoneinfo/__init__.py imports from ._common?",
        r"\bKeyError\b",
    ),
    held(
        "zoneinfo",
        "two reads",
        "zoneinfo/__init__.py imports a module with `from . import`; which file is it?",
        only_file("_tzpath"),
    ),
    # logging (issue 37: written before any change was measured on them)
    held(
        "logging",
        "lookup",
        "What is DEFAULT_LOGGING_CONFIG_PORT in logging/config.py?",
        NUMBER.format("9030"),
    ),
    held(
        "logging",
        "lookup",
        "What is DEFAULT_UDP_LOGGING_PORT in logging/handlers.py?",
        NUMBER.format("9021"),
    ),
    held(
        "logging",
        "lookup",
        "What is BASIC_FORMAT in logging/__init__.py?",
        r"levelname\)s:%\(name\)s:%\(message",
    ),
    held(
        "logging", "lookup", "What number is WARNING in logging/__init__.py?", NUMBER.format("30")
    ),
    held(
        "logging",
        "search",
        "Which class in logging rotates its log file at timed intervals?",
        r"\bTimedRotatingFileHandler\b",
    ),
    held(
        "logging",
        "search",
        "Which function in logging checks that a string is a valid Python identifier?",
        r"\bvalid_ident\b",
    ),
    held(
        "logging", "search", "Which file of logging defines SysLogHandler?", only_file("handlers")
    ),
    held(
        "logging",
        "search",
        "Which port does logging use for syslog over UDP?",
        NUMBER.format("514"),
    ),
    held("logging", "enclosing", "Which function raises 'Unknown level'?", r"\b_checkLevel\b"),
    held(
        "logging",
        "enclosing",
        "Which function raises 'Unrecognised argument(s)'?",
        r"\bbasicConfig\b",
    ),
    held(
        "logging",
        "enclosing",
        "Which method raises 'A logger name must be a string'?",
        r"\bgetLogger\b",
    ),
    held(
        "logging",
        "enclosing",
        'Which method raises "dictionary doesn\'t specify a version"?',
        r"\bconfigure\b",
    ),
    held(
        "logging",
        "two reads",
        "BaseRotatingHandler in logging/handlers.py subclasses a logging class; which file "
        "defines it?",
        r"\b__init__\.py\b",
    ),
    held(
        "logging",
        "two reads",
        "MemoryHandler in logging/handlers.py subclasses a class; what is that class's own "
        "base class?",
        r"\bHandler\b(?!\w)",
    ),
)


UNSEEN: tuple[Question, ...] = (
    # Written on 2026-12-07 (issue 50), before any change of that issue, over two packages
    # no eval had used: xmlrpc (standard library) and h11 (third-party). The same kinds as
    # QUESTIONS, in a user's words; answers for CPython 3.11.7's xmlrpc and h11 0.16.0.
    # xmlrpc
    held(
        "xmlrpc",
        "lookup",
        "What is MAXINT in xmlrpc/client.py?",
        r"2\s*\*\*\s*31\s*-\s*1|2147483647",
    ),
    held(
        "xmlrpc",
        "lookup",
        "What fault code is METHOD_NOT_FOUND in xmlrpc/client.py?",
        NUMBER.format("-32601"),
    ),
    held(
        "xmlrpc",
        "lookup",
        "What is the encode_threshold of SimpleXMLRPCRequestHandler in xmlrpc/server.py?",
        NUMBER.format("1400"),
    ),
    held(
        "xmlrpc",
        "lookup",
        "Besides '/', which path does SimpleXMLRPCRequestHandler in xmlrpc/server.py accept "
        "XML-RPC calls on?",
        r"/RPC2\b",
    ),
    held(
        "xmlrpc",
        "lookup",
        "How many bytes may a gzipped payload decode to by default in xmlrpc/client.py?",
        r"(?<![\d.])20971520(?![\d.])|20\s*\*\s*1024\s*\*\s*1024",
    ),
    held(
        "xmlrpc",
        "lookup",
        "Does SimpleXMLRPCServer in xmlrpc/server.py allow reusing the address?",
        r"\btrue\b|\byes\b",
    ),
    held(
        "xmlrpc",
        "lookup",
        "Which user agent does the Transport of xmlrpc/client.py send?",
        r"Python-xmlrpc",
    ),
    held(
        "xmlrpc",
        "search",
        "Which function in xmlrpc escapes ampersands and angle brackets?",
        r"\bescape\b",
    ),
    held(
        "xmlrpc",
        "search",
        "Which class in xmlrpc boxcars several method calls into one request?",
        r"\bMultiCall\b",
    ),
    held(
        "xmlrpc",
        "search",
        "Which file of xmlrpc defines SimpleXMLRPCDispatcher?",
        only_file("server"),
    ),
    held(
        "xmlrpc",
        "search",
        "Which function in xmlrpc compresses data with gzip?",
        r"\bgzip_encode\b",
    ),
    held(
        "xmlrpc",
        "search",
        "Which exception class does xmlrpc raise for an XML-RPC fault?",
        r"\bFault\b",
    ),
    held(
        "xmlrpc",
        "search",
        "Which function in xmlrpc returns the public methods of an object?",
        r"\blist_public_methods\b",
    ),
    held(
        "xmlrpc",
        "enclosing",
        "Which method raises 'cannot marshal recursive sequences'?",
        r"\bdump_array\b",
    ),
    held(
        "xmlrpc",
        "enclosing",
        "Which method raises 'dictionary key must be string'?",
        r"\bdump_struct\b",
    ),
    held(
        "xmlrpc",
        "enclosing",
        "Which function raises 'max gzipped payload length exceeded'?",
        r"\bgzip_decode\b",
    ),
    held("xmlrpc", "enclosing", "Which method raises 'bad boolean value'?", r"\bend_boolean\b"),
    held(
        "xmlrpc",
        "enclosing",
        "Which method raises 'cannot marshal None unless allow_none is enabled'?",
        r"\bdump_nil\b",
    ),
    held(
        "xmlrpc",
        "two reads",
        "ProtocolError in xmlrpc/client.py subclasses a class; what is that class's own base "
        "class?",
        r"\bException\b",
    ),
    held(
        "xmlrpc",
        "two reads",
        "xmlrpc/server.py imports Fault from a module; which file defines Fault?",
        only_file("client"),
    ),
    held(
        "xmlrpc",
        "two reads",
        "SimpleXMLRPCServer in xmlrpc/server.py has a default request handler class; what is "
        "that class's base class?",
        r"\bBaseHTTPRequestHandler\b",
    ),
    # h11
    held("h11", "lookup", "What is __version__ in h11/_version.py?", r"0\.16\.0"),
    held(
        "h11",
        "lookup",
        "What is DEFAULT_MAX_INCOMPLETE_EVENT_SIZE in h11/_connection.py?",
        r"16\s*\*\s*1024|(?<![\d.])16384(?![\d.])",
    ),
    held(
        "h11",
        "lookup",
        "What is CONTENT_LENGTH_MAX_DIGITS in h11/_headers.py?",
        NUMBER.format("20"),
    ),
    held(
        "h11",
        "lookup",
        "What default error_status_hint does ProtocolError take in h11/_util.py?",
        NUMBER.format("400"),
    ),
    held(
        "h11",
        "lookup",
        "Which product name does PRODUCT_ID in h11/__init__.py start with?",
        r"python-h11",
    ),
    held(
        "h11",
        "lookup",
        "Which HTTP version is the only one write_request in h11/_writers.py sends?",
        r"(?<![\d.])1\.1(?![\d.])",
    ),
    held(
        "h11",
        "search",
        "Which function in h11 splits a comma-separated header into its values?",
        r"\bget_comma_header\b",
    ),
    held(
        "h11",
        "search",
        "Which class in h11 reads a body whose length a Content-Length header gives?",
        r"\bContentLengthReader\b",
    ),
    held("h11", "search", "Which file of h11 defines ReceiveBuffer?", only_file("_receivebuffer")),
    held(
        "h11",
        "search",
        "Which exception does h11 raise when the peer on the other end breaks the protocol?",
        r"\bRemoteProtocolError\b",
    ),
    held(
        "h11",
        "search",
        "Which function in h11 tells whether a request expects a 100 Continue?",
        r"\bhas_expect_100_continue\b",
    ),
    held(
        "h11",
        "search",
        "Which class in h11 writes a message body in chunks?",
        r"\bChunkedWriter\b",
    ),
    held(
        "h11",
        "enclosing",
        "Which function raises 'continuation line at start of headers'?",
        r"\b_obsolete_line_fold\b",
    ),
    held(
        "h11",
        "enclosing",
        "Which function raises 'conflicting Content-Length headers'?",
        r"\bnormalize_and_validate\b",
    ),
    held(
        "h11",
        "enclosing",
        "Which method raises 'Too much data for declared Content-Length'?",
        r"\bsend_data\b",
    ),
    held(
        "h11",
        "enclosing",
        "Which method raises 'Can't receive data when peer state is ERROR'?",
        r"\bnext_event\b",
    ),
    held(
        "h11",
        "enclosing",
        "Which function raises 'Got data when expecting EOF'?",
        r"\bexpect_nothing\b",
    ),
    held(
        "h11",
        "two reads",
        "h11/__init__.py imports Connection from a module; which file defines Connection?",
        only_file("_connection"),
    ),
    held(
        "h11",
        "two reads",
        "LocalProtocolError in h11/_util.py subclasses a class; what is that class's own base "
        "class?",
        r"\bException\b",
    ),
    held(
        "h11",
        "two reads",
        "InformationalResponse in h11/_events.py subclasses a class; what does that class "
        "subclass?",
        r"\bEvent\b",
    ),
    held(
        "h11",
        "two reads",
        "The headers of Request in h11/_events.py are of a class; which file defines that class?",
        only_file("_headers"),
    ),
    held(
        "h11",
        "two reads",
        "h11/_readers.py imports validate from a module; which file defines validate?",
        only_file("_util"),
    ),
)


def package_source(package: str) -> Path:
    """Where the running Python keeps `package`: its standard library, else the site
    packages it is installed in (a third-party package of the virtual environment)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]) / package
    if stdlib.is_dir():
        return stdlib
    spec = importlib.util.find_spec(package)
    locations = spec.submodule_search_locations if spec is not None else None
    if not locations:
        raise LookupError(f"package {package} is not installed; install it to run this eval")
    return Path(next(iter(locations)))


def prepare(directory: Path | None = None) -> dict[str, Path]:
    """Each package's workspace (a directory holding a copy of the package), copied from
    the running Python (its standard library, or the site packages for a third-party
    one) the first time."""
    root = (
        directory or cache_dir() / "eval-workspaces"
    ) / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    found = {}
    for package in PACKAGES + UNSEEN_PACKAGES:
        workspace = root / package
        if not (workspace / package).is_dir():
            partial = root / f".{package}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(
                package_source(package),
                partial / package,
                ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
            )
            partial.rename(workspace)
        found[package] = workspace
    return found
