"""warmloop: tool-using LLM agents whose every request extends the previous one."""

from warmloop.cache.facts import ModelFacts
from warmloop.cache.usage import Usage
from warmloop.errors import (
    ConfigurationError,
    ContextWindowExceeded,
    ExtractFailed,
    PairingError,
    ProviderError,
    RequestFailed,
    RunAborted,
    RunError,
    SyntaxBudgetExceeded,
    TranscriptError,
    WarmloopError,
    WorkspaceError,
)
from warmloop.loop import Agent
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.maintenance.prune import PrunePolicy
from warmloop.providers.base import Model
from warmloop.providers.scripted import Reply, ScriptedModel, call, raw_call
from warmloop.providers.select import resolve_model
from warmloop.run import RequestRecord, Run
from warmloop.tools import Tool, Toolbox, ToolSpec, tool
from warmloop.trajectory import TrajectoryStep
from warmloop.transcript import (
    AssistantTurn,
    Meta,
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
    "ContextWindowExceeded",
    "ExtractFailed",
    "MaintenanceEvent",
    "MaintenancePolicy",
    "Meta",
    "Model",
    "ModelFacts",
    "Notice",
    "PairingError",
    "ProviderError",
    "PrunePolicy",
    "Reply",
    "RequestFailed",
    "RequestRecord",
    "Run",
    "RunAborted",
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
    "TrajectoryStep",
    "Transcript",
    "TranscriptError",
    "Usage",
    "UserText",
    "WarmloopError",
    "WorkspaceError",
    "call",
    "check_pairing",
    "raw_call",
    "resolve_model",
    "tool",
]
