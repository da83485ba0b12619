"""Node actors: a function, an agent or a fleet behind a Pykka mailbox.

Each actor handles ``work`` envelopes one at a time and replies with a ``result`` or a
``failure`` envelope to its ``reply_to``: another actor (anything with ``tell``) or a
callable. They are usable on their own:

    >>> ref = FunctionActor.start(lambda x: x * 2, name="double", reply_to=print)  # doctest: +SKIP
    >>> ref.tell(new_envelope("work", 21))                                          # doctest: +SKIP

Inside a formation the runtime's router observes them and routes the output downstream
on the node's own thread, so a hop costs one queue put. The base class is in
:mod:`.base`, the function actor in :mod:`.function`; this module has the agent and
fleet actors and re-exports the others.
"""

from __future__ import annotations

import logging
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from .._cancel import CancelToken, cancel_scope
from .._interrupts import RunSuspended, first_asked
from ..agents._agent import Agent
from ..agents._fleet import DEFAULT_MAX_WORKERS, Fleet, FleetResult, Task
from ..agents._fleet_loops import WorkerPool
from ..agents._result import SpentOnFailure
from ..agents._session import Session
from ..core import StreamEvent, Usage
from ..errors import FleetItemsError, PayloadError  # re-exported: their old home
from ._base import NodeActor, NodeObserver
from ._envelope import Work, held_errors
from ._function import FunctionActor

__all__ = [
    "AgentActor",
    "FleetActor",
    "FleetItemsError",
    "FunctionActor",
    "NodeActor",
    "NodeObserver",
    "PayloadError",
    "render_input",
]

log = logging.getLogger("wingman_actors.actors")


_ANY: TypeAdapter[Any] = TypeAdapter(Any)  # built once: building one costs more than using it
# Its serializer, called directly: dump_json's Python wrapper (its keyword defaults passed
# on one by one) cost as much as the serializing of a small item, and a fleet renders every
# item. tests/actors/test_render.py fails if the two ever write different JSON.
_ANY_JSON = _ANY.serializer.to_json


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json(indent=2)
    try:
        # pydantic writes the indented JSON itself: json.dumps(indent=...) runs the
        # pure-Python encoder, 20 times slower, and a fleet renders every item
        return _ANY_JSON(value, indent=2).decode()
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
    try:
        return prompt.format_map(_Fields(node, fields))
    except ValueError:  # "contains positional fields": a digit field ({1}) names a key here; a
        # ValueError of another cause (a bad format spec) is raised again by the second try
        return _KEYS.vformat(prompt, (), _Fields(node, fields))


class _DigitKeys(string.Formatter):
    """Formats as ``str.format_map`` does, but a digit field (``{1}``) names the input's key
    ``"1"`` (a predecessor named by a number), not a positional argument."""

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        return kwargs[str(key)]  # a _Fields: a missing key is a PayloadError naming the node


