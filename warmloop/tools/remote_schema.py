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
from collections.abc import Iterator, Mapping
from typing import Any

import re2  # type: ignore[import-untyped]

from warmloop.errors import ToolFailed
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


def _cut(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…")


def validator_class(schema: Mapping[str, Any]) -> Any:
    """The `jsonschema` validator for the dialect `$schema` names (2020-12, as MCP says,
    when it names none or one `jsonschema` does not know)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise Uncheckable(
            f"its schema's $schema must be a URI string, not {type(dialect).__name__}"
        )
    return validator_for(schema, default=Draft202012Validator)


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
    resolver = _resolver(schema)
    for ref in refs:
        if not _resolves(resolver, ref):
            return _unresolved(ref)
    return ""


def _survey(schema: dict[str, Any]) -> tuple[set[str], list[str], bool]:
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


def _resolver(schema: dict[str, Any]) -> Any:
    """Resolves references inside `schema` and the bundled metaschemas, and nothing else:
    the registry has no way to retrieve a resource, so nothing is ever fetched."""
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]
    from referencing import Resource
    from referencing.jsonschema import DRAFT202012

    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    return REGISTRY.resolver_with_root(resource)


def _resolves(resolver: Any, ref: str) -> bool:
    from referencing.exceptions import Unresolvable

    try:
        resolver.lookup(ref)
    except Unresolvable:
        return False
    return True


def _unresolved(ref: str) -> str:
    if ref.startswith("#"):
        return f"its schema's $ref {_cut(ref)} does not resolve within the schema"
    return (
        f"its schema's $ref {_cut(ref)} points outside the schema, and references are never fetched"
    )


def problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
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


def _checker(schema: Mapping[str, Any]) -> Any:
    """A validator for `schema` with RE2 patterns and a budget of `MAX_CHECKS` checks."""
    from jsonschema import validators
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

    cls = validator_class(schema)
    left = [MAX_CHECKS]
    compiled: dict[str, Any] = {}
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise print every bad pattern to stderr
    options.never_capture = True  # only whether it matches is asked

    def search(pattern: str, text: str) -> bool:
        if pattern in compiled and compiled[pattern] is None:
            return True  # not checkable here: left to the server
        regex = compiled.get(pattern)
        if regex is None:
            try:
                regex = compiled[pattern] = re2.compile(to_re2(pattern), options)
            except (re2.error, UnicodeError) as exc:
                reason = exc.args[0] if exc.args else ""
                if isinstance(reason, bytes):
                    reason = reason.decode("utf-8", "replace")
                reason = str(reason)
                if reason.startswith("invalid perl operator") or _BACKREFERENCE.match(reason):
                    # A valid pattern RE2 has no way to run (look-around, backreferences:
                    # zod puts one on every email field). Running it here would need a
                    # backtracking engine; the server checks its own arguments instead.
                    compiled[pattern] = None
                    return True
                raise Uncheckable(
                    f"its schema's pattern {_cut(pattern)} cannot be checked: RE2, the "
                    f"linear-time engine patterns run on, reports {_cut(reason)}"
                ) from None
        try:
            return regex.search(text) is not None
        except UnicodeError:  # a lone surrogate: RE2 reads UTF-8
            cleaned = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            return regex.search(cleaned) is not None

    def pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not search(patrn, instance):
            yield ValidationError(f"{instance!r} does not match {patrn!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for patrn, subschema in patterns.items():
            for key, value in instance.items():
                if search(patrn, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=patrn)

    def additional_properties(
        validator: Any, additional: Any, instance: Any, schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        named = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [
            key
            for key in instance
            if key not in named and not any(search(p, key) for p in patterns)
        ]
        if validator.is_type(additional, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], additional, path=extra)
        elif not additional and extras:
            shown = ", ".join(repr(e) for e in sorted(extras))
            if patterns:
                verb = "does" if len(extras) == 1 else "do"
                regexes = ", ".join(repr(p) for p in sorted(patterns))
                yield ValidationError(f"{shown} {verb} not match any of the regexes: {regexes}")
            else:
                verb = "was" if len(extras) == 1 else "were"
                yield ValidationError(
                    f"Additional properties are not allowed ({shown} {verb} unexpected)"
                )

    def counted(check: Any) -> Any:
        def run(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
            left[0] -= 1
            if left[0] < 0:
                raise Uncheckable(
                    f"its schema is too costly to check: more than {MAX_CHECKS} checks for one "
                    "call (alternatives nested so that they multiply)"
                )
            return check(validator, value, instance, schema)

        return run

    checks = dict(cls.VALIDATORS)
    checks.update(
        pattern=pattern,
        patternProperties=pattern_properties,
        additionalProperties=additional_properties,
    )
    checker = validators.extend(cls, {k: counted(v) for k, v in checks.items()})
    return checker(schema, registry=Registry())
