"""Grammar-only path schemas: in a workspace small enough to enumerate, a local model's
constrained decoding may name only the files that exist. The schema the model reads is
unchanged, so the prompt (and its cache) is the same; only decoding narrows."""

from __future__ import annotations

from dataclasses import replace

from warmloop.tools.tool import Tool


def with_path_enums(tool: Tool, files: list[str] | None) -> Tool:
    """`tool` with a grammar-only schema over the paths that exist: read_file reads one of
    the files; search and list_files always cover the whole workspace, since in one small
    enough to enumerate a narrower folder only hides matches (small models narrow to the
    code folder and miss the settings and data). A workspace too big to enumerate keeps
    the free string (`files` is None), which the step grammar bounds to
    `protocols.grammar.MAX_PATH_CHARS` (255) characters."""
    parameters = tool.spec.parameters
    properties = parameters.get("properties")
    if files is None or not isinstance(properties, dict) or "path" not in properties:
        return tool
    if tool.name == "read_file":
        narrowed = {**properties, "path": {"type": "string", "enum": files}}
    else:
        narrowed = {name: schema for name, schema in properties.items() if name != "path"}
    spec = replace(tool.spec, grammar_parameters={**parameters, "properties": narrowed})
    return replace(tool, spec=spec)
