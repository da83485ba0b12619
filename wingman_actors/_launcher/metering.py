"""Live tokens and fleet items per node, seen from the provider the launcher hands a run.

The runtime reports a node's usage when the node finishes; a fleet working through its
items for a minute would show nothing until then. The launcher owns the run's provider,
so it wraps it in a :class:`MeteredProvider` that reports every model response, and a
:class:`NodeMeter` tells which node made the request, by its agent's instructions (the
system prompt starts with them). The live view then shows tokens while a node runs and,
for a fleet, how many items (sessions) have started.

A request no node can be told apart by (two nodes whose agents share instructions) is
not counted live; the node's final usage still arrives with its ``node_finished`` event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..core import InferenceRequest, InferenceResponse, StreamEvent, StreamEventType
from ..formation import Formation
from ..providers._base import InferenceStream, Provider
from .progress import RunBoard

__all__ = ["LiveUsage", "MeteredProvider", "NodeMeter"]

Observer = Callable[[InferenceRequest, InferenceResponse], None]


def _unwrapped(provider: Provider) -> Provider:
    return provider


class MeteredProvider:
    """A provider that passes every call to ``inner`` and reports each response.

    Pickling it (a process backend) gives back ``inner`` alone: the observer lives in the
    launcher's process.

    Args:
        inner: the provider doing the work.
        observe: called with each request and its response, from the calling thread.
    """

    def __init__(self, inner: Provider, observe: Observer) -> None:
        self._inner = inner
        self._observe = observe
        self.model = getattr(inner, "model", "")

    @property
    def id(self) -> str:
        """The inner provider's registry id."""
        return self._inner.id

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        """One blocking call of the inner provider, reported."""
        response = self._inner.run_inference(request)
        self._observe(request, response)
        return response

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        """One streamed call of the inner provider; its final response is reported."""
        stream = self._inner.stream_inference(request)

        def events() -> Iterator[StreamEvent]:
            for event in stream:
                if event.type is StreamEventType.MESSAGE_STOP and event.response is not None:
                    self._observe(request, event.response)
                yield event

        return InferenceStream(events(), close=getattr(stream, "close", None))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_inner", "_observe"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unwrapped, (self._inner,))


class NodeMeter:
    """Which node of a formation an inference request comes from.

    Example:
        >>> from wingman_actors import Agent, Formation
        >>> f = Formation("f").add_agent("ask", Agent("asker", instructions="Ask."))
        >>> meter = NodeMeter(f)
        >>> meter.node_of(InferenceRequest(messages=[], instructions="Ask.\\n\\nTools: none"))
        'ask'
    """

    def __init__(self, formation: Formation) -> None:
        by_instructions: dict[str, list[str]] = {}
        for name, attrs in formation.graph.nodes(data=True):
            agent = attrs.get("agent")
            if attrs.get("kind") in ("agent", "fleet") and agent is not None:
                by_instructions.setdefault(str(getattr(agent, "instructions", "")), []).append(str(name))
        # Longest instructions first: "Ask." must not claim the requests of "Ask. Then ...".
        self._prefixes = sorted(by_instructions.items(), key=lambda item: -len(item[0]))

    def node_of(self, request: InferenceRequest) -> str | None:
        """The node whose agent's instructions start the request's system prompt, or None
        when none does or several nodes share those instructions."""
        for instructions, nodes in self._prefixes:
            if request.instructions.startswith(instructions):
                return nodes[0] if len(nodes) == 1 else None
        return None


class LiveUsage:
    """The observer of a :class:`MeteredProvider`: feeds each response to a run's board.

    The provider is made before the formation is built, so the board and the meter are
    attached afterwards; responses before that are ignored.
    """

    def __init__(self) -> None:
        self._meter: NodeMeter | None = None
        self._board: RunBoard | None = None

    def attach(self, formation: Formation, board: RunBoard) -> None:
        """Start counting the responses of ``formation``'s nodes on ``board``."""
        self._meter = NodeMeter(formation)
        self._board = board

    def __call__(self, request: InferenceRequest, response: InferenceResponse) -> None:
        meter, board = self._meter, self._board
        if meter is None or board is None:
            return
        board.observe(meter.node_of(request), response.usage.total_tokens, first_turn=len(request.messages) == 1)
