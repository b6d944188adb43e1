"""The worked examples the embedded model is taught show each workspace tool once, in the
shape the tool itself answers (issue 50): a search that forgives, and find_definition."""

from __future__ import annotations

from pathlib import Path

from warmloop.protocols.react_text import EXAMPLES
from warmloop.workspace import Workspace

MAIL = '''"""What is sent for an order."""

from billing.limits import MAX_TRIES
from billing.orders import Order


# Sent once per order.
def send_invoice(order: Order) -> None:
    """Mail the invoice of an order, trying again on failure."""
    for _ in range(MAX_TRIES):
        pass
'''


def billing(root: Path) -> Workspace:
    """The workspace the examples are about."""
    (root / "billing").mkdir()
    (root / "billing" / "mail.py").write_text(MAIL)
    (root / "billing" / "orders.py").write_text("\n\nclass Order:\n    pass\n")
    (root / "billing" / "limits.py").write_text("\nMAX_TRIES = 3\n")
    return Workspace(root)


def test_each_new_way_of_looking_is_shown_once() -> None:
    calls = [(s.tool, s.arguments) for e in EXAMPLES for s in e.steps]
    assert sum(1 for tool, _ in calls if tool == "find_definition") == 2  # one example
    forgiving = [
        e for e in EXAMPLES if any("closest definitions" in (s.observation or "") for s in e.steps)
    ]
    assert len(forgiving) == 1


def test_the_examples_observations_are_what_the_tools_answer(tmp_path: Path) -> None:
    workspace = billing(tmp_path)
    steps = {(s.tool, str(s.arguments)): s.observation for e in EXAMPLES for s in e.steps}
    assert steps[("search", "{'pattern': 'mails'}")] == workspace.search("mails")
    found = workspace.find_definition("send_invoice").split("\n")
    shown = steps[("find_definition", "{'name': 'send_invoice'}")]
    assert shown == "\n".join(found[:3])  # the tool's lines, its read note left out
    limit = steps[("find_definition", "{'name': 'MAX_TRIES'}")]
    assert limit == workspace.find_definition("MAX_TRIES").split("\n")[0]
