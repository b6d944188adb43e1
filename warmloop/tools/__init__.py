"""Tools and the one Toolbox: a tool from a typed function (`tool`), its schema (`schema`),
invoking it under a timeout (`invoke`), and the `Toolbox` (`toolbox`) that holds core tools
and, for large sets, a searchable catalog (`catalog`, `search`), announcements
(`announce`), the stable gateway tools (`gateway`), code mode (`code`) and MCP servers
(`mcp`, `remote_schema`). A plain list of tools is the Toolbox's simplest case.

    from warmloop import Agent, Toolbox

    agent = Agent(model, tools=Toolbox(core=[read_file], catalog=many_tools, code=True))
"""
