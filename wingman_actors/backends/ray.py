"""The Ray backend: every node replica is a Ray actor, in its own process.

Routing and supervision stay in this process, above the backend seam, exactly as on the
threads backend: each replica has a thin driver-side proxy (a :class:`RayReplica`, a
node actor on a thread) that pulls work from the node's one shared queue, hands the
input to its Ray actor and reports the outcome to the runtime. So retries, per-attempt
timeouts, ``on_error``, cancellation, events, traces and usage behave the same; what
changes is where the node's code runs: in a Ray worker process (real parallelism for
CPU-bound functions; ``concurrency=k`` means k processes).

* The node is built inside the Ray actor from its recipe (an agent's provider from its
  configuration: see :mod:`._ray_host`); a node that cannot be pickled is a
  :class:`~wingman_actors.errors.FormationSetupError` naming it.
* A Ray actor whose process dies fails the attempt in progress (retries apply) and is
  restarted by Ray (``max_restarts=-1``). An abandoned function attempt (timeout,
  cancellation) kills its process, which Ray restarts: the CPU is freed at once.
* Ray is started so that its processes outlive the thread that started the formation
  (see :mod:`._ray_keeper`).
* Agent and fleet work is interrupted through the actor (a threaded Ray actor, so the
  interrupt reaches it while it works).
* A plain input takes the fast path (one actor call, ``(output, usage)`` back). A
  journalled visit, a fleet, or an agent with listeners takes the *call* path
  (:mod:`._ray_wire`): a Ray streaming generator brings back, in order, the agent's
  events, finished fleet items (kept for a retry, so it reruns only the failed items),
  model responses of a journalled agent session, and last the result or the
  ``interrupt()`` that suspended the run. The run store stays in the driver, which
  journals each delta as it arrives, exactly where the threads backend journals it.
* An agent's ``ScriptedProvider`` is copied into each replica's process; when the
  formation stops, the calls of every replica are added to the driver's provider.

Options (``backend_options``): ``address`` (``"auto"``, ``"host:port"`` or
``"ray://..."``: join an existing cluster; default: a local Ray with this machine's CPUs,
unless one is already initialised in this process), ``num_cpus`` (of a local Ray) and
``init`` (more keyword arguments for ``ray.init``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ..actors.base import NodeActor
from ..actors.envelope import Work
from ..agent import Agent
from ..core import Usage
from ..errors import FormationSetupError
from ..interrupts import RunSuspended, VisitScope
from ..providers.scripted import ScriptedProvider
from ._ray_host import NodeHost, portable
from ._ray_keeper import RayKeeper, init_ray
from ._ray_modules import ship_unimportable_by_value
from ._ray_wire import AgentEvent, Call, Done, ItemDone, ModelReply, Suspended, VisitTicket
from .base import NodeRecipe
from .threads import ThreadNode, ThreadsBackend

__all__ = ["RayBackend", "RayNode", "RayReplica", "import_ray"]

log = logging.getLogger("wingman_actors.backends")

EXTRA_HINT = 'pip install "wingman-actors[ray]"'
_OPTIONS = ("address", "num_cpus", "init")


def import_ray(formation: str = "") -> Any:
    """Import Ray, or raise a :class:`FormationSetupError` naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise FormationSetupError(formation, [
            f"backend 'ray' needs Ray, which is not installed: {EXTRA_HINT} "
            "(or use the default backend='threads')"
        ]) from exc
    return ray


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
    on the replica's Ray actor (see the module docstring)."""

    def __init__(self, node: RayNode, *, agent: bool, fleet: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.node = node
        self.agent = agent  # an agent or a fleet: interruptible
        self.fleet = fleet

    @property
    def interruptible(self) -> bool:
        return self.agent

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        if self.agent:
            self.node.handles[self.replica].interrupt.remote(reason)

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        ray = self.node.ray
        node = self.node
        if self.replica in node.stale:
            node.wait_ready(self.replica)
        handle = node.handles[self.replica]
        timeout = self._timeout(env)
        observer = self.observer
        events = self.agent and observer is not None and observer.wants_events(env)
        try:
            if env.scope is None and not events and not self.fleet:
                output, usage = ray.get(handle.process.remote(env.payload, env.sender, timeout))
                return output, usage
            return self._call(handle, env, timeout, events)
        except ray.exceptions.RayError as exc:
            if isinstance(exc, ray.exceptions.RayActorError):
                node.stale.add(self.replica)  # Ray restarts it: the next call waits for that
            raise _unwrap(ray, exc) from None

    def _call(self, handle: Any, env: Work, timeout: float | None, events: bool) -> tuple[Any, Usage | None]:
        """The call path (see :mod:`._ray_wire`): apply the actor's messages as they come,
        journalling each delta of a journalled run here, in the driver."""
        ray = self.node.ray
        observer = self.observer
        scope: VisitScope | None = env.scope
        memo: dict[int, Any] | None = None
        if self.fleet:  # finished items are kept on the work across its retries
            memo = env.memo if env.memo is not None else {}
            env.memo = memo
        ticket = None
        if scope is not None:
            ticket = VisitTicket(scope.run_id, scope.node, scope.visit, scope.answers, scope.replies,
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

        call = Call(env.payload, env.sender, timeout, events, ticket, None if memo is None else dict(memo))
        stream = handle.call.options(num_returns="streaming").remote(call)
        try:
            for ref in stream:
                msg = ray.get(ref)
                kind = type(msg)
                if kind is AgentEvent:
                    if observer is not None:
                        observer.agent_event(env, msg.event)
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
                elif kind is Done:
                    return msg.output, msg.usage
                elif kind is Suspended:
                    if scope is None:  # cannot happen: interrupt() needs the visit's scope
                        raise RuntimeError(f"node {self.name!r} suspended a run that has no store")
                    raise RunSuspended(msg.payload, scope if msg.item is None else item_scope(msg.item))
        except (ray.exceptions.RayError, RunSuspended):
            raise
        except BaseException:
            # the driver gave up on the attempt (a journal write failed): stop the actor's work
            if self.agent:
                handle.interrupt.remote("the attempt failed in the driver")
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
        asked = {i.item for i in replay.journal.interrupts
                 if i.item is not None and (i.node, i.visit) == (env.target, env.visit)}
        found: dict[int, tuple[list[Any], list[Any]]] = {}
        for index in sorted(asked):
            s = observer.item_scope(env, index)
            if s is not None:
                found[index] = (list(s.answers), list(s.replies))
        return found


class RayNode(ThreadNode):
    """One node's Ray actors (one per replica), their proxies and their shared queue."""

    def __init__(self, backend: RayBackend, recipe: NodeRecipe, concurrency: int, observer: Any) -> None:
        self.ray = backend.ray
        self.handles: list[Any] = [backend.host_actor(recipe) for _ in range(concurrency)]
        agent = recipe.cls.__name__ != "FunctionActor"
        proxy = NodeRecipe(recipe.name, RayReplica, (self,), {
            "agent": agent, "fleet": recipe.cls.__name__ == "FleetActor", "name": recipe.name,
            "notify_start": bool(recipe.kwargs.get("notify_start")),
        })
        self.stale: set[int] = set()  # replicas whose Ray actor is restarting
        # the agent's ScriptedProvider in this process: its replicas' calls are added at stop
        self.scripted = next((a.provider for a in recipe.args if isinstance(a, Agent)
                              and isinstance(a.provider, ScriptedProvider)), None)
        super().__init__(backend, proxy, concurrency, observer)

    def wait_ready(self, replica: int, limit: float = 60.0) -> None:
        """Wait until the Ray actor of ``replica`` answers again after its process died
        (a call sent while Ray restarts it would fail without running)."""
        ray = self.ray
        deadline = time.monotonic() + limit
        while True:
            try:
                ray.get(self.handles[replica].ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
            else:
                self.stale.discard(replica)
                return

    def _abandon(self, actor: Any, env: Work, why: str) -> None:
        if not actor.interruptible:
            # the attempt is stuck in a function: end its process (Ray starts a fresh one)
            self.stale.add(actor.replica)
            self.ray.kill(self.handles[actor.replica], no_restart=False)
        super()._abandon(actor, env, why)

    def collect_calls(self, timeout: float = 5.0) -> None:
        """Add the calls the replicas' copies of the agent's ``ScriptedProvider`` made to
        the driver's (tests count calls there); a replica that does not answer in time, or
        whose process was restarted, loses its count."""
        provider = self.scripted
        if provider is None:
            return
        ray = self.ray
        refs = [handle.scripted_calls.remote() for handle in self.handles]
        deadline = time.monotonic() + timeout
        for ref in refs:
            try:
                counted = ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))
            except Exception:  # gone, or stuck in work that never returns
                log.debug("node %r: a replica did not report its scripted calls", self.name, exc_info=True)
                continue
            if counted is not None:
                provider.merge_calls(*counted)

    def kill(self) -> None:
        self.collect_calls()
        for handle in self.handles:
            try:
                self.ray.kill(handle, no_restart=True)
            except Exception:  # already gone
                log.debug("node %r: killing a Ray actor failed", self.name, exc_info=True)


class RayBackend(ThreadsBackend):
    """Node replicas as Ray actors (see the module docstring for ``options``)."""

    name = "ray"

    def __init__(self, formation: str = "", options: Mapping[str, Any] | None = None) -> None:
        super().__init__(formation)
        options = dict(options or {})
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise FormationSetupError(formation, [
                f"unknown backend_options {unknown} for backend 'ray': it takes "
                f"{', '.join(_OPTIONS)} (e.g. backend_options={{'address': 'auto'}})"
            ])
        self.ray = import_ray(formation)
        self.options = options
        self.owns_ray = False  # whether stop() shuts Ray down (or disconnects from a cluster)
        self._keeper: RayKeeper | None = None  # the thread that started Ray, when not the main thread
        self._remote: Any = None

    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return  # a Ray this process set up already (a session, another formation): share it
        kwargs: dict[str, Any] = {
            "include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
        }
        address = self.options.get("address")
        if address is not None:
            kwargs["address"] = address
        else:
            # a Ray of our own, even when `ray start` left one (or a stale address file)
            # on this machine: joining a cluster is what address= is for
            kwargs["address"] = "local"
            if self.options.get("num_cpus") is not None:
                kwargs["num_cpus"] = self.options["num_cpus"]
        kwargs.update(self.options.get("init") or {})
        t0 = time.perf_counter()
        try:
            self._keeper = init_ray(ray, kwargs)
        except Exception as exc:
            raise FormationSetupError(self.formation, [
                f"backend 'ray' could not start or join Ray ({type(exc).__name__}: {exc}); "
                "check backend_options['address'] (e.g. 'auto' for a cluster started with `ray start --head`)"
            ]) from exc
        self.owns_ray = True
        log.info("formation %r: Ray ready in %.1fs", self.formation, time.perf_counter() - t0)

    def host_actor(self, recipe: NodeRecipe) -> Any:
        """Start one Ray actor running a replica of ``recipe``."""
        ray = self.ray
        self._connect()
        if self._remote is None:
            self._remote = ray.remote(NodeHost)
        args = tuple(portable(a) for a in recipe.args)
        ship_unimportable_by_value(ray.cloudpickle)  # e.g. a formation file the launcher loaded
        try:
            ray.cloudpickle.dumps((recipe.cls, args, recipe.kwargs))
        except Exception as exc:
            raise FormationSetupError(self.formation, [
                f"node {recipe.name!r} cannot be pickled for the Ray backend ({type(exc).__name__}: {exc}): "
                "its function, agent, tools or provider hold something live (a lock, a client, an open "
                "file); build such things inside the node's code, or use backend='threads'"
            ]) from exc
        # threaded (max_concurrency=2): an interrupt reaches the actor while it works;
        # restarted by Ray when its process dies; a failed call is not retried by Ray
        # (our supervision decides).
        return self._remote.options(
            max_restarts=-1, max_task_retries=0, max_concurrency=2, name=None,
        ).remote(recipe.cls, args, recipe.kwargs)

    def start_node(self, recipe: NodeRecipe, concurrency: int, observer: Any) -> RayNode:
        node = RayNode(self, recipe, concurrency, observer)
        self.nodes.append(node)
        return node

    def stop(self, grace: float) -> None:
        super().stop(grace)
        for node in self.nodes:
            if isinstance(node, RayNode):
                node.kill()
        # proxies still waiting on a killed actor get its error at once and end
        deadline = time.monotonic() + 2.0
        for actor in [*self.spawned, *self.abandoned]:
            actor.thread.join(max(0.0, deadline - time.monotonic()))
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.stop()  # shuts down the Ray it started, then ends
        elif self.owns_ray and self.ray.is_initialized():
            self.ray.shutdown()  # a local Ray we started ends; a cluster we joined is only left
        self.owns_ray = False
