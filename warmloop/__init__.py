"""warmloop: tool-using LLM agents whose every request extends the previous one."""

from warmloop.agent.agent import Agent
from warmloop.agent.run import (
    ExtractFailed,
    RequestFailed,
    Run,
    RunAborted,
    RunError,
    SyntaxBudgetExceeded,
)
from warmloop.agent.trajectory import TrajectoryStep
from warmloop.cache.facts import ModelFacts
from warmloop.cache.record import RequestRecord
from warmloop.cache.usage import Usage
from warmloop.errors import (
    ConfigurationError,
    ContextWindowExceeded,
    PairingError,
    ProviderError,
    TranscriptError,
    WarmloopError,
    WorkspaceError,
)
from warmloop.maintenance.maintainer import MaintenanceEvent
from warmloop.maintenance.planner import MaintenancePolicy
from warmloop.maintenance.prune import PrunePolicy
from warmloop.messages import (
    AssistantTurn,
    Meta,
    Notice,
    Summary,
    SystemText,
    ToolCall,
    ToolResult,
    UserText,
)
from warmloop.providers.base import Model
from warmloop.providers.scripted import Reply, ScriptedModel, call, raw_call
from warmloop.providers.select import resolve_model
from warmloop.tools.schema import ToolSpec
from warmloop.tools.tool import Tool, tool
from warmloop.tools.toolbox import Toolbox
from warmloop.transcript import Transcript, check_pairing

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
