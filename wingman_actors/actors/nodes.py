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

import json
import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import pykka
from pydantic import BaseModel, TypeAdapter, ValidationError

from ..agent import Agent
from ..core import StreamEvent, Usage
from ..errors import WingmanError
from ..fleet import DEFAULT_MAX_WORKERS, Fleet, Task
from ..session import Session
from .envelope import Envelope, EnvelopeType

__all__ = [
    "AgentActor",
    "FleetActor",
    "FunctionActor",
    "NodeActor",
    "NodeObserver",
    "PayloadError",
    "render_input",
]

log = logging.getLogger("wingman_actors.actors")

ReplyTo = Callable[[Envelope], Any] | pykka.ActorRef[Any] | Any


class PayloadError(WingmanError):
    """A payload does not fit the node that received it. Never retried: it would fail again."""

    retryable = False


class NodeObserver(Protocol):
    """Hooks the formation runtime gives node actors (all optional for standalone use)."""

    def started(self, env: Envelope) -> None: ...

    def wants_events(self, env: Envelope) -> bool: ...

    def agent_event(self, env: Envelope, event: StreamEvent) -> None: ...

    def attempt_timeout(self, env: Envelope) -> float | None: ...

    def orphaned(self, env: Envelope) -> None: ...


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

    def __init__(
        self,
        name: str,
        *,
        reply_to: ReplyTo = None,
        observer: NodeObserver | None = None,
        replica: int = 0,
    ) -> None:
        super().__init__()
        self.name = name
        self.observer = observer
        self.replica = replica
        self._reply: Callable[[Envelope], Any] | None
        if reply_to is None:
            self._reply = None
        elif hasattr(reply_to, "tell"):
            self._reply = reply_to.tell
        elif callable(reply_to):
            self._reply = reply_to
        else:
            raise TypeError(f"reply_to must be an actor ref or a callable, got {type(reply_to).__name__}")

    def _start_actor_loop(self) -> None:
        # Pykka names threads after the class; name them after the node for debugging.
        import threading

        thread = threading.Thread(target=self._actor_loop, name=f"wingman-node-{self.name}-{self.replica}")
        thread.daemon = self.use_daemon_thread
        self.thread = thread
        thread.start()

    def on_receive(self, message: Any) -> Any:
        if type(message) is Envelope and message.type == EnvelopeType.WORK:
            self.handle_work(message)
            return None
        log.warning("node %r ignored a message it does not understand: %r", self.name, message)
        return None

    def handle_work(self, env: Envelope) -> None:
        """Process one ``work`` envelope and reply."""
        run = env.run
        if run is not None and run.done:
            return  # the run ended (failed, timed out, stopped): drop its leftovers
        observer = self.observer
        attempt = env.attempt  # the supervisor may bump it (after a timeout) while we work
        if observer is not None:
            observer.started(env)
        started = time.perf_counter()
        try:
            output, usage = self.process(env)
        except Exception as exc:
            reply = Envelope(
                0, env.run_id, self.name, EnvelopeType.FAILURE, exc, time.time(),
                target=env.target, attempt=attempt, run=run, cause=env,
                started=started, finished=time.perf_counter(), replica=self.replica,
            )
        else:
            reply = Envelope(
                0, env.run_id, self.name, EnvelopeType.RESULT, output, time.time(),
                target=env.target, attempt=attempt, run=run, cause=env, usage=usage,
                started=started, finished=time.perf_counter(), replica=self.replica,
            )
        if self._reply is not None:
            self._reply(reply)

    def process(self, env: Envelope) -> tuple[Any, Usage | None]:
        """Compute the output of one work envelope. Subclasses implement it."""
        raise NotImplementedError

    def _actor_loop_teardown(self) -> None:
        # Pykka drops told messages still queued when an actor stops. Work envelopes must
        # not vanish: hand them back to the runtime (which re-routes or discards them).
        orphans: list[Envelope] = []
        others: list[Any] = []
        while not self.actor_inbox.empty():
            item = self.actor_inbox.get()
            if type(item.message) is Envelope:
                orphans.append(item.message)
            else:
                others.append(item)
        for item in others:
            self.actor_inbox.put(item)
        super()._actor_loop_teardown()
        observer = self.observer
        if observer is not None:
            for env in orphans:
                observer.orphaned(env)

    def _timeout(self, env: Envelope) -> float | None:
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

    def process(self, env: Envelope) -> tuple[Any, Usage | None]:
        payload = env.payload
        if self.mode == "kwargs":
            args = dict(payload)
            for key, adapter in self.kwarg_adapters.items():
                if adapter is not None and key in args:
                    args[key] = self._check(adapter, args[key], f"edge {key!r} → {self.name!r}", key)
            return self.fn(**args), None
        if self.input_adapter is not None:
            payload = self._check(self.input_adapter, payload, f"edge {env.sender!r} → {self.name!r}", None)
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
        self._session: Session | None = None

    def interrupt(self) -> None:
        """Cancel the session in progress (called from another thread when stopping)."""
        session = self._session
        if session is not None:
            session.cancel("the formation is stopping")

    def process(self, env: Envelope) -> tuple[Any, Usage | None]:
        message = render_input(env.payload, self.prompt, self.name)
        timeout = self._timeout(env)
        with Session(self.agent, work_dir=self.work_dir) as session:
            self._session = session
            observer = self.observer
            if observer is not None and observer.wants_events(env):
                stream = session.run_stream(message, timeout=timeout)
                for event in stream:
                    observer.agent_event(env, event)
                result = stream.result()
            else:
                result = session.run(message, timeout=timeout)
        self._session = None
        return result.output, result.usage


class FleetItemsError(WingmanError):
    """Some items of a fleet node failed. ``errors`` maps item index to its error."""

    def __init__(self, node: str, total: int, errors: dict[int, BaseException]) -> None:
        first = min(errors)
        super().__init__(
            f"fleet node {node!r}: {len(errors)} of {total} item(s) failed; "
            f"first: item {first}: {errors[first]}"
        )
        self.errors = errors
        self.retryable = all(getattr(e, "retryable", True) for e in errors.values())


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
        **kwargs: Any,
    ) -> None:
        super().__init__(name or agent.name, **kwargs)
        self.agent = agent
        self.max_workers = max_workers or DEFAULT_MAX_WORKERS
        self.prompt = prompt
        self._pool: ThreadPoolExecutor | None = None
        self._fleet: Fleet | None = None

    def interrupt(self) -> None:
        """Cancel the fleet in progress (called from another thread when stopping)."""
        fleet = self._fleet
        if fleet is not None:
            fleet.cancel("the formation is stopping")

    def on_start(self) -> None:
        self._pool = ThreadPoolExecutor(self.max_workers, thread_name_prefix=f"wingman-fleet-{self.name}")

    def on_stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def process(self, env: Envelope) -> tuple[Any, Usage | None]:
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
            tasks = [Task(render_input(items[i], self.prompt, self.name)) for i in todo]
            fleet = Fleet(
                self.agent, tasks, max_workers=self.max_workers, timeout=self._timeout(env), executor=self._pool
            )
            self._fleet = fleet
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
