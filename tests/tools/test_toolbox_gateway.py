"""The gateway and announcements: search finds catalog tools in compact form, a tool found
is announced once with its full description (read back from the transcript, so a resumed
session and a follow-up never announce it again), call_tool validates against the tool's
own schema, an undiscovered or unknown tool is an error that says to search first, and a
plain toolbox behaves as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.toolbox_session import CORE, catalog
from warmloop import Agent, ScriptedModel, Transcript, call
from warmloop.errors import ConfigurationError
from warmloop.maintenance.prune import text_of
from warmloop.messages import AnnouncedTool, Notice, ToolResult
from warmloop.protocols.inline import inline_text
from warmloop.tools.announce import MAX_ANNOUNCED_DESCRIPTION
from warmloop.tools.catalog import RemoteTool
from warmloop.tools.schema import ToolSpec
from warmloop.tools.toolbox import Toolbox


def box() -> Toolbox:
    return Toolbox(CORE, catalog(), code=True)


def results(transcript: Transcript) -> list[ToolResult]:
    return [m for m in transcript if isinstance(m, ToolResult)]


def notices(transcript: Transcript) -> list[Notice]:
    return [m for m in transcript if isinstance(m, Notice) and m.tools]


def test_search_lists_matches_compactly_and_the_notice_teaches_the_best_in_full() -> None:
    model = ScriptedModel(
        [call("search_tools", query="get invoice billing"), call("submit", answer="x")]
    )
    run = Agent(model, tools=box()).run_sync("Find the invoice tool.")
    found = results(run.transcript)[0]
    assert "- get_invoice(id: string, workspace?: string" in found.content
    assert "- update_invoice(id: string" in found.content
    assert "Needs the" not in found.content  # the description is not in the listing
    (notice,) = notices(run.transcript)
    # Issue 36: only the best match is taught in full; the others stay a listing.
    assert [t.name for t in notice.tools] == ["get_invoice"]
    assert "Needs the `invoice:read` scope" in notice.tools[0].description
    # The notice follows the step's results, before the next request.
    index = list(run.transcript).index(notice)
    assert isinstance(run.transcript[index - 1], ToolResult)


def test_an_undiscovered_tool_is_an_error_that_says_to_search_first() -> None:
    model = ScriptedModel(
        [
            call("call_tool", name="get_invoice", arguments={"id": "inv_1"}),
            call("call_tool", name="no_such_tool"),
            call("get_invoice", id="inv_1"),
            call("submit", answer="x"),
        ]
    )
    run = Agent(model, tools=box()).run_sync("Use a tool not yet found.")
    first, unknown, direct, _ = results(run.transcript)
    assert first.is_error
    assert "find it with search_tools first" in first.content
    assert unknown.is_error
    assert "No tool is named 'no_such_tool'" in unknown.content
    assert direct.is_error
    assert "search_tools" in direct.content
    assert not notices(run.transcript)


def test_call_tool_validates_arguments_against_the_tools_own_schema() -> None:
    model = ScriptedModel(
        [
            call("search_tools", query="share document with a person", limit=1),
            call("call_tool", name="share_document", arguments={"id": "d1", "role": "owner"}),
            call("call_tool", name="share_document", arguments={"id": "d1", "email": "a@b.c"}),
            call("submit", answer="x"),
        ]
    )
    run = Agent(model, tools=box()).run_sync("Share it.")
    _, bad, good, _ = results(run.transcript)
    assert bad.is_error
    assert "Invalid arguments for share_document" in bad.content
    assert "email: Field required" in bad.content
    assert "role: Input should be" in bad.content
    assert "Expected: share_document(id: string, email: string" in bad.content
    assert not good.is_error
    assert json.loads(good.content)["tool"] == "share_document"


def test_a_tool_is_announced_once_however_often_it_is_found() -> None:
    model = ScriptedModel(
        [
            call("search_tools", query="get invoice billing"),
            call("search_tools", query="get invoice billing"),
            call("search_tools", query="invoice"),
            call("submit", answer="x"),
        ]
    )
    run = Agent(model, tools=box()).run_sync("Search again and again.")
    taught = [t.name for n in notices(run.transcript) for t in n.tools]
    assert len(taught) == len(set(taught))
    second = results(run.transcript)[1]
    assert "(new)" not in second.content


def test_what_was_taught_is_read_back_from_a_resumed_session(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    first = ScriptedModel(
        [call("search_tools", query="get invoice billing"), call("submit", answer="a")]
    )
    Agent(first, tools=box()).run_sync("Find it.", session="s", store=store)
    # A new agent with a new toolbox (a new process): no memory but the stored transcript.
    second = ScriptedModel(
        [
            call("call_tool", name="get_invoice", arguments={"id": "inv_7"}),
            call("search_tools", query="get invoice billing"),
            call("submit", answer="b"),
        ]
    )
    run = Agent(second, tools=box()).run_sync("Use it.", session="s", store=store)
    used = [r for r in results(run.transcript) if r.name == "call_tool"][-1]
    assert not used.is_error
    assert len(notices(run.transcript)) == 1


def test_a_follow_up_on_a_new_branch_keeps_what_its_history_taught() -> None:
    agent = Agent(
        ScriptedModel(
            [
                call("search_tools", query="get weather forecast", limit=1),
                call("submit", answer="a"),
                call("call_tool", name="get_forecast", arguments={"id": "f1"}),
                call("submit", answer="b"),
            ]
        ),
        tools=box(),
    )
    first = agent.run_sync("Find the forecast tool.")
    follow = agent.run_sync("Use it.", history=first.transcript)
    assert not results(follow.transcript)[-2].is_error


def test_a_core_tool_can_be_called_through_the_gateway_too() -> None:
    model = ScriptedModel(
        [
            call("call_tool", name="list_files", arguments={"folder": "a"}),
            call("submit", answer="x"),
        ]
    )
    run = Agent(model, tools=box()).run_sync("List.")
    result = results(run.transcript)[0]
    assert not result.is_error
    assert result.name == "call_tool"
    assert "a/file_0.md" in result.content


def test_an_announcement_renders_in_place_with_its_schema_text_exactly() -> None:
    schema = '{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}}'
    notice = Notice("Discovered tool:", tools=(AnnouncedTool("t", "Does t.", schema),))
    text = inline_text(notice)
    assert text.startswith("<system-reminder>Discovered tool:\n<tool>")
    assert f'"parameters": {schema}}}</tool>' in text
    loaded = Transcript.load(Transcript([notice]).dump())
    assert isinstance(loaded[0], Notice)
    assert inline_text(loaded[0]) == text


def test_a_version_2_file_without_announcements_still_loads() -> None:
    old = (
        '{"format":"warmloop.transcript/2","id":"t_1","conversation":"t_1","revision":0,'
        '"meta":{"created_at":null,"updated_at":null,"last_request_at":null,"model":"",'
        '"tools_fingerprint":"","parent":""},"messages":[{"text":"hi","only_tool":"",'
        '"kind":"notice"}]}'
    )
    (notice,) = Transcript.load(old)
    assert isinstance(notice, Notice)
    assert notice.tools == ()


def test_the_text_protocol_teaches_a_discovered_tool_without_touching_message_0() -> None:
    model = ScriptedModel(
        [
            'Thought: find it\nAction: {"tool": "search_tools", "arguments": {"query": "invoice"}}',
            'Thought: done\nAction: {"tool": "submit", "arguments": {"answer": "x"}}',
        ],
        text_protocol=True,
    )
    Agent(model, tools=box()).run_sync("Find the invoice tool.")
    first, second = (r.payload["messages"] for r in model.requests)
    assert second[0] == first[0]
    assert "get_invoice" not in first[0]["content"]
    assert '<tool>{"name": "get_invoice"' in second[-1]["content"]


def test_a_name_used_twice_is_refused_at_construction() -> None:
    def read_file(path: str) -> str:
        """Read a file (a second one)."""
        return path

    with pytest.raises(ConfigurationError, match="'read_file' is used twice"):
        Toolbox(CORE, [read_file])

    def call_tool(name: str) -> str:
        """Shadow the gateway."""
        return name

    with pytest.raises(ConfigurationError, match="toolbox's own"):
        Toolbox([call_tool])


def test_maintenance_counts_an_announcements_schemas_in_its_size() -> None:
    schema = '{"type":"object","properties":{"when":{"type":"string"}}}'
    notice = Notice("Discovered tool:", tools=(AnnouncedTool("t", "Does t.", schema),))
    assert schema in text_of(notice)
    assert "Does t." in text_of(notice)


def test_a_huge_description_from_outside_is_announced_cut_and_a_huge_schema_is_skipped() -> None:
    async def echo(arguments: dict[str, object]) -> object:
        return arguments

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    described = "Fetch the weather report. " + "x" * 5_000_000  # what an MCP server listed
    huge = RemoteTool(ToolSpec("weather_report", described, schema), echo)
    model = ScriptedModel(
        [call("search_tools", query="weather report"), call("submit", answer="x")]
    )
    run = Agent(model, tools=Toolbox(catalog=[huge])).run_sync("Find the weather tool.")
    (notice,) = notices(run.transcript)
    shown = notice.tools[0].description
    assert shown.startswith("Fetch the weather report. xxx")
    assert len(shown) < MAX_ANNOUNCED_DESCRIPTION + 100
    assert shown.endswith(
        f"[description cut: {len(described) - MAX_ANNOUNCED_DESCRIPTION:,} more characters]"
    )
    assert len(run.transcript.dump()) < 100_000

    padded = {**schema, "description": "y" * 5_000_000}
    with pytest.raises(ConfigurationError, match="characters of JSON, over"):
        Toolbox(catalog=[RemoteTool(ToolSpec("padded", "A tool.", padded), echo)])


# Issue 36: a search teaches only its best match in full.


def test_another_match_is_callable_and_taught_when_searched_by_its_exact_name() -> None:
    model = ScriptedModel(
        [
            call("search_tools", query="get invoice billing"),
            call("call_tool", name="update_invoice", arguments={"id": "i"}),
            call("search_tools", query="update_invoice"),
            call("submit", answer="x"),
        ]
    )
    first = Agent(model, tools=box()).run_sync("Update the invoice.")
    listed, used, named, _ = results(first.transcript)
    assert "To read another's full description, search_tools for its exact name." in (
        listed.content
    )
    assert not used.is_error  # listed by its signature: callable without a description
    assert json.loads(used.content)["tool"] == "update_invoice"
    assert "- update_invoice(" in named.content.splitlines()[1]
    taught = [[t.name for t in n.tools] for n in notices(first.transcript)]
    assert taught == [["get_invoice"], ["update_invoice"]]
    # What the searches listed is read back from the transcript: a follow-up calls it too.
    again = ScriptedModel(
        [
            call("call_tool", name="delete_invoice", arguments={"id": "i"}),
            call("submit", answer="y"),
        ]
    )
    follow = Agent(again, tools=box()).run_sync("Delete it.", history=first.transcript)
    assert not results(follow.transcript)[-2].is_error


def test_a_search_whose_best_match_is_taught_teaches_nothing_new() -> None:
    model = ScriptedModel(
        [
            call("search_tools", query="get invoice billing"),
            call("search_tools", query="get invoice", limit=5),
            call("submit", answer="x"),
        ]
    )
    run = Agent(model, tools=box()).run_sync("Search twice.")
    second = results(run.transcript)[1]
    assert "(new" not in second.content
    assert [[t.name for t in n.tools] for n in notices(run.transcript)] == [["get_invoice"]]