_KEYS = _DigitKeys()


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
        self._session: Session | None = None  # the attempt's, while it runs: spent_so_far

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel the session in progress (called from another thread)."""
        token = self._token
        if token is not None:
            token.cancel(reason)

    def spent_so_far(self) -> Usage | None:
        """What the session in progress has spent on model calls so far (its run's usage)."""
        session = self._session
        return session._spent_so_far() if session is not None else None

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
                self._session = session
                observer = self.observer
                if observer is not None and observer.wants_events(env):
                    stream = session.run_stream(message, timeout=timeout)
                    for event in stream:
                        observer.agent_event(env, event)
                    result = stream.result()
                else:
                    result = session.run(message, timeout=timeout)
        except RunSuspended as signal:  # what the session spent before it asked: the suspended result shows it
            if signal.spent is None:
                signal.spent = self.spent_so_far()
            raise
        except Exception as exc:  # what the session spent goes beside an exception we do not own
            wrapped = SpentOnFailure.wrap(exc, self.spent_so_far())
            if wrapped is exc:
                raise
            raise wrapped from None
        finally:
            self._token = self._session = None
        return result.output, result.usage


class FleetActor(NodeActor):
    """A fleet as an actor: a list payload runs one agent session per item, concurrently
    up to ``max_workers``, on the worker loops of :class:`~wingman_actors.agents._fleet.Fleet`
    (started at once; each worker renders its item into a prompt just before its session);
    the output is the list of per-item outputs in item order. Items that succeeded are
    remembered across retries of the same envelope, so a retry reruns only the failed items.

    The worker threads outlive a run (a :class:`~wingman_actors.agents._fleet_loops.WorkerPool`,
    started with the first run, stopped with the actor): each later run wakes idle workers
    instead of starting ``max_workers`` threads one by one, which delays its last items."""

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
        self._fleet: Fleet | None = None
        self._pool: WorkerPool | None = None
        # the attempt's finished items' usages (those that failed too): spent_so_far
        self._done: list[Usage] | None = None

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel every item of the fleet in progress (called from another thread)."""
        fleet = self._fleet
        if fleet is not None:
            fleet.cancel(reason)

    def spent_so_far(self) -> Usage | None:
        """What the attempt in progress has spent so far: its finished items (those that
        failed too) and the sessions of the items running now."""
        fleet, done = self._fleet, self._done
        if fleet is None or done is None:
            return None
        return Usage.sum([*list(done), fleet._spent_so_far()])

    def on_stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:  # idle: a run waits for all its workers before it returns
            pool.shutdown()
        super().on_stop()

    def on_failure(self, *exc_info: Any) -> None:
        self.on_stop()  # a crashed actor gets no on_stop: its workers end here instead

    def _workers(self) -> WorkerPool:
        if self._pool is None:  # on first use: a node that never runs starts no thread
            self._pool = WorkerPool(self.name)
        return self._pool

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
        held = held_errors(memo)  # items an earlier attempt failed for good: not run again
        todo = [i for i in range(len(items)) if i not in memo]
        usages: list[Usage] = []
        errors: dict[int, BaseException] = {}
        if todo:
            prompt, node, work_dir = self.prompt, self.name, self.work_dir
            listened = self.observer
            observer = listened if work.scope is not None else None

            def render(i: int) -> Task | str:  # runs in the worker that runs item i
                message = render_input(items[i], prompt, node)
                if observer is not None:  # a journalled run: the item's session may interrupt()
                    scope = observer.item_scope(work, i)
                    if scope is not None:
                        scope.enter()
                return message if work_dir is None else Task(message, work_dir=work_dir)

            fleet = Fleet(
                self.agent, todo, max_workers=self.max_workers, timeout=self._timeout(env), render=render,
                executor=self._workers(),
            )
            if listened is not None and listened.wants_events(env):  # per visit: a run nobody listens to pays nothing per item
                def on_event(task: int, event: StreamEvent) -> None:  # on the item's worker
                    listened.agent_event(env, event, todo[task])

                fleet._on_event = on_event
            self._fleet, self._done = fleet, usages
            if env.run is not None and env.run.done:  # cancelled before interrupt() could see the fleet
                fleet.cancel("the run was cancelled")

            def keep(fr: FleetResult) -> None:
                # On the worker that ran the item: what the node needs of its result is kept,
                # the rest (result, trace) is let go at once instead of at the end of the run,
                # so a 1,000-item fleet does not hold 1,000 results until its last item ends.
                i = todo[fr.task_index]
                usages.append(fr.usage)  # a failed item's calls were paid for too
                if fr.error is not None:
                    errors[i] = fr.error
                elif fr.result is not None:
                    memo[i] = fr.result.output

            try:
                if observer is None:
                    fleet._run_each(keep)
                else:  # a journalled run: each item is journalled as it finishes
                    for fr in fleet.run_stream():
                        keep(fr)
                        if fr.error is None and fr.result is not None:
                            observer.item_finished(work, todo[fr.task_index], fr.result.output)
            finally:
                self._fleet = self._done = None
        if errors or held:
            asking = [i for i, exc in errors.items() if isinstance(exc, RunSuspended)]
            if asking:  # one interrupt at a time: the others ask again when the run resumes
                signal = first_asked(errors, asking)
                signal.spent = Usage.sum(usages)  # the items' calls so far: paid for, shown in the suspended result
                raise signal
            failed = FleetItemsError(self.name, len(items), dict(sorted({**held, **errors}.items())))  # in item order
            # what this attempt's items spent, those that failed too: paid for, and traced
            failed.usage = Usage.sum(usages)
            raise failed
        return [memo[i] for i in range(len(items))], Usage.sum(usages)

