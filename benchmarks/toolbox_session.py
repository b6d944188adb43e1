"""The 120-tool session of issue 9, shared by `benchmarks.toolbox` and the tests.

A catalog of 120 realistic tools (12 business systems x 10 actions, each with a two-sentence
description and documented arguments), three core tools, and one plan of 40 steps in which
6 catalog tools are found by search at different steps and then used, through the gateway
and from `run_code`. `script(arm, ...)` turns the plan into the scripted replies for one way
of disclosing tools, so every arm performs the same tool uses.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from warmloop import Reply, Tool, ToolSpec, tool
from warmloop.providers.scripted import Script
from warmloop.tools.schema import describe_arguments, model_schema, typed_model

SYSTEMS = {
    "event": ("calendar", "calendar events (meetings, reminders, rooms)"),
    "email": ("mail", "email messages in the shared inbox"),
    "contact": ("CRM", "customer contacts and their companies"),
    "invoice": ("billing", "invoices, their lines and payment state"),
    "ticket": ("help desk", "support tickets and their conversations"),
    "repo": ("code host", "source repositories, branches and pull requests"),
    "deployment": ("deploy service", "deployments of services to environments"),
    "metric": ("monitoring", "time series metrics and dashboards"),
    "document": ("document store", "documents, folders and their permissions"),
    "message": ("team chat", "chat messages in channels and threads"),
    "forecast": ("weather service", "weather forecasts and observations for places"),
    "route": ("maps", "routes, distances and travel times between places"),
}
ACTIONS = (
    "list",
    "get",
    "create",
    "update",
    "delete",
    "search",
    "export",
    "archive",
    "share",
    "count",
)


def _arguments(action: str, noun: str) -> dict[str, tuple[Any, Any, str]]:
    ident = (str, ..., f"The {noun}'s id, as returned by list_{noun}s or search_{noun}s.")
    table: dict[str, dict[str, tuple[Any, Any, str]]] = {
        "list": {
            "limit": (int, 20, f"How many {noun}s to return (1 to 100)."),
            "cursor": (str, "", "Where to continue, from the previous page's next_cursor."),
        },
        "get": {"id": ident},
        "create": {
            "title": (str, ..., f"A short title for the new {noun}."),
            "details": (str, "", "Free text: the body, notes or description."),
            "tags": (list[str], [], "Labels to attach, e.g. ['urgent', 'q3']."),
        },
        "update": {
            "id": ident,
            "fields": (dict[str, str], ..., "Field names and their new values."),
        },
        "delete": {"id": ident, "reason": (str, "", "Why it is deleted (kept in the audit log).")},
        "search": {
            "query": (str, ..., "Words to look for in titles, bodies and tags."),
            "limit": (int, 10, "How many matches to return (1 to 50)."),
        },
        "export": {
            "format": (Literal["csv", "json"], "json", "The file format of the export."),
            "since": (str, "", "Only records changed since this ISO date, e.g. 2026-01-31."),
        },
        "archive": {"id": ident},
        "share": {
            "id": ident,
            "email": (str, ..., "The address of the person to share with."),
            "role": (Literal["viewer", "editor"], "viewer", "What they may do with it."),
        },
        "count": {
            "since": (str, "", "Count only records from this ISO date on."),
            "until": (str, "", "Count only records before this ISO date."),
        },
    }
    return table[action]


COMMON: dict[str, tuple[Any, Any, str]] = {
    "workspace": (str, "", "The workspace (team) to act in; your default workspace when empty."),
    "fields": (
        list[str],
        [],
        "Only return these fields of each record, e.g. ['id', 'title', 'updated']; all "
        "fields when empty.",
    ),
    "timezone": (str, "UTC", "IANA time zone for dates in the answer, e.g. 'Europe/Paris'."),
}
MUTATING = {"create", "update", "delete", "archive", "share"}
DRY_RUN = (bool, False, "Check the request and report what would change, changing nothing.")


def _describe(action: str, noun: str, system: str, what: str) -> str:
    verbs = {
        "list": f"List {noun}s in the {system}, newest first, one page at a time.",
        "get": f"Get one {noun} from the {system} by its id, with all its fields.",
        "create": f"Create a new {noun} in the {system}.",
        "update": f"Change fields of an existing {noun} in the {system}.",
        "delete": f"Delete a {noun} from the {system}; this cannot be undone.",
        "search": f"Search {noun}s in the {system} by words in their content.",
        "export": f"Export {noun}s from the {system} as a file and return its download link.",
        "archive": f"Archive a {noun} in the {system} so it no longer shows in lists.",
        "share": f"Share a {noun} from the {system} with a person by email.",
        "count": f"Count {noun}s in the {system}, optionally within a date range.",
    }
    scope = "write" if action in MUTATING else "read"
    return (
        f"{verbs[action]} The {system} holds {what}. Needs the `{noun}:{scope}` scope of "
        f"the connected account. Answers with JSON: `items` (the records, newest first, "
        f"with id, title, owner, status and dates) and `next_cursor` when more are left. "
        f"Limited to 60 calls a minute per workspace; a 429 answer says when to retry."
    )


def record(name: str, arguments: dict[str, Any]) -> str:
    """A deterministic JSON answer of a few hundred characters, as business APIs return."""
    seed = hashlib.sha256(json.dumps([name, arguments], sort_keys=True).encode()).hexdigest()
    items = [
        {
            "id": f"{name.split('_', 1)[1][:3]}_{seed[i * 6 : i * 6 + 6]}",
            "title": f"{name.replace('_', ' ')} result {i + 1}",
            "updated": f"2026-0{i % 9 + 1}-1{i % 9}T09:{i:02d}:00Z",
            "owner": f"user{int(seed[i], 16)}@example.com",
            "status": ["open", "done", "pending"][i % 3],
        }
        for i in range(4)
    ]
    return json.dumps({"tool": name, "arguments": arguments, "items": items})


def _catalog_tool(action: str, noun: str) -> Tool:
    system, what = SYSTEMS[noun]
    name = (
        f"{action}_{noun}s"
        if action in ("list", "search", "export", "count")
        else f"{action}_{noun}"
    )
    args = {**_arguments(action, noun), **COMMON}
    if action in MUTATING:
        args["dry_run"] = DRY_RUN
    fields = {k: (kind, default) for k, (kind, default, _) in args.items()}
    model = typed_model(f"{name}_args", fields, f"tool {name!r}")
    parameters = model_schema(model, f"tool {name!r}")
    describe_arguments(parameters, {k: text for k, (_, _, text) in args.items()})

    def function(**kwargs: Any) -> str:
        return record(name, kwargs)

    return Tool(ToolSpec(name, _describe(action, noun, system, what), parameters), model, function)


@functools.cache
def _catalog() -> tuple[Tool, ...]:
    return tuple(_catalog_tool(action, noun) for noun in SYSTEMS for action in ACTIONS)


def catalog() -> list[Tool]:
    """The 120 catalog tools, in a fixed (not sorted) order (frozen values, built once)."""
    return list(_catalog())


def _page(path: str) -> str:
    seed = hashlib.sha256(path.encode()).hexdigest()
    lines = [
        f"{n:4d}  {path}: note {seed[n % 60 : n % 60 + 4]} on the quarterly plan" for n in range(40)
    ]
    return "\n".join(lines)


@tool
def read_file(path: str) -> str:
    """Read a text file from the project folder, with numbered lines.

    Args:
        path: The file's path inside the project folder, e.g. `notes/plan.md`.
    """
    return _page(path)


@tool
def list_files(folder: str = ".") -> str:
    """List the files in a project folder.

    Args:
        folder: The folder's path inside the project folder.
    """
    return "\n".join(f"{folder}/file_{i}.md" for i in range(12))


@tool
def write_file(path: str, text: str) -> str:
    """Write a text file in the project folder, replacing it if it exists.

    Args:
        path: The file's path inside the project folder.
        text: The whole new content.
    """
    return f"wrote {len(text)} characters to {path}"


CORE = [read_file, list_files, write_file]
TARGETS = (
    "search_tickets",
    "create_event",
    "get_invoice",
    "get_forecast",
    "count_deployments",
    "share_document",
)
"""The six catalog tools the session discovers (in this order) and uses."""


@dataclass(frozen=True)
class Step:
    """One step of the plan: a core call, a search, a catalog tool use, code, or submit."""

    kind: Literal["core", "search", "use", "code", "submit"]
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


def _core(i: int) -> Step:
    if i % 3 == 0:
        return Step("core", "list_files", {"folder": f"notes/part{i}"})
    if i % 3 == 1:
        return Step("core", "read_file", {"path": f"notes/part{i}.md"})
    return Step("core", "write_file", {"path": f"out/summary{i}.md", "text": f"summary {i} " * 20})


USES: dict[str, dict[str, Any]] = {
    "search_tickets": {"query": "refund delayed", "limit": 5},
    "create_event": {"title": "Refund review", "details": "Walk through the delayed refunds"},
    "get_invoice": {"id": "inv_20931"},
    "get_forecast": {"id": "fc_paris_2026_06_01"},
    "count_deployments": {"since": "2026-05-01"},
    "share_document": {"id": "doc_881", "email": "ana@example.com", "role": "editor"},
}
QUERIES = {
    "search_tickets": "search support tickets",
    "create_event": "create calendar event meeting",
    "get_invoice": "get invoice billing",
    "get_forecast": "get weather forecast",
    "count_deployments": "count deployments",
    "share_document": "share document with a person",
}
CODE = (
    "tickets = search_tickets(query='refund', limit=3)\n"
    "invoice = get_invoice(id='inv_20931')\n"
    "notes = read_file(path='notes/refunds.md')\n"
    "print(len(tickets), len(invoice), len(notes))\n"
    "{'tickets': tickets[:80], 'invoice': invoice[:80]}"
)


def plan() -> list[Step]:
    """40 requests: 6 discoveries at different steps, each tool then used through the gateway,
    three code steps that call discovered and core tools, core work between; then submit.
    Requests 1-20 form the first run and 21-40 the follow-up (a resumed session)."""
    steps: list[Step] = []
    found = 0
    for i in range(38):
        if i in (1, 7, 13, 22, 27, 33):
            steps.append(Step("search", TARGETS[found], {"query": QUERIES[TARGETS[found]]}))
            found += 1
        elif i in (2, 8, 14, 23, 28, 34):
            steps.append(Step("use", TARGETS[found - 1], USES[TARGETS[found - 1]]))
        elif i in (17, 25, 36):
            steps.append(Step("use", TARGETS[(i * 7) % found], USES[TARGETS[(i * 7) % found]]))
        elif i in (16, 31, 37):
            steps.append(Step("code", "run_code", {"code": CODE}))
        else:
            steps.append(_core(i))
        if i == 18:
            steps.append(Step("submit", "submit", {"answer": "first part done"}))
    steps.append(Step("submit", "submit", {"answer": "all done"}))
    return steps


Arm = Literal["gateway", "ideal", "native", "all", "resend", "grow"]
Reply_ = Callable[[Step], Script]


def reply(arm: Arm, step: Step) -> Script | None:
    """The scripted reply for one step in an arm (None: the arm has no request for it)."""
    text = f"Step: {step.kind} {step.name}."
    if step.kind == "search":
        if arm in ("gateway", "resend", "grow"):
            return _reply(text, "search_tools", {"query": step.arguments["query"]})
        return None  # `all` needs no search; `native` searches server-side (see native.py)
    if step.kind == "use" and arm in ("gateway", "resend"):
        return _reply(text, "call_tool", {"name": step.name, "arguments": step.arguments})
    return _reply(text, step.name, step.arguments)


def _reply(text: str, name: str, arguments: dict[str, Any]) -> Reply:
    return Reply(text=text, calls=((name, json.dumps(arguments, ensure_ascii=False)),))
