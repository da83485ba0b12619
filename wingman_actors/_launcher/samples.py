"""Sample replies per agent: ``SAMPLE_REPLIES = {"writer": [...], "critic": [...]}`` in a
formation module gives each agent its own scripted replies, offline.

A request carries no agent name, so :class:`SampleReplies` tells agents apart by their
instructions (the system prompt starts with them), once the formation is built and
:meth:`SampleReplies.attach` has seen its agents.

Example:
    >>> from wingman_actors import Agent, Formation
    >>> replies = SampleReplies({"writer": ["a draft"], "critic": ["too long"]})
    >>> f = (Formation("f").add_agent("write", Agent("writer", instructions="Write.", provider=replies))
    ...      .add_agent("judge", Agent("critic", instructions="Judge.", provider=replies)).connect("write", "judge"))
    >>> replies.attach(f)
    >>> f.run("go").output
    'too long'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..core import InferenceRequest, InferenceResponse
from ..errors import AgentError, ErrorKind
from ..formation import Formation
from ..providers._base import InferenceStream
from ..providers._scripted import ScriptedProvider
from .errors import UsageError

__all__ = ["SampleReplies"]


class SampleReplies:
    """A provider answering each agent from its own list of scripted replies (cycled).

    Args:
        replies: agent name → replies (texts, responses, or functions of the request,
            as :class:`~wingman_actors.testing.ScriptedProvider` takes them).
        latency_s: seconds each reply takes.

    Raises:
        UsageError: an agent's replies are not a list.
    """

    id = "scripted"
    _heeds_cancel = True  # scripted providers underneath: called on the session's thread

    def __init__(self, replies: Mapping[str, Iterable[Any]], latency_s: float = 0.0) -> None:
        self.model = "sample-replies"
        self._by_agent: dict[str, ScriptedProvider] = {}
        for name, items in replies.items():
            if isinstance(items, str) or not isinstance(items, Iterable):
                raise UsageError(f"SAMPLE_REPLIES[{name!r}] must be a list of replies, got {type(items).__name__}")
            self._by_agent[str(name)] = ScriptedProvider(list(items), cycle=True, model=self.model,
                                                         latency_s=latency_s)
        self._routes: list[tuple[str, str]] = []

    @property
    def latency_s(self) -> float:
        """Seconds each reply takes."""
        return next(iter(self._by_agent.values())).latency_s if self._by_agent else 0.0

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        for provider in self._by_agent.values():
            provider.latency_s = value

    def attach(self, formation: Formation) -> None:
        """Learn the instructions of ``formation``'s agents.

        Raises:
            UsageError: an agent of the formation has no replies (all are named).
        """
        routes: dict[str, str] = {}
        missing: list[str] = []
        for _, attrs in formation.graph.nodes(data=True):
            agent = attrs.get("agent")
            if agent is None:
                continue
            if agent.name in self._by_agent:
                routes.setdefault(agent.instructions, agent.name)
            elif agent.name not in missing:
                missing.append(agent.name)
        if missing:
            raise UsageError(f"SAMPLE_REPLIES has no replies for agent(s) {', '.join(map(repr, missing))}; "
                             f"it has {', '.join(map(repr, self._by_agent)) or 'none'}: add an entry per agent name")
        self._routes = sorted(routes.items(), key=lambda item: -len(item[0]))

    def _provider_for(self, request: InferenceRequest) -> ScriptedProvider:
        for instructions, name in self._routes:
            if request.instructions.startswith(instructions):
                return self._by_agent[name]
        raise AgentError("no sample replies for this request: its instructions match no agent of the formation",
                         kind=ErrorKind.INVALID, provider=self.id)

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        """The next reply of the agent that made the request."""
        return self._provider_for(request).run_inference(request)

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        """The next reply of the agent that made the request, streamed."""
        return self._provider_for(request).stream_inference(request)
