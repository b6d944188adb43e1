"""Tools and the one Toolbox: a tool from a typed function (`tool`), its schema (`schema`),
invoking it under a time limit and saying what happened (`invoke`), and the `Toolbox`
(`toolbox`), whose simplest case is a plain list of tools. For large sets it adds a
searchable catalog (`catalog`, `search`), announcements (`announce`), the stable gateway
tools (`gateway`), code mode (`code`) and MCP servers (`mcp`, `remote_schema`); each
conversation sees it through its own `toolbox.Disclosure`.

    from warmloop import Agent, Toolbox

    agent = Agent(model, tools=Toolbox(core=[read_file], catalog=many_tools, code=True))

A documented internal for benchmarks: `benchmarks/` may import it (the list is in
`tests/test_architecture.py`); change it knowing a benchmark figure may move."""
