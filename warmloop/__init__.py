"""warmloop: tool-using LLM agents whose every request extends the previous one."""

from warmloop.cache.usage import Usage
from warmloop.errors import (
    ConfigurationError,
    ExtractFailed,
    ProviderError,
    RequestFailed,
    RunError,
    SyntaxBudgetExceeded,
    WarmloopError,
    WorkspaceError,
)
from warmloop.loop import Agent, RequestRecord, Run
from warmloop.providers.scripted import Reply, ScriptedModel, call, raw_call
from warmloop.tools import Tool, Toolbox, ToolSpec, tool
from warmloop.transcript import (
    AssistantTurn,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    Transcript,
    UserText,
    check_pairing,
)

__all__ = [
    "Agent",
    "AssistantTurn",
    "ConfigurationError",
    "ExtractFailed",
    "Notice",
    "ProviderError",
    "Reply",
    "RequestFailed",
    "RequestRecord",
    "Run",
    "RunError",
    "ScriptedModel",
    "Summary",
    "SyntaxBudgetExceeded",
    "SystemText",
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
    "Transcript",
    "Usage",
    "UserText",
    "WarmloopError",
    "WorkspaceError",
    "call",
    "check_pairing",
    "raw_call",
    "tool",
]
