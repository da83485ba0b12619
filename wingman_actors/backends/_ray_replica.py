"""The driver-side proxy of one replica on the Ray backend (see :mod:`.ray`): a node
actor on a thread of the driver that takes work from the node's shared queue, has the
replica's Ray actor process it — over its own direct channel (:mod:`._ray_channel`), or
as Ray calls when there is none — and reports the outcome to the runtime like any node
actor, so routing and supervision do not know where the work ran. The run's Blackboard
stays here: the proxy answers the node's operations on it (:mod:`._ray_board`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._interrupts import RunSuspended, VisitScope
from ..actors._base import NodeActor
from ..actors._envelope import Work
from ..core import Usage
from ._ray_board import DriverBoard
from ._ray_channel import BoardAnswerer, Channel, ChannelLost
from ._ray_wire import (
    AgentEvent,
    Call,
    Done,
    HookEvent,
    ItemDone,
    ModelReply,
    Process,
    Suspended,
    VisitTicket,
)

if TYPE_CHECKING:
    from ..orchestration._blackboard import Blackboard
    from ._ray import RayNode

__all__ = ["RayReplica"]

log = logging.getLogger("wingman_actors.backends")

_SPENT_WAIT_S = 0.05  # the longest a cut waits for a replica to say what its sessions spent


def _unwrap(ray: Any, exc: BaseException) -> BaseException:
    """The node's own exception from a Ray error (a process that died is a RuntimeError
    naming what happened: a failed attempt like any other)."""
    cause = getattr(exc, "cause", None)
    if isinstance(exc, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        return cause
    if isinstance(exc, ray.exceptions.RayActorError | ray.exceptions.WorkerCrashedError):
        err = RuntimeError(f"the node's Ray actor process died ({type(exc).__name__}); Ray restarts it")
        err.__cause__ = exc
        return err
    return exc


class RayReplica(NodeActor):
    """The driver-side proxy of one replica: takes work from the node's queue and runs it
    on the replica's Ray actor (see the module docstring), over its own direct channel
    to the actor when it has one (:mod:`._ray_channel`), else as Ray calls."""

    def __init__(self, node: RayNode, *, agent: bool, fleet: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node = node
        self.agent = agent  # an agent or a fleet: interruptible
        self.fleet = fleet
        self._channel: Channel | None = None
        self._answered = False  # whether its actor's process has answered it (it may still be starting)
        self._key: int | None = None  # the attempt in progress (an interruptible node's), named by interrupt()

    @property
    def interruptible(self) -> bool:
        return self.agent

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        if self.agent:
            self.node.handles[self.replica].interrupt.remote(reason, self._key)

    def spent_so_far(self) -> Usage | None:
        """Asked of the Ray actor (an agent's or fleet's sessions keep count there); None when it does
        not answer within 50 ms: the cut (a timeout, a cancel) goes on without those tokens, as a cancel
        must return within 0.1 s (DESIGN, "Limits that hold for agents")."""
        if not self.agent:
            return None
        ray = self.node.ray
        try:
            spent: Usage | None = ray.get(self.node.handles[self.replica].spent_so_far.remote(), timeout=_SPENT_WAIT_S)
        except Exception:
            log.debug("node %r: replica %d did not say what it spent", self.name, self.replica, exc_info=True)
            return None
        return spent

    def on_stop(self) -> None:
        self._drop_channel()

    def handle_work(self, work: Work) -> bool:
        node = self.node
        if not self._answered or self.replica in node.stale:
            # The actor's process may be starting (this proxy's first input: Ray starts it
            # when the formation starts, seconds on a busy machine) or restarting (killed
            # after a stuck attempt, or died): the attempt, and its time limit, start once
            # the process answers (connected, or pinged when Ray calls carry the work)
            try:
                if self._connected() is None:
                    node.wait_ready(self.replica)
                self._answered = True
            except Exception:  # still gone: the attempt fails in process(), as any lost actor's
                log.debug("node %r: replica %d did not come back", self.name, self.replica, exc_info=True)
        return super().handle_work(work)

    def _drop_channel(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()

    def _connected(self) -> Channel | None:
        """This proxy's channel to its actor (connected on first use, and again after the
        actor's process was restarted), or None: Ray calls carry the work."""
        node = self.node
        channel = self._channel
        if channel is not None and channel.closed():  # the idle actor's process died
            self._drop_channel()
            node.lost(self.replica)
            channel = None
        if self.replica in node.stale:
            node.wait_ready(self.replica)
        if channel is None and node.direct:
            channel = self._channel = self._connect()
        return channel

    def _connect(self) -> Channel | None:
        node = self.node
        failure = ""
        for _ in range(2):  # a second time at the address Ray's restart of the actor gave it
            address = node.endpoint(self.replica)
            if address is None:
                return None
            try:
                return Channel(address, node.key)
            except Exception as exc:
                node.endpoints.pop(self.replica, None)
                failure = f"at {address} ({type(exc).__name__}: {exc})"
        # unreachable (e.g. a cluster node behind NAT): Ray calls then, for the whole node
        log.warning("node %r: no direct channel to its Ray actor %s; inputs go as Ray calls", self.name, failure)
        node.direct = False
        return None

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        ray = self.node.ray
        node = self.node
        observer = self.observer
        events = self.agent and observer is not None and observer.wants_events(env)
        hooks = node.hook_kinds() if node.hooks else None
        fast = env.scope is None and not events and not self.fleet and not hooks
        key = self._key = next(node.keys) if self.agent else None  # before sending: interrupt() names it
        run = env.run
        board = None if run is None else run.blackboard
        try:
            channel = self._connected()
            timeout = self._timeout(env)
            if channel is not None:
                answer = None if board is None else self._board(board, env, timeout)
                if fast:
                    done = next(channel.exchange(Process(env.payload, env.sender, timeout, key, answer is not None),
                                                 answer))
                    return done.output, done.usage
                return self._call(lambda call: channel.exchange(call, answer), env, timeout, events, hooks, key)
            handle = node.handles[self.replica]
            if fast:
                output, usage = ray.get(handle.process.remote(env.payload, env.sender, timeout, key, board is not None))
                return output, usage

            def by_ray(call: Call) -> Iterator[Any]:
                for ref in handle.call.options(num_returns="streaming").remote(call):
                    yield ray.get(ref)

            return self._call(by_ray, env, timeout, events, hooks, key)
        except ChannelLost as exc:
            self._drop_channel()
            node.lost(self.replica)  # Ray restarts it: the next call waits for that
            raise RuntimeError(f"the node's Ray actor process died ({exc}); Ray restarts it") from None
        except ray.exceptions.RayError as exc:
            if isinstance(exc, ray.exceptions.RayActorError):
                node.lost(self.replica)
            raise _unwrap(ray, exc) from None

    def _board(self, board: Blackboard, env: Work, timeout: float | None) -> BoardAnswerer:
        """The driver's end of the run's board for this attempt: a ``watch`` gives up when
        the run ends, the attempt is abandoned or reaches its time limit."""
        run = env.run
        return DriverBoard(board, self.name, timeout, lambda: self.abandoned or (run is not None and run.done))

    def _call(self, send: Callable[[Call], Iterator[Any]], env: Work, timeout: float | None,
              events: bool, hooks: dict[str, frozenset[str]] | None = None,
              key: int | None = None) -> tuple[Any, Usage | None]:
        """The call path (see :mod:`._ray_wire`): apply the actor's messages as they come,
        journalling each delta of a journalled run here, in the driver."""
        observer = self.observer
        scope: VisitScope | None = env.scope
        memo: dict[int, Any] | None = None
        if self.fleet:  # finished items are kept on the work across its retries
            memo = env.memo if env.memo is not None else {}
            env.memo = memo
        ticket = None
        if scope is not None:
            ticket = VisitTicket(scope.run_id, scope.node, scope.visit, list(scope.answers), list(scope.replies),
                                 self._asked_items(env) if self.fleet else {})
        item_scopes: dict[int, VisitScope] = {}

        def item_scope(index: int) -> VisitScope:  # the driver's scope of a fleet item
            found = item_scopes.get(index)
            if found is None:
                found = observer.item_scope(env, index) if observer is not None else None
                if found is None:
                    raise RuntimeError(f"fleet node {self.name!r} suspended a run that has no store")
                item_scopes[index] = found
            return found

        run = env.run
        call = Call(env.payload, env.sender, timeout, events, ticket, None if memo is None else dict(memo), hooks, key,
                    run is not None and run.blackboard is not None)
        for msg in send(call):  # the node's error, or a lost actor, is raised from here
            kind = type(msg)
            if kind is Done:
                return msg.output, msg.usage
            try:
                if kind is AgentEvent:
                    if observer is not None:
                        observer.agent_event(env, msg.event, msg.item)
                elif kind is HookEvent:
                    bus = self.node.hooks.get(msg.token)
                    if bus is not None:
                        bus.emit(msg.event)
                elif kind is ItemDone:
                    if memo is not None:
                        memo[msg.index] = msg.output
                    if scope is not None and observer is not None:
                        observer.item_finished(env, msg.index, msg.output)
                elif kind is ModelReply:
                    if msg.item is not None:
                        item_scope(msg.item).record_reply(msg.response)
                    elif scope is not None:
                        scope.record_reply(msg.response)
                elif kind is Suspended:
                    if scope is None:  # cannot happen: interrupt() needs the visit's scope
                        raise RuntimeError(f"node {self.name!r} suspended a run that has no store")
                    signal = RunSuspended(msg.payload, scope if msg.item is None else item_scope(msg.item))
                    # the other items that asked sent their model responses before this (the
                    # actor sends an item's responses only when it suspends): journalled with it
                    signal.others = tuple(s for i, s in sorted(item_scopes.items()) if i != msg.item and s.kept)
                    signal.spent = msg.spent
                    raise signal
            except RunSuspended:
                raise
            except BaseException:
                # the driver gave up on the attempt (a journal write failed): stop the
                # actor's work, and drop the channel (the rest of the answer is unread)
                self._drop_channel()
                if self.agent:
                    self.node.handles[self.replica].interrupt.remote("the attempt failed in the driver", key)
                raise
        raise RuntimeError(f"node {self.name!r}: the Ray actor's stream ended without a result")

    def _asked_items(self, env: Work) -> dict[int, tuple[list[Any], list[Any]]]:
        """A resumed fleet visit's items that interrupted before: their answers and
        journalled model responses, for the items' scopes in the actor."""
        run = env.run
        observer = self.observer
        replay = run.replay if run is not None else None
        if replay is None or observer is None:
            return {}
        journal = replay.journal
        asked = {i.item for i in journal.interrupts if i.item is not None and (i.node, i.visit) == (env.target, env.visit)}
        # ... and those that asked beside the recorded one, whose model responses were journalled with it
        asked.update(item for (node, visit, item) in journal.progress
                     if item is not None and (node, visit) == (env.target, env.visit))
        found: dict[int, tuple[list[Any], list[Any]]] = {}
        for index in sorted(asked):
            s = observer.item_scope(env, index)
            if s is not None:
                found[index] = (list(s.answers), list(s.replies))
        return found
