"""The JSON schemas of remote tools (an MCP server's, or any `RemoteTool`'s): whether one can
be used at all, and checking arguments against one in bounded time. A schema from outside is
untrusted input, as much as the model's arguments are.

`unusable` says why a schema cannot be used, when a tool joins a catalog (which then skips
it): it is not a schema by its own metaschema (an unknown type, a list where an object
belongs), a `$ref` does not resolve inside the document, or it combines `patternProperties`
with `unevaluatedProperties` (which `jsonschema` can only check with Python's `re`).

`problems` checks arguments with `jsonschema`, changed in three ways. Patterns run on RE2
(`google-re2`, as the workspace search does): linear time, where a backtracking engine takes
exponential time on `^(a+)+$` while holding the GIL, so that no timeout could stop it. Every
keyword check counts against a budget, since a schema whose `anyOf`s try the next level twice
takes exponential time with no pattern at all; a count, not a clock, so the same call gives
the same answer on any machine (I4). And `$ref`s resolve inside the document only: a remote
one is never fetched (`jsonschema` would download it by default). Whatever else goes wrong
(a reference cycle, an invalid pattern) raises `Uncheckable`, a tool error; a valid pattern
RE2 cannot run (look-around, backreferences) is left to the server to check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

import re2  # type: ignore[import-untyped]

from warmloop.errors import ToolFailed
from warmloop.messages import JsonData
from warmloop.re2_syntax import to_re2
from warmloop.tools.invoke import describe_exception

MAX_CHECKS = 50_000
"""Keyword checks one call may take: ordinary arguments need a few hundred, a list of 2,000
objects of five checked fields about 26,000 (a fraction of a second); a schema that spends
them all on nested references takes a few seconds."""
MAX_SCHEMA_CHARS = 100_000
"""A remote tool's argument schema, as compact JSON, at most: a tool's schema is a few
kilobytes, and an announcement carries it whole."""
_SHOWN = 120
_BACKREFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")
_DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose values are data, not schemas: nothing inside them is a `$ref`."""
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose values map names (not keywords) to schemas."""


class Uncheckable(ToolFailed):
    """Arguments cannot be checked against a remote tool's schema; the message says why."""


# `jsonschema` and `google-re2` ship no types: the parts of their objects used here.
_Schema: TypeAlias = Mapping[str, JsonData]
"""A JSON schema object (a boolean schema never reaches a keyword check)."""


class _Error(Protocol):
    """A `jsonschema` ValidationError."""

    message: str
    path: Sequence[str | int]


class _Validator(Protocol):
    """A `jsonschema` validator bound to one schema."""

    def iter_errors(self, instance: object) -> Iterator[_Error]: ...

    def descend(
        self,
        instance: object,
        schema: JsonData,
        path: str | int | None = None,
        schema_path: str | int | None = None,
    ) -> Iterator[_Error]: ...


_Check: TypeAlias = Callable[[_Validator, Any, object, _Schema], Iterator[_Error] | None]
"""A keyword's check: (validator, the keyword's value, the instance, the schema holding the
keyword). The value is Any: each keyword's is of the type its metaschema gives it, which the
schema was checked against before any check runs."""


class _ValidatorClass(Protocol):
    """A `jsonschema` validator class (one per dialect) and its keyword checks."""

    VALIDATORS: Mapping[str, _Check]

    def __call__(self, schema: _Schema, *, registry: object) -> _Validator: ...

    def check_schema(self, schema: _Schema, format_checker: object = None) -> None: ...


class _Regex(Protocol):
    """A compiled RE2 pattern."""

    def search(self, text: str) -> object: ...


