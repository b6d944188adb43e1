"""Large toolboxes that keep the cache warm: core tools, a searchable catalog, announcements,
a stable gateway, code mode and MCP servers (issue 9; DESIGN ideas 2 and 3).

    from warmloop import Agent
    from warmloop.toolbox import Toolbox

    agent = Agent(model, tools=Toolbox(core=[read_file], catalog=many_tools, code=True))

Modules: `search` (BM25F ranking), `catalog` (the catalog and how its tools run),
`announce` (the notices that teach discovered tools, read back from the transcript),
`gateway` (the stable tools' specs), `box` (`Toolbox` and one conversation's `Disclosure`),
`code` (`run_code` in pydantic-monty), `mcp` (MCP servers over stdio and streamable HTTP).
"""

from warmloop.toolbox.box import Disclosure, Toolbox
from warmloop.toolbox.catalog import Catalog, RemoteTool
from warmloop.toolbox.code import CodeMode
from warmloop.toolbox.gateway import GATEWAY, RUN_CODE, SEARCH

__all__ = [
    "GATEWAY",
    "RUN_CODE",
    "SEARCH",
    "Catalog",
    "CodeMode",
    "Disclosure",
    "RemoteTool",
    "Toolbox",
]
