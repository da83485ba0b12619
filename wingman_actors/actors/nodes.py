"""Node actors: a function, an agent or a fleet behind a Pykka mailbox.

Each actor handles ``work`` envelopes one at a time and replies with a ``result`` or a
``failure`` envelope to its ``reply_to``: another actor (anything with ``tell``) or a
callable. They are usable on their own:

    >>> ref = FunctionActor.start(lambda x: x * 2, name="double", reply_to=print)  # doctest: +SKIP
    >>> ref.tell(new_envelope("work", 21))                                          # doctest: +SKIP

Inside a formation the runtime passes a callable ``reply_to`` that routes the output
downstream on the node's own thread, so a hop costs one mailbox put.
"""

from __future__ import annotations

import inspect
import json
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import pykka
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..agent import Agent
from ..cancel import CancelToken, cancel_scope
from ..core import StreamEvent, Usage
from ..errors import FleetItemsError, PayloadError  # re-exported: their old home
from ..fleet import DEFAULT_MAX_WORKERS, Fleet, Task
from ..session import Session
from .envelope import Envelope, EnvelopeType, Work

__all__ = [
    "AgentActor",
    "FleetActor",
    "FleetItemsError",
    "FunctionActor",
    "NodeActor",
    "NodeObserver",
    "PayloadError",
    "STOP",
    "render_input",
]

log = logging.getLogger("wingman_actors.actors")

ReplyTo = Callable[[Envelope], Any] | pykka.ActorRef[Any] | Any


class _Stop:
    def __repr__(self) -> str:
        return "STOP"


STOP: Any = _Stop()
"""Put in a node's shared queue, stops the one replica that takes it."""


class NodeObserver(Protocol):
    """Hooks the formation runtime gives node actors (all optional for standalone use)."""

    def started(self, work: Work) -> None: ...

    def wants_events(self, work: Work) -> bool: ...

    def agent_event(self, work: Work, event: StreamEvent) -> None: ...

    def attempt_timeout(self, work: Work) -> float | None: ...

    def completed(
        self, work: Work, attempt: int, output: Any, usage: Usage | None, started: float, finished: float
    ) -> None: ...

    def failed(
        self, work: Work, attempt: int, exc: BaseException, started: float, finished: float, actor: Any
    ) -> bool: ...


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2)
    try:
        return json.dumps(TypeAdapter(Any).dump_python(value, mode="json"), indent=2, ensure_ascii=False)
    except Exception:
        return str(value)


