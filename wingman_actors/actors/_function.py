"""A pure Python function as a node actor.

An ``async def`` function (or a partial of one, or an object with an ``async def
__call__``) makes an :class:`AsyncFunctionActor`: inside a formation each visit's
coroutine is a task on an event loop the replica owns, many in flight at once
(:mod:`._async_function`); alone (a standalone actor, a Ray replica's process) each
attempt's coroutine is awaited in turn (:class:`~wingman_actors._event_loop.OwnedLoop`).
Either way a timeout or a cancel cancels it. Plain functions take the synchronous path
unchanged.
"""

from __future__ import annotations

import contextvars
import inspect
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from .._event_loop import OwnedLoop, is_async_callable
from ..core import Usage
from ..errors import AgentError, ErrorKind, PayloadError, _preview
from ..orchestration._blackboard import current_blackboard
from ._async_function import AsyncVisits
from ._base import NodeActor, node_scope
from ._envelope import Work
from ._payloads import isolate

# isolate: the copy of a payload made here, looked up on this module by the formation runtime too (a run's
# input at submit), so that the payload bench (_bench/payloads.py) switches both off at once
__all__ = ["AsyncFunctionActor", "FunctionActor", "board_keyword", "isolate", "returned_coroutine",
           "returned_not_a_value"]

_NO_BOARD: dict[str, Any] = {}  # never written: the keywords of a call without the board


def board_keyword(board_param: str, node: str, where: str) -> dict[str, Any]:
    """The ``blackboard`` keyword of a node's function that takes the run's board
    (``board_param``: ``required`` or ``optional``): ``{}`` when the run has none and the
    parameter has a default. ``node`` names the node in the error, ``where`` where a
    board is passed."""
    found = current_blackboard()  # the run's board, made active by handle_work
    if found is not None:
        return {"blackboard": found}
    if board_param == "required":
        raise PayloadError(
            f"{node} takes a 'blackboard' parameter but no blackboard was shared; pass blackboard=Blackboard() "
            f"{where}, or give the parameter a default"
        )
    return _NO_BOARD


class FunctionActor(NodeActor):
    """A pure Python function as an actor.

    Args:
        fn: the function.
        mode: ``single`` (``fn(payload)``), ``dict`` (``fn({pred: value})``) or ``kwargs``
            (``fn(**{pred: value})``).
        input_adapter: validates the payload in ``single``/``dict`` mode (None: no check).
        kwarg_adapters: validates each keyword argument in ``kwargs`` mode.
        board_param: ``required`` or ``optional`` when ``fn`` takes the run's blackboard
            as its ``blackboard`` keyword (optional: not passed when there is no board, so
            its default applies); ``none`` otherwise.

    Constructing it with an async ``fn`` makes an :class:`AsyncFunctionActor`.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> FunctionActor:
        if cls is FunctionActor and is_async_callable(args[0] if args else kwargs.get("fn")):
            cls = AsyncFunctionActor
        return super().__new__(cls)

    awaits = False
    """Whether the coroutine its function returns is awaited (``async def`` functions:
    :class:`AsyncFunctionActor`); a plain function that returns one fails its attempt."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        mode: str = "single",
        input_adapter: TypeAdapter[Any] | None = None,
        kwarg_adapters: Mapping[str, TypeAdapter[Any] | None] | None = None,
        board_param: str = "none",
        **kwargs: Any,
    ) -> None:
        super().__init__(name or str(getattr(fn, "__name__", "function")), **kwargs)
        self.fn = fn
        self.mode = mode
        self.input_adapter = input_adapter
        self.kwarg_adapters = dict(kwarg_adapters or {})
        self.board_param = board_param
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
                and not (p.name == "blackboard" and board_param != "none")
            )

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        payload = isolate(env.payload)  # the function may change it: a copy of its own
        board = _NO_BOARD if self.board_param == "none" else self._board()
        if self.mode == "kwargs":
            args = dict(payload)
            missing = self._required - args.keys()
            if missing:
                raise PayloadError(
                    f"node {self.name!r} got no value for parameter(s) {', '.join(sorted(missing))}: "
                    "their predecessors were skipped (a when= condition did not fire, or on_error='skip') or sent "
                    "nothing on an error edge (an error edge not taken because its source succeeded); "
                    "give those parameters defaults, e.g. `x: int | None = None`, to accept a partial fan-in"
                )
            for key, adapter in self.kwarg_adapters.items():
                if adapter is not None and key in args:
                    args[key] = self._check(adapter, args[key], f"edge {key!r} → {self.name!r}", key)
            out = self.fn(**args, **board)
        else:
            adapter = self.input_adapter
            if adapter is not None and type(payload) is not self._fast_type:
                payload = self._check(adapter, payload, f"edge {env.sender!r} → {self.name!r}", None)
            # a plain call when there is no board: `**board` would build a dict and a tuple per visit
            out = self.fn(payload) if board is _NO_BOARD else self.fn(payload, **board)
        if type(out) in _NOT_VALUES and not (self.awaits and type(out) is types.CoroutineType):
            raise returned_not_a_value(out, f"function node {self.name!r}")
        return out, None

    def _board(self) -> dict[str, Any]:
        return board_keyword(self.board_param, f"function node {self.name!r}", "(to the formation, or to the actor)")

    def _check(self, adapter: TypeAdapter[Any], value: Any, edge: str, param: str | None) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            what = f"parameter {param!r}" if param else "its input parameter"
            raise PayloadError(
                f"{edge}: a value of type {type(value).__name__} does not fit {what} of type "
                f"{exc.title}: {_problems(exc)}"
            ) from exc


