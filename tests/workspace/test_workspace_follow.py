"""Follow a name (issue 50): `find_definition` says where a name is defined and what it is,
resolving a module's imports and a class's bases, so a question that takes two steps is
two calls that each name the next; the answer check reads its output as a search's, and
offers it as the next step where the run has it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from warmloop import Agent, ScriptedModel, call
from warmloop.messages import Message, SystemText, ToolResult, UserText
from warmloop.workspace import WORKSPACE_INSTRUCTIONS, Workspace, workspace_tools
from warmloop.workspace.grounding import unread_answer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


class Answer(BaseModel):
    answer: str


@pytest.fixture
def package(tmp_path: Path) -> Workspace:
    """A package whose names lead from one file to another: a re-export in `__init__`, a
    base class imported relatively, one from outside, a constant made from a class."""
    root = tmp_path / "mail"
    root.mkdir()
    (root / "__init__.py").write_text("from .client import Client\nfrom . import limits\n")
    (root / "errors.py").write_text(
        "class MailError(Exception):\n"
        '    """Any failure to send."""\n\n\n'
        "class BounceError(MailError):\n"
        "    code = 550\n"
    )
    (root / "limits.py").write_text('"""How much is sent."""\nMAX_TRIES = 3\n')
    (root / "client.py").write_text(
        "import socketserver\n"
        "from .errors import BounceError as Bounced\n"
        "from .limits import MAX_TRIES\n\n\n"
        "class Client(socketserver.BaseServer):\n"
        '    """Sends mail."""\n\n'
        "    retries = MAX_TRIES\n\n"
        "    def send(self, to: str) -> None:\n"
        '        """Send one mail, trying MAX_TRIES times."""\n'
        "        for _ in range(MAX_TRIES):\n"
        "            raise Bounced(to)\n\n\n"
        "class Loud(Bounced):\n"
        "    pass\n\n\n"
        "default_client = Client()\n"
    )
    return Workspace(tmp_path)


def test_a_function_shows_its_header_docstring_and_the_places_of_what_it_uses() -> None:
    found = Workspace(EXAMPLE).find_definition("order_total")
    lines = found.split("\n")
    assert lines[0] == (
        "inventory/orders.py:19: def order_total(stock: Stock, lines: list[OrderLine]) -> float"
    )
    assert lines[1].startswith('  """The price of an order:')
    assert "VAT_RATE (inventory/rates.py:3), shipping_fee (inventory/rates.py:8)" in lines[2]
    assert "imported by: inventory/__init__.py:3" in found


def test_a_class_shows_its_bases_followed_through_imports_and_its_members(
    package: Workspace,
) -> None:
    found = package.find_definition("Loud").split("\n")
    assert found[0] == "mail/client.py:17: class Loud(Bounced)"
    assert found[1] == "  bases: Bounced, defined at mail/errors.py:5"  # an alias, followed
    client = package.find_definition("Client")
    assert (
        "  bases: socketserver.BaseServer, imported from socketserver (outside the workspace)"
        in client
    )
    assert "mail/client.py:9 in Client: retries = MAX_TRIES" in client
    assert "mail/client.py:11 in Client: def send(self, to: str) -> None" in client
    bounce = package.find_definition("BounceError")
    assert "  bases: MailError, defined at mail/errors.py:1" in bounce
    assert "mail/errors.py:6 in BounceError: code = 550" in bounce
    assert "imported by: mail/client.py:2" in bounce


def test_qualified_names_modules_and_constants_lead_to_their_definitions(
    package: Workspace,
) -> None:
    method = package.find_definition("Client.send")
    assert method.startswith("mail/client.py:11 in Client: def send(self, to: str) -> None")
    assert "uses: MAX_TRIES (mail/limits.py:2), Bounced (mail/errors.py:5)" in method
    assert package.find_definition("mail.errors.MailError").startswith(
        "mail/errors.py:1: class MailError(Exception)"
    )
    module = package.find_definition("limits")
    assert module.startswith("the module limits is the file mail/limits.py\n")
    assert "mail/limits.py:2: MAX_TRIES = 3" in module
    made = package.find_definition("default_client")
    assert made.startswith("mail/client.py:21: default_client = Client()")
    assert "uses: Client (mail/client.py:6)" in made
    # A name bound only by an import leads to what it binds.
    assert package.find_definition("Bounced").startswith("mail/errors.py:5: class BounceError")


def test_a_name_the_workspace_lacks_says_where_it_comes_from_and_what_is_close(
    package: Workspace,
) -> None:
    outside = package.find_definition("socketserver")
    assert outside.startswith(
        "no definition of 'socketserver' in the workspace; mail/client.py:1 imports it from "
        "socketserver"
    )
    missing = package.find_definition("BounceErrors").split("\n")
    assert missing[0] == "no definition of 'BounceErrors' in the workspace"
    assert missing[1] == "closest names: BounceError"
    with pytest.raises(ValueError, match="more than 200"):
        package.find_definition("x" * 201)


def check(task: str, answer: str, *results: tuple[str, str], follows: bool = True) -> str | None:
    instructions = WORKSPACE_INSTRUCTIONS if follows else "Read the files."
    messages: list[Message] = [
        SystemText(instructions),
        UserText(task),
        *(ToolResult(f"call_{n}", tool, text) for n, (tool, text) in enumerate(results)),
    ]
    return unread_answer(Answer(answer=answer), messages)


def test_the_answer_check_reads_find_definition_as_the_files_and_refuses_its_guesses(
    package: Workspace,
) -> None:
    task = "Which class does Loud inherit from?"
    loud = ("find_definition", package.find_definition("Loud"))
    assert check(task, "Bounced", loud) is None  # a base it showed is a class seen
    guessed = ("find_definition", package.find_definition("BounceErrors"))
    refused = check("Which class is close to BounceErrors?", "BounceError", guessed)
    assert refused is not None  # a closest name leads to a call, not to an answer
    assert "is not written in any file line" in refused


def test_a_refusal_offers_find_definition_where_the_run_has_it(package: Workspace) -> None:
    task = "Loud in mail/client.py subclasses a class; which file defines that class?"
    loud = ("find_definition", package.find_definition("Loud"))
    refused = check(task, "Loud", loud)
    assert refused is not None
    action = json.loads(refused.split("look it up next: ")[1].removesuffix("."))
    assert action == {"tool": "find_definition", "arguments": {"name": "Bounced"}}
    without = check(task, "Loud", loud, follows=False)
    assert without is not None
    assert '{"tool": "search", "arguments": {"pattern": "Bounced"}}' in without
    bare = check(task, "Loud", follows=True)  # nothing looked up yet: start from the task
    assert bare is not None
    assert '{"tool": "find_definition", "arguments": {"name": "Loud"}}' in bare


def test_a_two_step_question_is_two_calls_that_each_name_the_next(package: Workspace) -> None:
    model = ScriptedModel(
        [
            call("find_definition", name="Loud"),
            call("find_definition", name="Bounced"),
            call("submit", answer="MailError"),
        ]
    )
    agent = Agent(
        model,
        workspace_tools(package.root),
        instructions=WORKSPACE_INSTRUCTIONS,
        outputs=Answer,
        check_outputs=unread_answer,
    )
    run = agent.run_sync("What is the base class of the class Loud inherits from?")
    assert isinstance(run.outputs, Answer)
    assert run.outputs.answer == "MailError"
    results = [m for m in run.transcript.messages if isinstance(m, ToolResult)]
    assert "bases: Bounced, defined at mail/errors.py:5" in results[0].content
    assert "bases: MailError, defined at mail/errors.py:1" in results[1].content