class _Fields(dict[str, Any]):
    def __init__(self, node: str, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self.node = node

    def __missing__(self, key: str) -> Any:
        raise PayloadError(
            f"prompt of node {self.node!r} uses {{{key}}}, but the input has no such field "
            f"(available: {', '.join(sorted(self))})"
        )


def render_input(payload: Any, prompt: str | None, node: str = "") -> str:
    """The user message for an agent: ``prompt`` filled with ``{input}`` (the payload as
    text) and, for dict or model payloads, their fields; without a prompt, the payload as
    text (JSON for structured data)."""
    text = _text(payload)
    if prompt is None:
        return text
    fields: dict[str, Any] = {}
    if isinstance(payload, BaseModel):
        fields.update(payload.model_dump())
    elif isinstance(payload, Mapping):
        fields.update({str(k): v for k, v in payload.items()})
    fields["input"] = text
    return prompt.format_map(_Fields(node, fields))


class NodeActor(pykka.ThreadingActor):
    """Base of the node actors: receive ``work``, call :meth:`process`, reply.

    Args:
        name: the node's name (the ``sender`` of its replies).
        reply_to: where replies go: an actor ref (or anything with ``tell``) or a callable.
        observer: runtime hooks (formations set it; standalone actors leave it None).
        replica: index of this replica when a node runs several.
    """

    # Daemon threads: an attempt abandoned in stuck user code must not keep the
    # interpreter alive (Pykka documents this attribute for actor implementors).
    use_daemon_thread = True

    def __init__(
        self,
        name: str,
        *,
        reply_to: ReplyTo = None,
        observer: NodeObserver | None = None,
        replica: int = 0,
        notify_start: bool = False,
        inbox: queue.SimpleQueue[Any] | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self.observer = observer
        self.replica = replica
        self.notify_start = notify_start
        # Replicas of one node share one queue: an idle replica pulls the next input,
        # so a replica stuck in user code holds only the input it is working on.
        self.shared_inbox = inbox is not None
        if inbox is not None:
            self.actor_inbox = inbox
        self.current: Work | None = None  # the work in progress, read by cancel and timeouts
        self.abandoned = False  # set when the runtime gave up on the attempt in progress
        self._reply: Callable[[Envelope], Any] | None
        if reply_to is None:
            self._reply = None
        elif hasattr(reply_to, "tell"):
            self._reply = reply_to.tell
        elif callable(reply_to):
            self._reply = reply_to
        else:
            raise TypeError(f"reply_to must be an actor ref or a callable, got {type(reply_to).__name__}")

    @staticmethod
    def _create_actor_inbox() -> Any:
        # A C-level queue: put/get cost a fraction of queue.Queue's Python code.
        return queue.SimpleQueue()

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Stop the work in progress at its next boundary (from another thread). Function
        actors cannot be interrupted: the runtime abandons their attempt instead."""

    @property
    def interruptible(self) -> bool:
        """Whether :meth:`interrupt` stops the work in progress."""
        return False

    def _start_actor_loop(self) -> None:
        # Pykka names threads after the class; name them after the node for debugging.
        thread = threading.Thread(target=self._actor_loop, name=f"wingman-node-{self.name}-{self.replica}")
        thread.daemon = self.use_daemon_thread
        self.thread = thread
        thread.start()

    def _actor_loop_running(self) -> None:
        # Pykka's loop, with a fast lane for work envelopes (no wrapper, no dispatch
        # chain, no reply future); every other message takes Pykka's own path.
        get = self.actor_inbox.get
        stopped = self.actor_stopped
        handle_work = self.handle_work
        if stopped.is_set():  # on_start failed
            return
        while True:
            item: Any = get()
            if type(item) is Work:
                try:
                    if not handle_work(item) and not self.abandoned:
                        continue  # the common case: on to the next input
                    # retired after a failure (the supervisor starts a fresh replica), or
                    # abandoned in a stuck attempt (a fresh replica already serves)
                    self._stop()
                except Exception:
                    self._crash()
                except BaseException:
                    self._halt_all()
            elif item is STOP:
                self._stop()
                return
            else:
                self._pykka_one(item)
            if stopped.is_set():
                return

    def _pykka_one(self, envelope: Any) -> None:
        # One iteration of pykka.Actor._actor_loop_running, for non-work messages.
        try:
            response = self._handle_receive(envelope.message)
            if envelope.reply_to is not None:
                envelope.reply_to.set(response)
        except Exception:
            if envelope.reply_to is not None:
                envelope.reply_to.set_exception()
            else:
                self._crash()
        except BaseException:
            self._halt_all()

    def _crash(self) -> None:
        # As Pykka does for an unhandled exception: log, stop this actor, call on_failure.
        self._handle_failure(*sys.exc_info())
        try:
            self.on_failure(*sys.exc_info())
        except Exception:
            self._handle_failure(*sys.exc_info())

    def _halt_all(self) -> None:
        # As Pykka does for KeyboardInterrupt/SystemExit: stop every actor.
        self._stop()
        pykka.ActorRegistry.stop_all()

    def _handle_receive(self, message: Any) -> Any:
        if type(message) is Envelope and message.type is EnvelopeType.WORK:
            self.handle_work(Work(message))  # an envelope told to a standalone actor
            return None
        return super()._handle_receive(message)

    def on_receive(self, message: Any) -> Any:
        if type(message) is Envelope and message.type == EnvelopeType.WORK:
            self.handle_work(Work(message))
            return None
        log.warning("node %r ignored a message it does not understand: %r", self.name, message)
        return None

    def handle_work(self, work: Work) -> bool:
        """Process one delivery of a ``work`` envelope and reply. Returns True when this
        replica must retire (the runtime restarts a fresh one after a failure)."""
        env = work.envelope
        run = env.run
        self.current = work  # first: a cancel that misses the check below sees this
        if run is not None and run.done:
            self.current = None
            return False  # the run ended (failed, cancelled, timed out, stopped): drop its leftovers
        observer = self.observer
        attempt = work.attempt  # the supervisor may bump it (after a timeout) while we work
        work.replica = self.replica
        if observer is not None and (self.notify_start or run.listeners):
            observer.started(work)
        started = time.perf_counter()
        try:
            output, usage = self.process(work)
        except Exception as exc:
            self.current = None
            if observer is not None:
                return observer.failed(work, attempt, exc, started, time.perf_counter(), self)
            reply = Envelope(
                0, env.run_id, self.name, EnvelopeType.FAILURE, exc, time.time(), env.target, run,
                attempt, env, None, started, time.perf_counter(), self.replica,
            )
        else:
            self.current = None
            if observer is not None:
                observer.completed(work, attempt, output, usage, started, time.perf_counter())
                return False
            reply = Envelope(
                0, env.run_id, self.name, EnvelopeType.RESULT, output, time.time(), env.target, run,
                attempt, env, usage, started, time.perf_counter(), self.replica,
            )
        if self._reply is not None:
            self._reply(reply)
        return False

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        """Compute the output of one work envelope. Subclasses implement it."""
        raise NotImplementedError

    def _actor_loop_teardown(self) -> None:
        # A shared queue belongs to the node, not to this replica: what waits in it is
        # for the replicas that stay (Pykka's teardown would answer it as dead letters).
        if not self.shared_inbox:
            super()._actor_loop_teardown()

    def _timeout(self, env: Work) -> float | None:
        return self.observer.attempt_timeout(env) if self.observer is not None else None


class FunctionActor(NodeActor):
    """A pure Python function as an actor.

    Args:
        fn: the function.
        mode: ``single`` (``fn(payload)``), ``dict`` (``fn({pred: value})``) or ``kwargs``
            (``fn(**{pred: value})``).
        input_adapter: validates the payload in ``single``/``dict`` mode (None: no check).
        kwarg_adapters: validates each keyword argument in ``kwargs`` mode.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        mode: str = "single",
        input_adapter: TypeAdapter[Any] | None = None,
        kwarg_adapters: Mapping[str, TypeAdapter[Any] | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name or str(getattr(fn, "__name__", "function")), **kwargs)
        self.fn = fn
        self.mode = mode
        self.input_adapter = input_adapter
        self.kwarg_adapters = dict(kwarg_adapters or {})
        self._fast_type = _plain_class(input_adapter)
        self._required: frozenset[str] = frozenset()
        if mode == "kwargs":
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):
                params = ()  # type: ignore[assignment]
            self._required = frozenset(
                p.name for p in params
                if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            )

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        payload = env.payload
        if self.mode == "kwargs":
            args = dict(payload)
            missing = self._required - args.keys()
            if missing:
                raise PayloadError(
                    f"node {self.name!r} got no value for parameter(s) {', '.join(sorted(missing))}: "
                    "their predecessors were skipped (a when= condition did not fire, or on_error='skip'); "
                    "give those parameters defaults, e.g. `x: int | None = None`, to accept a partial fan-in"
                )
            for key, adapter in self.kwarg_adapters.items():
                if adapter is not None and key in args:
                    args[key] = self._check(adapter, args[key], f"edge {key!r} → {self.name!r}", key)
            return self.fn(**args), None
        adapter = self.input_adapter
        if adapter is not None and type(payload) is not self._fast_type:
            payload = self._check(adapter, payload, f"edge {env.sender!r} → {self.name!r}", None)
        return self.fn(payload), None

    def _check(self, adapter: TypeAdapter[Any], value: Any, edge: str, param: str | None) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            what = f"parameter {param!r}" if param else "its input parameter"
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5]
            )
            raise PayloadError(
                f"{edge}: a {type(value).__name__} does not fit {what} of type "
                f"{_type_name(adapter)}: {problems}"
            ) from exc