# What a plain function may return that is no value to hand on: checked in one set lookup per call.
_NOT_VALUES: frozenset[type] = frozenset({types.CoroutineType, types.GeneratorType, types.AsyncGeneratorType})


def returned_not_a_value(out: Any, what: str) -> Exception:
    """The error of a plain function that returned a coroutine (see :func:`returned_coroutine`)
    or a generator: a generator is used up by the first node that reads it (the others get
    nothing), and neither a store nor Ray can carry it, so the node fails at once (a
    :class:`~wingman_actors.errors.PayloadError`, never retried) saying how to return the values.
    The generator is closed."""
    if type(out) is types.CoroutineType:
        return returned_coroutine(out, what)
    name = getattr(out, "__qualname__", "a generator")
    if type(out) is types.GeneratorType:
        out.close()
    return PayloadError(
        f"{what} returned a generator ({name}) instead of a value: a generator is used up by the first node that "
        "reads it, so return the collected values instead, e.g. `return list(...)`")


def returned_coroutine(coro: types.CoroutineType[Any, Any, Any], what: str) -> TypeError:
    """The error of a plain function that returned a coroutine (a lambda or a sync wrapper
    around an ``async def``): the runtime awaits only ``async def`` functions, so it says
    how to declare one. The coroutine is closed (never run, and no warning that it was
    never awaited)."""
    name = getattr(coro, "__qualname__", "a coroutine")
    coro.close()
    return TypeError(
        f"{what} returned the coroutine {name}() instead of a value: its function is not `async def` (a lambda "
        "or a plain wrapper around an async function?), so the runtime does not await what it returns; declare "
        "it `async def` and await inside it, e.g. `async def step(value): return await fetch(value)`"
    )