def _cut(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…")


def validator_class(schema: _Schema) -> _ValidatorClass:
    """The `jsonschema` validator for the dialect `$schema` names (2020-12, as MCP says,
    when it names none or one `jsonschema` does not know)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise Uncheckable(
            f"its schema's $schema must be a URI string, not {type(dialect).__name__}"
        )
    cls: _ValidatorClass = validator_for(schema, default=Draft202012Validator)
    return cls


def unusable(schema: object) -> str:
    """Why `schema` cannot be a remote tool's argument schema ("" when it can)."""
    from jsonschema.exceptions import SchemaError

    if not isinstance(schema, dict):
        return f"its schema is {type(schema).__name__}, not a JSON object"
    try:
        size = len(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))
    except RecursionError:
        return "its schema is nested too deeply"
    except (TypeError, ValueError) as exc:  # an object JSON has no form for, a cycle
        return f"its schema is not JSON ({_cut(describe_exception(exc))})"
    if size > MAX_SCHEMA_CHARS:  # it would enter the transcript whole when announced
        return f"its schema is {size:,} characters of JSON, over {MAX_SCHEMA_CHARS:,}"
    try:
        cls = validator_class(schema)
        cls.check_schema(schema, format_checker=None)  # patterns are RE2's to judge
        keywords, refs, nested_ids = _survey(schema)
    except Uncheckable as exc:
        return str(exc)
    except SchemaError as exc:
        return f"its schema is invalid at {exc.json_path}: {_cut(exc.message)}"
    except RecursionError:
        return "its schema is nested too deeply"
    if "patternProperties" in keywords and "unevaluatedProperties" in keywords:
        return (
            "its schema combines patternProperties with unevaluatedProperties, which cannot "
            "be checked in linear time"
        )
    if nested_ids:
        return ""  # references resolve against nested bases: each call checks its own
    unresolved = _first_unresolved(schema, refs)
    return "" if unresolved is None else _unresolved(unresolved)


def _survey(schema: _Schema) -> tuple[set[str], list[str], bool]:
    """Every keyword used, every `$ref`, and whether a subschema sets its own base (`$id`)."""
    keywords: set[str] = set()
    refs: list[str] = []
    nested_ids = False

    def walk(node: object, root: bool) -> None:
        nonlocal nested_ids
        if isinstance(node, list):
            for item in node:
                walk(item, False)
            return
        if not isinstance(node, dict):
            return
        for key, value in node.items():
            keywords.add(key)
            if key == "$ref" and isinstance(value, str):
                refs.append(value)
            elif key in ("$id", "id") and isinstance(value, str) and not root:
                nested_ids = True
            if key in _DATA:
                continue
            if key in _NAMED and isinstance(value, dict):
                for sub in value.values():
                    walk(sub, False)
            else:
                walk(value, False)

    walk(schema, True)
    return keywords, refs, nested_ids


def _first_unresolved(schema: _Schema, refs: Iterable[str]) -> str | None:
    """The first of `refs` that does not resolve inside `schema` or the bundled metaschemas
    (None: all do). Nothing is ever fetched: the registry has no way to retrieve a resource."""
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]
    from referencing import Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = REGISTRY.resolver_with_root(resource)
    for ref in refs:
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return ref
    return None


def _unresolved(ref: str) -> str:
    if ref.startswith("#"):
        return f"its schema's $ref {_cut(ref)} does not resolve within the schema"
    return (
        f"its schema's $ref {_cut(ref)} points outside the schema, and references are never fetched"
    )


def problems(schema: _Schema, arguments: Mapping[str, object]) -> list[str]:
    """Why `arguments` do not satisfy `schema`, one line per problem (empty: valid);
    `Uncheckable` when the schema cannot be used to tell."""
    from referencing.exceptions import Unresolvable

    why = unusable(schema)
    if why:
        raise Uncheckable(why)
    try:
        found = sorted(_checker(schema).iter_errors(dict(arguments)), key=lambda e: list(e.path))
    except Uncheckable:
        raise
    except RecursionError:
        raise Uncheckable(
            "its schema refers to itself without end (a $ref cycle), or the arguments are "
            "nested too deeply to check"
        ) from None
    except Unresolvable as exc:
        raise Uncheckable(_unresolved(str(getattr(exc, "ref", "")))) from None
    except Exception as exc:  # the schema's fault: arguments are plain JSON
        raise Uncheckable(f"its schema cannot be used ({describe_exception(exc)})") from None
    finally:
        re2.purge()  # compiled patterns can take 8 MiB each; none is reused across calls
    lines = []
    for error in found:
        where = ".".join(str(p) for p in error.path) or "(arguments)"
        lines.append(f"- {where}: {error.message}")
    return lines