def _plain_class(adapter: TypeAdapter[Any] | None) -> type | None:
    """The annotation when it is a plain class whose exact instances pydantic passes
    through unchanged (int, str, a BaseModel subclass...): a payload of exactly that class
    needs no validation. None for generics, unions and the like."""
    core = getattr(adapter, "_type", None)
    if core in (int, float, str, bytes):
        return core  # type: ignore[no-any-return]
    if (
        isinstance(core, type)
        and issubclass(core, BaseModel)
        and core.model_config.get("revalidate_instances", "never") == "never"
    ):
        return core
    return None


def _type_name(adapter: TypeAdapter[Any]) -> str:
    core = getattr(adapter, "_type", None)
    return getattr(core, "__name__", None) or str(core)


class AgentActor(NodeActor):
    """An agent as an actor: each ``work`` envelope runs a fresh :class:`Session`.

    The payload is rendered into the user message (``prompt`` template, else text or JSON);
    the output is the text answer, or the validated object of the agent's output schema.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        name: str | None = None,
        prompt: str | None = None,
        work_dir: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name or agent.name, **kwargs)
        self.agent = agent
        self.prompt = prompt
        self.work_dir = work_dir
        self._token: CancelToken | None = None

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel the session in progress (called from another thread)."""
        token = self._token
        if token is not None:
            token.cancel(reason)

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        message = render_input(env.payload, self.prompt, self.name)
        timeout = self._timeout(env)
        # The attempt's token is the parent of the session's: interrupt() reaches the
        # session even before its run has begun.
        token = self._token = CancelToken()
        run = env.run
        if run is not None and run.done:  # cancelled between the check in handle_work and here
            token.cancel("the run was cancelled")
        try:
            with Session(self.agent, work_dir=self.work_dir) as session, cancel_scope(token):
                observer = self.observer
                if observer is not None and observer.wants_events(env):
                    stream = session.run_stream(message, timeout=timeout)
                    for event in stream:
                        observer.agent_event(env, event)
                    result = stream.result()
                else:
                    result = session.run(message, timeout=timeout)
        finally:
            self._token = None
        return result.output, result.usage


