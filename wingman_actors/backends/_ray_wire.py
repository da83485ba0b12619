"""What crosses the process boundary between a replica's driver-side proxy and its Ray
actor (over the direct channel of :mod:`._ray_channel`, or Ray calls when there is none).

A plain input is a :class:`Process` request, answered by one :class:`Done` (or
:class:`Failed`). A journalled visit, a fleet, or an agent whose events (stream or hook
events) someone listens to takes the *call* path: the proxy sends a :class:`Call` and the actor answers with a
stream of messages, in order: :class:`AgentEvent`, :class:`HookEvent` (an agent hook's
event, for the driver's bus), :class:`ItemDone` (a fleet item
finished), :class:`ModelReply` (a model response of the visit's agent session, to
journal), and last :class:`Done` or :class:`Suspended` (or :class:`Failed`: the node's
exception). The store lives in the driver: the proxy journals each delta as it arrives,
so the actor needs no store and a run on a cluster journals where it was started.

A request says whether the run has a Blackboard (``board``). The board stays in the
driver too: a node that uses it sends a :class:`BoardOp` in the middle of its exchange
and waits for the driver's :class:`BoardAnswer` on the same connection (see
:mod:`._ray_board`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..core import StreamEvent, Usage
from ..events import Event

__all__ = [
    "AgentEvent", "BoardAnswer", "BoardMethod", "BoardOp", "Call", "Done", "Failed", "HookEvent", "ItemDone",
    "ModelReply", "Process", "Suspended", "VisitTicket",
]


@dataclass(frozen=True, slots=True)
class VisitTicket:
    """The durable context of a journalled visit, as the actor needs it to rebuild its
    :class:`~wingman_actors._interrupts.VisitScope`.

    Attributes:
        run_id: the run.
        node: the node.
        visit: the node's visit number.
        answers: the answers given to the visit's interrupts, in order.
        replies: journalled model responses its agent session replays (a resumed visit).
        items: a fleet's items that interrupted before: index -> (answers, replies).
    """

    run_id: str
    node: str
    visit: int
    answers: list[Any] = field(default_factory=list)
    replies: list[Any] = field(default_factory=list)
    items: dict[int, tuple[list[Any], list[Any]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Process:
    """One attempt on the fast path (no store, no fleet, no listener): the node's input,
    its sender, the attempt's time limit, the attempt's key (an interruptible node's:
    an interrupt names the attempt it is for; None otherwise), and whether the run has a
    Blackboard (the node reaches it through the driver)."""

    payload: Any
    sender: str
    timeout: float | None
    key: int | None = None
    board: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """One attempt on the call path.

    Attributes:
        payload: the node's input.
        sender: who sent it.
        timeout: the attempt's time limit (an agent's session uses it).
        events: stream the agent's events back.
        ticket: the visit's durable context (journalled runs), else None.
        memo: a fleet's items finished by earlier attempts (index -> output): not run again.
        hooks: the kinds of event the driver's buses want (bus token -> kinds), sent
            back as :class:`HookEvent` (see :mod:`._ray_hooks`); None: none.
        key: the attempt's key (an interruptible node's: an interrupt names the
            attempt it is for); None otherwise.
        board: whether the run has a Blackboard (the node reaches it through the driver).
    """

    payload: Any
    sender: str
    timeout: float | None
    events: bool = False
    ticket: VisitTicket | None = None
    memo: dict[int, Any] | None = None
    hooks: dict[str, frozenset[str]] | None = None
    key: int | None = None
    board: bool = False


@dataclass(frozen=True, slots=True)
class HookEvent:
    """An agent hook event (:class:`~wingman_actors.events.Event`) for the driver's bus ``token``."""

    token: str
    event: Event


@dataclass(frozen=True, slots=True)
class AgentEvent:
    """A stream event of the agent at work (of fleet item ``item``'s session; None: an agent node's)."""

    event: StreamEvent
    item: int | None = None


@dataclass(frozen=True, slots=True)
class ItemDone:
    """A fleet item finished with ``output`` (kept for a retry; journalled when the run is)."""

    index: int
    output: Any


@dataclass(frozen=True, slots=True)
class ModelReply:
    """A model response the visit's agent session (or fleet item ``item``'s) got before
    the visit suspended (journalled: a resume replays it)."""

    response: Any
    item: int | None = None


@dataclass(frozen=True, slots=True)
class Done:
    """The attempt succeeded."""

    output: Any
    usage: Usage | None


@dataclass(frozen=True, slots=True)
class Suspended:
    """The visit (or its fleet item ``item``) called ``interrupt(payload)``: the run suspends
    (``spent``: what its model calls cost before it asked, see ``RunSuspended.spent``)."""

    payload: Any
    item: int | None = None
    spent: Usage | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """The attempt raised ``error`` (the last message of an exchange that failed)."""

    error: BaseException


BoardMethod = Literal["get", "set", "update", "delete", "keys", "watch", "to_dict", "contains", "len"]
"""The Blackboard operations a node in a Ray actor asks the driver for."""


@dataclass(frozen=True, slots=True)
class BoardOp:
    """A node asks the driver to apply ``method(*args)`` to the run's Blackboard (sent in
    the middle of an exchange; the driver answers with a :class:`BoardAnswer` before it
    reads on)."""

    method: BoardMethod
    args: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class BoardAnswer:
    """The driver's answer to a :class:`BoardOp`: the value, or the error to raise in the node."""

    value: Any = None
    error: BaseException | None = None