class AsyncFunctionActor(FunctionActor):
    """A function node whose function is ``async def``.

    Inside a formation (an observer is set) the replica has many visits in flight: its
    thread checks each input, makes the coroutine and starts it as a task on the
    replica's event loop (its thread, ``wingman-node-<name>-loop-<replica>``, starts on
    first use and stops with the actor), then takes the next input at once; the task
    reports its outcome to the runtime when it ends (:class:`~._async_function.AsyncVisits`,
    at most :data:`~._async_function.MAX_IN_FLIGHT` at once). A failed visit does not
    retire the replica (its other visits go on). Alone (no observer), or in a Ray
    replica's process, each attempt's coroutine is awaited in turn.

    A timeout or a cancel cancels the visit's coroutine: its ``finally`` runs, and the
    attempt ends with an :class:`~wingman_actors.errors.AgentError` of kind ``CANCELLED``.

    Args: those of :class:`FunctionActor`.
    """

    awaits = True

    def __init__(self, fn: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(fn, **kwargs)
        self._loop = OwnedLoop(f"wingman-node-{self.name}-loop-{self.replica}")
        self._asked: tuple[Work, int, str] | None = None  # the last interrupt: of which attempt, why
        self.in_flight: AsyncVisits | None = AsyncVisits(self) if self.observer is not None else None
        self.retires_on_failure = self.in_flight is None

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel the coroutine of the attempt in progress, or of every visit in flight
        (called from another thread)."""
        if self.in_flight is not None:
            self.in_flight.cancel_all(reason)
        work = self.current
        if work is not None:  # heard by the attempt even if its coroutine is not on the loop yet
            self._asked = (work, work.attempt, reason)
        self._loop.cancel()

    def on_stop(self) -> None:
        visits = self.in_flight
        if visits is not None:
            if self.abandoned:  # replaced (a visit was stuck): the others finish first
                visits.drain()
            visits.stop()
        self._loop.stop()
        super().on_stop()

    def on_failure(self, *exc_info: Any) -> None:
        self.on_stop()  # a crashed actor gets no on_stop: its loop ends here instead

    def on_receive(self, message: Any) -> Any:
        visits = self.in_flight
        if visits is None or type(message) is not Work:
            return super().on_receive(message)
        if self.abandoned:  # replaced (its loop was stuck): the input is the fresh replica's
            self.actor_ref.tell(message)  # back to the node's queue (this actor is alive till it retires)
            self._retire()
            return None
        visits.wait_for_slot()
        if not self._begin(message, visits):
            visits.give_back_slot()
        return None

    def _begin(self, work: Work, visits: AsyncVisits) -> bool:
        """The sync path's start of a visit (:meth:`NodeActor.handle_work`), ending with
        the coroutine handed to the loop instead of awaited. False when it never got there."""
        run = work.run
        if run.done:
            return False  # the run ended (failed, cancelled, timed out, stopped): drop its leftovers
        observer = self.observer
        assert observer is not None
        dropped = run.dropped
        if dropped and work.target in dropped and observer.dropped(work):
            return False  # a join="any" fired without this branch: its work is not wanted
        attempt = work.attempt
        work.replica = self.replica
        started = time.perf_counter()
        board = run.blackboard
        trace = run.trace
        scope = work.scope  # a journalled run: interrupt() inside the coroutine finds its visit
        try:
            if board is None and trace is None:
                coro, ctx = self._prepare(work) if scope is None else scope.run(self._prepare, work)
            else:  # the run's board and/or trace context, copied into the coroutine's context
                with node_scope(board, trace, self.name, work.run_id, attempt):
                    coro, ctx = self._prepare(work) if scope is None else scope.run(self._prepare, work)
        except Exception as exc:  # its input did not fit: fails as a plain function's would
            work.started = started
            observer.failed(work, attempt, exc, started, time.perf_counter(), self)
            return False
        visits.start(work, attempt, started, coro, ctx, self.notify_start or bool(run.listeners))
        work.started = started  # begun once in flight (until then a suspending run counts it as queued)
        return True

    def _prepare(self, work: Work) -> tuple[Any, contextvars.Context]:
        """The attempt's coroutine (its arguments checked, not started) and the context
        it is to run in (this thread's, with the run's board, trace and visit)."""
        coro, _ = FunctionActor.process(self, work)
        return coro, contextvars.copy_context()

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        coro, _ = super().process(env)  # the arguments checked, the coroutine made (not started)
        attempt = env.attempt

        def cancelled() -> bool:  # interrupted before the coroutine was on the loop
            asked, run = self._asked, env.run
            return (self.abandoned or (asked is not None and asked[0] is env and asked[1] == attempt)
                    or (run is not None and run.done))

        done = self._loop.run(coro, cancelled)
        if done.cancelled():
            asked = self._asked
            reason = asked[2] if asked is not None and asked[0] is env else "the run was cancelled"
            raise AgentError(f"function node {self.name!r} was cancelled: {reason}", kind=ErrorKind.CANCELLED)
        return done.result(), None


def _problems(exc: ValidationError) -> str:
    """The first five problems pydantic found, ``loc: message, got <value>`` each: the value
    that was refused (cut to 80 characters) says what to fix, e.g. the text an agent wrote
    where a ``Literal`` was expected (a missing key has no value of its own to show)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}"
        + ("" if e["type"] == "missing" else f", got {_preview(e['input'], 80)}")
        for e in exc.errors()[:5]
    )


_SCALAR_KINDS: dict[str, type] = {"int": int, "float": float, "str": str, "bytes": bytes}
_ANY = {"type": "any"}


def _plain_class(adapter: TypeAdapter[Any] | None) -> type | None:
    """The class whose exact instances ``adapter`` passes through unchanged, read from its
    core schema (pydantic's public ``core_schema``): a bare ``int``, ``float``, ``str`` or
    ``bytes`` (no constraints), a bare ``dict`` or ``list`` (pydantic would only copy it),
    or a ``BaseModel`` subclass that does not revalidate instances. A payload of exactly
    that class needs no validation. None for anything else (generics, unions,
    constrained or wrapped types)."""
    if adapter is None:
        return None
    schema: Any = adapter.core_schema
    if schema.get("type") == "definitions":  # a model that refers to itself
        inner, refs = schema["schema"], {d.get("ref"): d for d in schema["definitions"]}
        schema = refs.get(inner.get("schema_ref"), inner) if inner.get("type") == "definition-ref" else inner
    kind = schema.get("type")
    if kind in _SCALAR_KINDS and set(schema) <= {"type", "metadata"}:
        return _SCALAR_KINDS[kind]
    if kind == "dict" and schema.get("keys_schema") == _ANY and schema.get("values_schema") == _ANY and len(schema) == 3:
        return dict
    if kind == "list" and schema.get("items_schema") == _ANY and len(schema) == 2:
        return list
    cls = schema.get("cls") if kind == "model" else None
    if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.model_config.get("revalidate_instances", "never") == "never":
        return cls
    return None
