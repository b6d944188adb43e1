"""The agents a worker knows, by name: a task names its agent, the worker builds it from the
factory registered under that name (once per worker; an Agent is reusable across runs).

`warmloop worker --agents package.module:registry` loads an `AgentRegistry` (or a plain
mapping of names to factories) from the user's code.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping

from warmloop.agent.agent import Agent
from warmloop.errors import ConfigurationError
from warmloop.messages import validate_id

AgentFactory = Callable[[], Agent]


class AgentRegistry:
    """Agent factories by name. `register("name", factory)`, or `@registry.agent("name")`
    over a function that returns an Agent."""

    def __init__(self, factories: Mapping[str, AgentFactory] | None = None) -> None:
        self._factories: dict[str, AgentFactory] = {}
        self._built: dict[str, Agent] = {}
        self._lock = threading.Lock()
        for name, factory in (factories or {}).items():
            self.register(name, factory)

    def register(self, name: str, factory: AgentFactory) -> None:
        validate_id(name, "agent name")
        if not callable(factory):
            raise ConfigurationError(f"agent {name!r}: the factory must be callable")
        if name in self._factories:
            raise ConfigurationError(f"agent {name!r} is registered twice")
        self._factories[name] = factory

    def agent(self, name: str) -> Callable[[AgentFactory], AgentFactory]:
        """Decorator: register the decorated factory under `name`."""

        def register(factory: AgentFactory) -> AgentFactory:
            self.register(name, factory)
            return factory

        return register

    @property
    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def build(self, name: str) -> Agent:
        """The agent registered as `name`, built on first use."""
        with self._lock:
            if name in self._built:
                return self._built[name]
            factory = self._factories.get(name)
            if factory is None:
                raise ConfigurationError(
                    f"no agent {name!r} in this worker; it knows {self.names or 'none'}"
                )
            try:
                agent = factory()
            except Exception as exc:  # a missing variable, a bad key: every try fails alike
                raise ConfigurationError(
                    f"agent {name!r}: its factory failed ({type(exc).__name__}: {exc}); "
                    "fix what it needs on this worker (its environment, its files)"
                ) from exc
            if not isinstance(agent, Agent):
                raise ConfigurationError(
                    f"agent {name!r}: the factory returned {type(agent).__name__}, not an Agent"
                )
            self._built[name] = agent
            return agent


def load_registry(spec: str) -> AgentRegistry:
    """The registry `module:attribute` names (an AgentRegistry or a mapping of factories)."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise ConfigurationError(
            f"--agents {spec!r}: write module:attribute, e.g. myapp.agents:registry"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"--agents {spec!r}: cannot import {module_name} ({exc})") from exc
    found = getattr(module, attribute, None)
    if isinstance(found, AgentRegistry):
        return found
    if isinstance(found, Mapping):
        return AgentRegistry(found)
    raise ConfigurationError(
        f"--agents {spec!r}: {attribute} is {type(found).__name__}, not an AgentRegistry "
        "or a mapping of names to agent factories"
    )
