"""Testkit for users: unit-test agents and formation nodes in isolation, offline.

Everything an actor test needs is here; no test has to import a private module or
spell a message kind as a string:

* :func:`node_actor` — a node actor from a function or an agent (a Pykka ``ActorRef``).
* :func:`work` — a work message to tell it.
* :class:`ReplyKind` — what a node replies: ``ReplyKind.RESULT`` or ``ReplyKind.FAILURE``.
* :class:`ActorProbe` — an actor that records the messages it receives, with
  ``expect_message`` / ``expect_no_message``; make it the node's ``reply_to``.
* :func:`run_node` — run one node of a formation alone, get its output and trace.
* :class:`ScriptedProvider` — canned model replies (text, responses, exceptions, callables).
* :class:`Envelope` — the type of the replies (``payload``, ``sender``, ``run_id``, ``type``...).
* :class:`NodeStatus` — a trace's ``status`` (``NodeStatus.SUCCEEDED``, ``FAILED``, ...), as
  :func:`run_node` and ``FormationResult.nodes`` report it.

Fixtures of the pytest plugin (installed with the package, no ``conftest.py`` needed):

* ``actor_probe`` — a started :class:`ActorProbe`, stopped after the test.
* ``scripted_provider`` — a factory: ``scripted_provider(["reply", ...], latency_s=0.0,
  cycle=False)`` makes a :class:`ScriptedProvider`.
* A leak check fails any test that uses these fixtures (or is marked
  ``wingman_leak_check``, or every test with the ini option ``wingman_leak_check = true``)
  and leaves an actor or a thread running; ``@pytest.mark.wingman_allow_leaks`` turns it
  off for a test.

Example:
    >>> with ActorProbe.start() as probe:
    ...     ref = node_actor(lambda x: x * 2, name="double", reply_to=probe)
    ...     ref.tell(work(21))
    ...     reply = probe.expect_message(ReplyKind.RESULT)
    ...     stopped = ref.stop()
    >>> reply.payload, reply.sender
    (42, 'double')
    >>> from wingman_actors import Formation
    >>> f = Formation("math").add_function("double", lambda x: x * 2)
    >>> run_node(f, "double", 21).output
    42
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import pykka

from . import _timeouts as timeouts
from .actors._address import RuntimeActor, start_actor
from .actors._envelope import Envelope, EnvelopeType, new_envelope
from .actors._mapping import MapActor
from .actors._nodes import AgentActor, FleetActor, FunctionActor, NodeActor
from .agents._agent import Agent
from .errors import FormationRuntimeError
from .formation._nested_map import FormationMapActor
from .formation._nesting import FormationActor
from .formation._options import RunOptions
from .formation._result import NodeStatus, NodeTrace
from .formation._runtime import RunningFormation
from .orchestration._blackboard import Blackboard
from .providers._base import Provider
from .providers._scripted import ScriptedProvider

__all__ = [
    "ActorProbe", "Envelope", "NodeRun", "NodeStatus", "ReplyKind", "ScriptedProvider", "node_actor", "run_node",
    "work",
]


def _seconds(what: str, value: Any, *, zero: bool = True) -> None:
    """Refuse ``value`` unless it is a number of seconds (>= 0, or > 0 without ``zero``)."""
    bound = ">= 0" if zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number of seconds {bound}, got {value!r}")
    if not (value >= 0 if zero else value > 0):  # (nan is neither)
        raise ValueError(f"{what} must be a number of seconds {bound}, got {value!r}")


class ReplyKind(enum.StrEnum):
    """What a node actor replies to a work message (an envelope's ``type``).

    * ``RESULT``: the node's output is the ``payload``.
    * ``FAILURE``: the node raised; the ``payload`` is the exception.

    A ``StrEnum``: ``ReplyKind.RESULT == "result"``.
    """

    RESULT = EnvelopeType.RESULT.value
    FAILURE = EnvelopeType.FAILURE.value


def work(payload: Any, *, run_id: str = "", sender: str = "test", target: str = "") -> Envelope:
    """A work message for a node actor: tell it with ``ref.tell(work(payload))``.

    Args:
        payload: what the node receives (a function node's argument, an agent's input).
        run_id: copied to the reply's ``run_id`` (to tell replies apart).
        sender: who sent it (a node's name, or ``"input"``); the node's input when it
            takes a dict keyed by predecessor.
        target: the node it is for (its name; informational when told directly).
    """
    return new_envelope(EnvelopeType.WORK, payload, run_id=run_id, sender=sender, target=target)


def node_actor(
    node: Callable[..., Any] | Agent,
    *,
    reply_to: Any = None,
    name: str | None = None,
    prompt: str | None = None,
    blackboard: Blackboard | None = None,
) -> pykka.ActorRef[Any]:
    """Start a node actor from a function or an agent, as a formation would run it.

    Tell it :func:`work` messages; it replies to ``reply_to`` with an :class:`Envelope`
    of kind :class:`ReplyKind` (``RESULT``, its output as ``payload``; or ``FAILURE``,
    the exception). Stop it with ``ref.stop()`` when done.

    Args:
        node: a function (called with the payload) or an :class:`~wingman_actors.Agent`
            (each message runs a fresh session on the payload rendered as text).
        reply_to: where replies go: an :class:`ActorProbe`, an actor ref, or a callable
            taking the reply envelope (None: replies are dropped).
        name: the node's name, the ``sender`` of its replies (default: the function's
            or the agent's name).
        prompt: an agent's prompt template (``{input}`` is the payload); agents only.
        blackboard: the board the node sees as ``current_blackboard()``.

    Returns:
        The actor's Pykka ``ActorRef`` (``tell``, ``stop``).

    Raises:
        TypeError: ``node`` is neither a function nor an agent, or ``prompt`` was given
            for a function.
    """
    common: dict[str, Any] = {"name": name, "reply_to": reply_to, "blackboard": blackboard}
    if isinstance(node, Agent):
        return AgentActor.start(node, prompt=prompt, **common)
    if not callable(node):
        raise TypeError(
            f"node_actor takes a function or an Agent, got {type(node).__name__}: pass e.g. "
            "node_actor(lambda x: x + 1, reply_to=probe) or node_actor(Agent(...), reply_to=probe)"
        )
    if prompt is not None:
        raise TypeError("prompt= applies to an agent node; a function node takes its payload as it is")
    return FunctionActor.start(node, **common)


class _ProbeActor(RuntimeActor):
    use_daemon_thread = False  # Pykka's default: a test waits for its probe

    def __init__(self, probe: ActorProbe) -> None:
        super().__init__()
        self.probe = probe
        self.thread_name = f"wingman-probe-{probe.name}"

    def on_receive(self, message: Any) -> Any:
        self.probe._record(message)
        return None


def _described(message: Any) -> Any:
    """What a probe's error shows of a message it got: a reply's kind, and a failure's
    exception with it (what a test waiting for a result most needs to see)."""
    kind = getattr(message, "type", None)
    if kind is None:
        return message
    if kind == ReplyKind.FAILURE:
        return f"failure: {getattr(message, 'payload', None)!r}"
    return str(kind)


class ActorProbe:
    """A Pykka actor that records every message it receives, for assertions.

    Pass the probe (or ``probe.ref``) as ``reply_to`` of a node actor; then wait for what
    it sends. Stop it when done (the pytest fixture ``actor_probe`` does).

    Example:
        >>> probe = ActorProbe.start()
        >>> ref = node_actor(lambda x: x + 1, name="inc", reply_to=probe)
        >>> ref.tell(work(1))
        >>> probe.expect_message(ReplyKind.RESULT).payload
        2
        >>> ref.stop()
        True
        >>> probe.stop()
    """

    def __init__(self, name: str = "probe") -> None:
        self.name = name
        self._cond = threading.Condition()
        self._all: list[Any] = []
        self._unread: deque[Any] = deque()
        self._actor: _ProbeActor | None = None
        self._stopped = False

    @classmethod
    def start(cls, name: str = "probe") -> ActorProbe:
        """Create and start a probe."""
        probe = cls(name)
        probe._actor = start_actor(_ProbeActor, probe)
        return probe

    @property
    def ref(self) -> pykka.ActorRef[Any]:
        """The probe's actor ref."""
        if self._actor is None:
            if self._stopped:
                raise RuntimeError(f"probe {self.name!r} is stopped: start a new one with ActorProbe.start() "
                                   "(what it received stays readable: messages, expect_message)")
            raise RuntimeError(f"probe {self.name!r} is not started: make probes with ActorProbe.start(), "
                               "not ActorProbe()")
        return self._actor.actor_ref

    def tell(self, message: Any) -> None:
        """Send the probe a message (so the probe itself can be a ``reply_to``)."""
        self.ref.tell(message)

    def _record(self, message: Any) -> None:
        with self._cond:
            self._all.append(message)
            self._unread.append(message)
            self._cond.notify_all()

    @property
    def messages(self) -> list[Any]:
        """Every message received so far, in order."""
        with self._cond:
            return list(self._all)

    def expect_message(self, type: ReplyKind | str | None = None, timeout: float = 3.0) -> Any:
        """Wait for the next unread message (of kind ``type``, for envelopes: a
        :class:`ReplyKind`) and return it.

        Unread messages of other kinds before it are skipped. Raises ``AssertionError``
        if none arrives within ``timeout`` seconds (``TypeError``/``ValueError`` when
        ``timeout`` is not a number of seconds >= 0).
        """
        _seconds("timeout", timeout)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                while self._unread:
                    message = self._unread.popleft()
                    if type is None or getattr(message, "type", None) == type:
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    what = f"{str(type)!r} message" if type else "message"
                    raise AssertionError(
                        f"probe {self.name!r} received no {what} within {timeout:g}s "
                        f"(received so far: {[_described(m) for m in self._all]})"
                    )
                self._cond.wait(remaining)

    def expect_no_message(self, duration: float = 0.1) -> None:
        """Assert that no unread message arrives within ``duration`` seconds (a number >= 0,
        else ``TypeError``/``ValueError``)."""
        _seconds("duration", duration)
        deadline = time.monotonic() + duration
        with self._cond:
            while not self._unread:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._cond.wait(remaining)
            raise AssertionError(f"probe {self.name!r} received an unexpected message: {self._unread[0]!r}")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the probe's actor and wait for its thread."""
        actor, self._actor = self._actor, None
        if actor is not None:
            self._stopped = True
            actor.actor_ref.stop(block=True, timeout=timeout)
            actor.thread.join(timeout)

    def __enter__(self) -> ActorProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class NodeRun:
    """What :func:`run_node` returns: the node's output, its trace (one visit: its ``output``
    and ``outputs`` as a formation run's trace has them) and the reply envelope."""

    output: Any
    trace: NodeTrace
    envelope: Envelope


_SPEC_OVERRIDES = {"fn", "agent", "prompt", "max_workers"}


def _check_fan_in(name: str, preds: tuple[str, ...], keywords: bool, input: Any) -> None:
    """A fan-in function node takes what a formation gives it: a dict keyed by predecessor
    (for keyword parameters, only predecessors' names as keys)."""
    names = ", ".join(repr(p) for p in preds)
    if not isinstance(input, Mapping):
        example = ", ".join(f"{p!r}: ..." for p in preds)
        raise TypeError(f"node {name!r} has several predecessors ({names}) and takes a dict keyed by predecessor, "
                        f"as a formation gives it: run_node(formation, {name!r}, {{{example}}}); got "
                        f"{type(input).__name__}")
    unknown = [key for key in input if key not in preds]
    if keywords and unknown:
        raise TypeError(f"node {name!r} has no predecessor {unknown[0]!r}: its keyword arguments are its "
                        f"predecessors {names}")


def run_node(
    formation: Any,
    name: str,
    input: Any,
    *,
    provider: Provider | None = None,
    timeout: float = 30.0,
    blackboard: Blackboard | None = None,
    **overrides: Any,
) -> NodeRun:
    """Run node ``name`` of ``formation`` alone: start its actor, send it ``input``, wait
    for the reply, stop the actor.

    One attempt, without the supervisor: the node's ``retries``, ``backoff``, ``timeout``
    and ``on_error`` do not apply (test those through ``formation.run``). The reply
    envelope is returned as well, with its timings and usage.

    Args:
        formation: the formation (it is validated first).
        name: the node to run.
        input: what the node receives (for a fan-in node: the dict keyed by predecessor).
        provider: replaces the provider of an agent or fleet node's agent (of every
            agent inside a formation node's formation, which runs alone).
        timeout: seconds to wait for the reply (``math.inf`` or None: no limit).
        blackboard: the board the node shares (its ``blackboard`` parameter, or
            ``current_blackboard()`` for agents), as in a formation run given one.
        **overrides: replace node attributes for this run: ``fn``, ``agent``, ``prompt``,
            ``max_workers``.

    Raises:
        KeyError: no node of that name (the message lists the nodes).
        TypeError: ``formation`` is not a formation, ``timeout`` not a number, an override it cannot apply, or a fan-in function node's input that is
            not a dict keyed by its predecessors.
        FormationRuntimeError: the node failed (the cause is chained).
        ValueError: ``timeout`` is not > 0 (NaN included).
    """
    if not callable(getattr(formation, "validate", None)):
        raise TypeError(f"run_node takes a Formation, e.g. run_node(formation, 'node', input), "
                        f"got {type(formation).__name__}")
    wait = timeouts.limit("timeout", timeout)  # (math.inf: None, no limit)
    plan = formation.validate()
    if name not in plan.nodes:
        raise KeyError(f"formation {plan.name!r} has no node {name!r}; nodes: {', '.join(plan.nodes)}")
    unknown = set(overrides) - _SPEC_OVERRIDES
    if unknown:
        raise TypeError(f"run_node cannot override {sorted(unknown)}; it can override {sorted(_SPEC_OVERRIDES)}")
    spec = dataclasses.replace(plan.nodes[name], **overrides)
    if spec.kind == "function" and spec.input_mode != "single":
        _check_fan_in(spec.name, spec.forward_preds, spec.input_mode == "kwargs", input)
    agent = spec.agent
    if provider is not None and spec.subplan is None:
        if agent is None:
            raise TypeError(f"node {name!r} is a {spec.kind} node: it has no provider to override")
        agent = agent.with_overrides(provider=provider)
    reply: Future[Envelope] = Future()
    common: dict[str, Any] = {"name": name, "reply_to": reply.set_result, "blackboard": blackboard}
    actor: NodeActor
    if spec.kind == "function":
        assert spec.fn is not None
        actor = start_actor(FunctionActor, spec.fn, mode=spec.input_mode, input_adapter=spec.input_adapter,
                            kwarg_adapters=spec.kwarg_adapters, board_param=spec.blackboard, **common)
    elif spec.subplan is not None:  # a formation node, or a map over a formation: its formation runs alone
        launch = functools.partial(RunningFormation, spec.subplan, RunOptions(provider=provider))
        if spec.kind == "map":
            actor = start_actor(FormationMapActor, spec.subplan, launch=launch, max_workers=spec.max_workers, **common)
        else:
            actor = start_actor(FormationActor, spec.subplan, launch=launch, **common)
    elif spec.kind == "map":
        assert spec.fn is not None
        actor = start_actor(MapActor, spec.fn, max_workers=spec.max_workers, input_adapter=spec.input_adapter,
                            board_param=spec.blackboard, **common)
    elif spec.kind == "agent":
        assert agent is not None
        actor = start_actor(AgentActor, agent, prompt=spec.prompt, **common)
    else:
        assert agent is not None
        actor = start_actor(FleetActor, agent, max_workers=spec.max_workers, prompt=spec.prompt, **common)
    wall = time.time()
    try:
        actor.actor_ref.tell(new_envelope(EnvelopeType.WORK, input, sender="input", target=name))
        try:
            env = reply.result(wait)
        except FutureTimeout:
            interrupt = getattr(actor, "interrupt", None)
            if interrupt is not None:
                interrupt()
            raise FormationRuntimeError(
                f"node {name!r} gave no reply within {timeout:g}s", node=name, attempts=1
            ) from None
    finally:
        actor.actor_ref.stop(block=False)
        actor.thread.join(wait)
    duration = env.finished - env.started
    ok = env.type == EnvelopeType.RESULT
    trace = NodeTrace(
        name,
        status=NodeStatus.SUCCEEDED if ok else NodeStatus.FAILED,
        attempts=1, visits=1, started_at=wall, finished_at=wall + duration, duration_s=duration,
        usage=env.usage or NodeTrace(name).usage,
        error=None if ok else f"{type(env.payload).__name__}: {env.payload}",
        output=env.payload if ok else None, outputs=[env.payload] if ok else [],
    )
    if not ok:
        raise FormationRuntimeError(
            f"node {name!r} failed: {trace.error}", node=name, attempts=1
        ) from env.payload
    return NodeRun(env.payload, trace, env)
