"""A large toolbox: a few core tools stay in the tool block, the rest wait in a catalog the
model searches (`search_tools`) and calls through one stable gateway (`call_tool`), so the
tool block never changes and the provider's cache is never lost to a new tool."""

from warmloop import Agent, ScriptedModel, Toolbox, call, tool


@tool
def read_file(path: str) -> str:
    """Read a text file of the project."""
    return f"contents of {path}"


@tool
def get_invoice(number: str) -> str:
    """Return an invoice by its number."""
    return f"invoice {number}: 120.00 EUR"


@tool
def refund(number: str) -> str:
    """Refund an invoice."""
    return f"invoice {number} refunded"


box = Toolbox(core=[read_file], catalog=[get_invoice, refund])
print("tool block:", [spec.name for spec in box.specs()])

model = ScriptedModel(
    [
        call("search_tools", query="invoice"),
        call("call_tool", name="get_invoice", arguments={"number": "7"}),
        call("submit", answer="120.00 EUR"),
    ]
)
run = Agent(model, tools=box).run_sync("How much is invoice 7?")
for step in run.trajectory:
    print(f"{step.tool}: {step.observation.splitlines()[0]}")
print("answer:", run.outputs.answer)