class FleetActor(NodeActor):
    """A fleet as an actor: a list payload runs one agent session per item, concurrently
    up to ``max_workers``, on a pool the actor owns; the output is the list of per-item
    outputs in item order. Items that succeeded are remembered across retries of the same
    envelope, so a retry reruns only the failed items."""

    def __init__(
        self,
        agent: Agent,
        *,
        name: str | None = None,
        max_workers: int = 0,
        prompt: str | None = None,
        work_dir: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name or agent.name, **kwargs)
        self.agent = agent
        self.max_workers = max_workers or DEFAULT_MAX_WORKERS
        self.prompt = prompt
        self.work_dir = work_dir
        self._pool: ThreadPoolExecutor | None = None
        self._fleet: Fleet | None = None

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel every item of the fleet in progress (called from another thread)."""
        fleet = self._fleet
        if fleet is not None:
            fleet.cancel(reason)

    def on_start(self) -> None:
        self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix=f"wingman-fleet-{self.name}")

    def on_stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        items = env.payload
        if not isinstance(items, list | tuple):
            raise PayloadError(
                f"fleet node {self.name!r} needs a list input (one session per item), "
                f"got {type(items).__name__} from {env.sender!r}"
            )
        work = env.cause if env.cause is not None else env
        memo = work.memo if work.memo is not None else {}
        work.memo = memo
        todo = [i for i in range(len(items)) if i not in memo]
        usage = Usage()
        errors: dict[int, BaseException] = {}
        if todo:
            tasks = [Task(render_input(items[i], self.prompt, self.name), work_dir=self.work_dir) for i in todo]
            fleet = Fleet(
                self.agent, tasks, max_workers=self.max_workers, timeout=self._timeout(env), executor=self._pool
            )
            self._fleet = fleet
            if env.run is not None and env.run.done:  # cancelled before interrupt() could see the fleet
                fleet.cancel("the run was cancelled")
            try:
                results = fleet.run()
            finally:
                self._fleet = None
            for i, fr in zip(todo, results, strict=True):
                if fr.error is not None:
                    errors[i] = fr.error
                elif fr.result is not None:
                    memo[i] = fr.result.output
                    usage = usage + fr.result.usage
        if errors:
            raise FleetItemsError(self.name, len(items), errors)
        return [memo[i] for i in range(len(items))], usage