class _Re2Patterns:
    """The keyword checks that match patterns (`pattern`, `patternProperties`, and
    `additionalProperties`, which asks which names those patterns match) on RE2 instead of
    Python's `re`, each pattern compiled once per call; a valid pattern RE2 cannot run
    matches everything (the server checks it)."""

    def __init__(self) -> None:
        self._compiled: dict[str, _Regex | None] = {}
        self._options = re2.Options()
        self._options.log_errors = False  # RE2 would otherwise print every bad pattern
        self._options.never_capture = True  # only whether it matches is asked

    def checks(self) -> dict[str, _Check]:
        """The keyword checks that replace `jsonschema`'s own."""
        return {
            "pattern": self.pattern,
            "patternProperties": self.pattern_properties,
            "additionalProperties": self.additional_properties,
        }

    def search(self, pattern: str, text: str) -> bool:
        """Whether `pattern` matches somewhere in `text` (True when RE2 cannot run it)."""
        if pattern not in self._compiled:
            self._compiled[pattern] = self._compile(pattern)
        regex = self._compiled[pattern]
        if regex is None:
            return True  # not checkable here: left to the server
        try:
            return regex.search(text) is not None
        except UnicodeError:  # a lone surrogate: RE2 reads UTF-8
            cleaned = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            return regex.search(cleaned) is not None

    def _compile(self, pattern: str) -> _Regex | None:
        """`pattern` compiled by RE2; None for a valid pattern RE2 has no way to run, and
        `Uncheckable` for one that is not valid."""
        try:
            regex: _Regex = re2.compile(to_re2(pattern), self._options)
        except (re2.error, UnicodeError) as exc:
            reason = exc.args[0] if exc.args else ""
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            reason = str(reason)
            if reason.startswith("invalid perl operator") or _BACKREFERENCE.match(reason):
                # A valid pattern RE2 has no way to run (look-around, backreferences: zod
                # puts one on every email field). Running it here would need a backtracking
                # engine; the server checks its own arguments instead.
                return None
            raise Uncheckable(
                f"its schema's pattern {_cut(pattern)} cannot be checked: RE2, the "
                f"linear-time engine patterns run on, reports {_cut(reason)}"
            ) from None
        return regex

    # The checks take jsonschema's (validator, keyword value, instance, schema); the
    # draft validators' "string" and "object" are exactly str and dict.
    def pattern(
        self, validator: _Validator, patrn: str, instance: object, schema: _Schema
    ) -> Iterator[_Error]:
        from jsonschema.exceptions import ValidationError

        if isinstance(instance, str) and not self.search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        self, validator: _Validator, patterns: _Schema, instance: object, schema: _Schema
    ) -> Iterator[_Error]:
        if not isinstance(instance, dict):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                if self.search(patrn, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    def additional_properties(
        self, validator: _Validator, additional: object, instance: object, schema: _Schema
    ) -> Iterator[_Error]:
        if not isinstance(instance, dict):
            return
        named = set(_keys(schema.get("properties")))
        patterns = _keys(schema.get("patternProperties"))
        extras = [
            key
            for key in instance
            if key not in named and not any(self.search(p, key) for p in patterns)
        ]
        if isinstance(additional, dict):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif not additional and extras:
            yield _not_allowed(extras, patterns)


def _not_allowed(extras: list[str], patterns: list[str]) -> _Error:
    """The error for properties `additionalProperties: false` refuses (jsonschema's words)."""
    from jsonschema.exceptions import ValidationError

    shown = ", ".join(repr(e) for e in sorted(extras))
    if patterns:
        verb = "does" if len(extras) == 1 else "do"
        regexes = ", ".join(repr(p) for p in sorted(patterns))
        error: _Error = ValidationError(f"{shown} {verb} not match any of the regexes: {regexes}")
    else:
        verb = "was" if len(extras) == 1 else "were"
        error = ValidationError(
            f"Additional properties are not allowed ({shown} {verb} unexpected)"
        )
    return error


def _keys(value: JsonData) -> list[str]:
    """The names a schema's `properties` or `patternProperties` holds (none when absent)."""
    return list(value) if isinstance(value, dict) else []


class _Budget:
    """The keyword checks one call may take (`MAX_CHECKS`): a count, not a clock, so the same
    call gives the same answer on any machine."""

    def __init__(self) -> None:
        self.left = MAX_CHECKS

    def counted(self, check: _Check) -> _Check:
        """`check`, counting against the budget; `Uncheckable` once it is spent."""

        def run(
            validator: _Validator, value: object, instance: object, schema: _Schema
        ) -> Iterator[_Error] | None:
            self.left -= 1
            if self.left < 0:
                raise Uncheckable(
                    f"its schema is too costly to check: more than {MAX_CHECKS} checks for "
                    "one call (alternatives nested so that they multiply)"
                )
            return check(validator, value, instance, schema)

        return run


def _checker(schema: _Schema) -> _Validator:
    """A validator for `schema` with RE2 patterns and a budget of `MAX_CHECKS` checks."""
    from jsonschema import validators
    from referencing import Registry

    cls = validator_class(schema)
    checks = {**cls.VALIDATORS, **_Re2Patterns().checks()}
    budget = _Budget()
    checker: _ValidatorClass = validators.extend(
        cls, {k: budget.counted(v) for k, v in checks.items()}
    )
    return checker(schema, registry=Registry())
