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
* A node whose actor class sets ``runs_in_driver`` (a nested formation's, which only
  drives the runs of its inner formation, whose nodes are Ray actors in turn) stays in
  the driver on a thread, as on the threads backend.
* Agent and fleet work is interrupted through the actor (a threaded Ray actor, so the
  interrupt reaches it while it works).
* Inputs and results travel over a direct channel between each proxy and its actor
  (:mod:`._ray_channel`; a Ray call costs about 1 ms of CPU on each side, a channel
  message tens of microseconds); Ray places, restarts and kills the processes and
  carries the control calls. A plain input is one request answered by its result. A
  journalled visit, a fleet, or an agent with listeners takes the *call* path
  (:mod:`._ray_wire`): the actor sends back, in order, the agent's events, finished
  fleet items (kept for a retry, so it reruns only the failed items), model responses
  of a journalled agent session, and last the result or the ``interrupt()`` that
  suspended the run. The run store stays in the driver, which journals each delta as it
  arrives, exactly where the threads backend journals it. Without a channel (through a
  Ray Client, with Ray's TLS on, or to an actor the driver cannot reach) the same
  requests go as Ray calls (a streaming generator for the call path).
* A run's Blackboard stays in the driver: a node in a Ray actor reaches it by one round
  trip over its channel per operation, answered by its proxy (:mod:`._ray_board`).
* An agent's ``ScriptedProvider`` is copied into each replica's process; when the
  formation stops, the calls of every replica are added to the driver's provider.
* An agent's ``events=`` bus stays in the driver: the actor gets a stand-in that sends
  the events back over the call path, and the proxy emits them on the driver's bus
  (:mod:`._ray_hooks`). ``prepare=`` and other functions (lambdas too) travel by value,
  with cloudpickle.

Options (``backend_options``): ``address`` (``"auto"``, ``"host:port"`` or
``"ray://..."``: join an existing cluster; default: a local Ray with this machine's CPUs,
unless one is already initialised in this process), ``num_cpus`` (of a local Ray) and
``init`` (more keyword arguments for ``ray.init``).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Container, Mapping
from typing import Any

from .._event_loop import is_async_callable
from .._extras import require
from ..actors._envelope import Work
from ..agents._agent import Agent
from ..errors import FormationSetupError, MissingExtraError
from ..events import EventBus
from ..providers._scripted import ScriptedProvider
from ._base import NodeRecipe
from ._ray_hooks import collecting
from ._ray_hooks import install as install_hooks
from ._ray_host import NodeHost, portable
from ._ray_keeper import acquire_ray, release_ray
from ._ray_modules import ship_unimportable_by_value
from ._ray_replica import RayReplica
from ._threads import ThreadNode, ThreadsBackend

__all__ = ["RayBackend", "RayNode", "RayReplica", "import_ray"]

log = logging.getLogger("wingman_actors.backends")

_OPTIONS = ("address", "num_cpus", "init")


def _option_problems(options: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``backend_options``, all of it, found before Ray starts (a value
    of the wrong type would otherwise fail inside ``ray.init`` with Ray's own words)."""
    unknown = sorted(set(options) - set(_OPTIONS), key=repr)
    if unknown:
        return [f"unknown backend_options {unknown} for backend 'ray': it takes "
                f"{', '.join(_OPTIONS)} (e.g. backend_options={{'address': 'auto'}})"]
    problems: list[str] = []
    address, cpus, init = options.get("address"), options.get("num_cpus"), options.get("init")
    if address is not None and not (isinstance(address, str) and address.strip()):
        problems.append(f"backend_options['address'] must be 'auto', 'host:port' or a 'ray://' address, got "
                        f"{type(address).__name__} {address!r} (leave it out for a local Ray of this formation)")
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 0):
        problems.append(f"backend_options['num_cpus'] must be a whole number of CPUs >= 0, got "
                        f"{type(cpus).__name__} {cpus!r} (e.g. backend_options={{'num_cpus': 2}})")
    if init is not None and not (isinstance(init, Mapping) and all(isinstance(k, str) for k in init)):
        problems.append(f"backend_options['init'] must be a dict of keyword arguments for ray.init (e.g. "
                        f"{{'namespace': 'jobs'}}), got {type(init).__name__} {init!r}")
    return problems


def import_ray(formation: str = "") -> Any:
    """Import Ray, or raise a :class:`FormationSetupError` naming the extra to install."""
    try:
        with require("ray", "backend 'ray'"):
            import ray
    except MissingExtraError as exc:
        raise FormationSetupError(formation, [f"{exc} (or use the default backend='threads')"]) from exc
    return ray


def channels_allowed() -> bool:
    """Whether inputs may go over direct channels (:mod:`._ray_channel`): not through a
    Ray Client (``ray://``: the actors' addresses are out of the driver's reach), and not
    with Ray's TLS on (they would travel unencrypted beside Ray's encrypted traffic)."""
    from ray.util.client import ray as client

    tls = os.environ.get("RAY_USE_TLS", "0").strip().lower() in ("1", "true", "yes")
    return not tls and not client.is_connected()  # type: ignore[no-untyped-call]


class RayNode(ThreadNode):
    """One node's Ray actors (one per replica), their proxies and their shared queue."""

    def __init__(self, backend: RayBackend, recipe: NodeRecipe, concurrency: int, observer: Any) -> None:
        self.ray = backend.ray
        args, self.hooks = backend.shipped(recipe)  # hooks: the driver's event buses of its agents, by token
        self.handles: list[Any] = [backend.host_actor(recipe, args) for _ in range(concurrency)]
        # interruptible: agents, fleets, maps, and async functions (their coroutine is cancelled)
        agent = recipe.cls.__name__ != "FunctionActor" or is_async_callable(recipe.args[0])
        proxy = NodeRecipe(recipe.name, RayReplica, (self,), {
            # a map node's items, like a fleet's, are kept for a retry and journalled one by one
            "agent": agent, "fleet": recipe.cls.__name__ in ("FleetActor", "MapActor"), "name": recipe.name,
            "notify_start": bool(recipe.kwargs.get("notify_start")),
        })
        # an async function's coroutine is cancelled on its actor's own loop: stop that loop
        # before the process goes, so the coroutine's finally runs (see :meth:`wind_down`)
        self.awaits = recipe.cls.__name__ in ("FunctionActor", "AsyncFunctionActor", "MapActor") and bool(
            recipe.args) and is_async_callable(recipe.args[0])
        self.stale: set[int] = set()  # replicas whose Ray actor is restarting
        self.killed = False  # the formation stopped: no actor comes back
        self.keys = itertools.count(1)  # the keys of interruptible attempts (see NodeHost.interrupt)
        self.key = backend.channel_key
        self.direct = backend.direct  # whether proxies reach their actors over a channel
        self.endpoints: dict[int, tuple[str, int] | None] = {}  # replica -> its actor's channel address
        # the agent's ScriptedProvider in this process: its replicas' calls are added at stop
        self.scripted = next((a.provider for a in recipe.args if isinstance(a, Agent)
                              and isinstance(a.provider, ScriptedProvider)), None)
        super().__init__(backend, proxy, concurrency, observer)

    def hook_kinds(self) -> dict[str, frozenset[str]] | None:
        """What the node's event buses want now (token -> kinds), or None: nothing."""
        wanted = {token: bus.kinds for token, bus in self.hooks.items() if bus.kinds}
        return wanted or None

    def lost(self, replica: int) -> None:
        """The process of ``replica``'s Ray actor died (or is being killed): Ray restarts
        it; the next input waits for that and connects anew."""
        self.stale.add(replica)
        self.endpoints.pop(replica, None)

    def endpoint(self, replica: int) -> tuple[str, int] | None:
        """Where ``replica``'s actor listens for its proxies' channels (asked once per
        actor process), or None: it has no channel."""
        if replica not in self.endpoints:
            self.endpoints[replica] = self.ray.get(self.handles[replica].endpoint.remote())
        return self.endpoints[replica]

    def wait_ready(self, replica: int, limit: float = 60.0) -> None:
        """Wait until the Ray actor of ``replica`` answers again after its process died
        (a call sent while Ray restarts it would fail without running)."""
        ray = self.ray
        deadline = time.monotonic() + limit
        while True:
            try:
                ray.get(self.handles[replica].ping.remote(), timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.RayActorError:
                if self.killed or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
            else:
                self.stale.discard(replica)
                return

    def _abandon(self, actor: Any, env: Work, why: str) -> None:
        if not actor.interruptible:
            # the attempt is stuck in a function: end its process (Ray starts a fresh one)
            self.lost(actor.replica)
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

    def wind_down(self) -> list[Any]:
        """Ask each live replica of an async function (or async map) to stop its event loop (a coroutine
        cut by a timeout or a cancel gets to run its ``finally``); the calls' refs, to wait
        on before :meth:`kill`. Nothing for other nodes."""
        if not self.awaits:
            return []
        refs = []
        for replica, handle in enumerate(self.handles):
            if replica in self.stale:
                continue  # restarting: a fresh process holds no coroutine
            try:
                refs.append(handle.stop.remote())
            except Exception:  # already gone
                log.debug("node %r: asking a Ray actor to stop failed", self.name, exc_info=True)
        return refs

    def kill(self) -> None:
        self.killed = True
        self.collect_calls()
        for handle in self.handles:
            try:
                self.ray.kill(handle, no_restart=True)
            except Exception:  # already gone
                log.debug("node %r: killing a Ray actor failed", self.name, exc_info=True)


def _delegates_hint(args: tuple[Any, ...]) -> str:
    """What to do when the agents registered in a node agent's ``delegates`` are what
    cannot be pickled (their providers are not rebuilt in the actor, as the node's is)."""
    from ray import cloudpickle

    for agent in args:
        if isinstance(agent, Agent) and agent.delegates is not None:
            try:
                cloudpickle.dumps(agent.delegates)  # type: ignore[no-untyped-call]
            except Exception:
                return ("; the agents registered in its delegates hold something live (a provider's client): "
                        "register a factory instead, so each is built where it runs: "
                        "registry.register(lambda: Agent('helper', provider=...), name='helper', description=...)")
    return ""


class RayBackend(ThreadsBackend):
    """Node replicas as Ray actors (see the module docstring for ``options``)."""

    name = "ray"

    def __init__(self, formation: str = "", options: Mapping[str, Any] | None = None) -> None:
        super().__init__(formation)
        options = dict(options or {})
        problems = _option_problems(options)
        if problems:
            raise FormationSetupError(formation, problems)
        self.ray = import_ray(formation)
        self.options = options
        self.owns_ray = False  # whether stop() releases a Ray formations started (see _ray_keeper)
        self._acquired = False
        self._remote: Any = None
        self.channel_key = os.urandom(32)  # proves a connection to a replica's actor comes from here
        self.channel_host: str | None = None  # where actors listen: their node's address, or the loopback
        self.direct = True  # inputs go over direct channels (not through a Ray Client)

    def _connect(self) -> None:
        if self._acquired:
            return
        ray = self.ray
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
        # A Ray this process has already (the program's own, or one another formation
        # started) is shared, and shut down by the last formation that started or shared it.
        fresh = not ray.is_initialized()
        t0 = time.perf_counter()
        try:
            self.owns_ray = acquire_ray(ray, kwargs)
        except Exception as exc:
            raise FormationSetupError(self.formation, [
                f"backend 'ray' could not start or join Ray ({type(exc).__name__}: {exc}); "
                "check backend_options['address'] (e.g. 'auto' for a cluster started with `ray start --head`)"
            ]) from exc
        self._acquired = True
        if fresh:
            if address is None and kwargs.get("address") == "local":
                self.channel_host = "127.0.0.1"  # every actor runs on this machine
            log.info("formation %r: Ray ready in %.1fs", self.formation, time.perf_counter() - t0)

    def map_width(self) -> int | None:
        """The cluster's CPUs: each replica of a mapped formation's nodes is a process, so
        the default of 100 items at once would start 100 processes per inner node."""
        self._connect()
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)))

    def shipped(self, recipe: NodeRecipe) -> tuple[tuple[Any, ...], dict[str, EventBus]]:
        """``recipe``'s arguments as its Ray actors get them, and the event buses of its
        agents (which stay here: see :mod:`._ray_hooks`), by token.

        Raises:
            FormationSetupError: the node cannot be pickled.
        """
        ray = self.ray
        self._connect()
        install_hooks(ray)
        args = tuple(portable(a) for a in recipe.args)
        ship_unimportable_by_value(ray.cloudpickle)  # e.g. a formation file the launcher loaded
        try:
            with collecting() as buses:
                ray.cloudpickle.dumps((recipe.cls, args, recipe.kwargs))
        except Exception as exc:
            raise FormationSetupError(self.formation, [
                f"node {recipe.name!r} cannot be pickled for the Ray backend ({type(exc).__name__}: {exc}): "
                "its function, agent, tools or provider hold something live (a lock, a client, an open "
                f"file); build such things inside the node's code, or use backend='threads'{_delegates_hint(args)}"
            ]) from exc
        return args, dict(buses)

    def host_actor(self, recipe: NodeRecipe, args: tuple[Any, ...]) -> Any:
        """Start one Ray actor running a replica of ``recipe`` (``args``: see :meth:`shipped`)."""
        ray = self.ray
        if self._remote is None:
            self.direct = channels_allowed()
            self._remote = ray.remote(NodeHost)
        # threaded (max_concurrency=2): an interrupt reaches the actor while it works;
        # restarted by Ray when its process dies; a failed call is not retried by Ray
        # (our supervision decides).
        return self._remote.options(
            max_restarts=-1, max_task_retries=0, max_concurrency=2, name=None,
        ).remote(recipe.cls, args, recipe.kwargs, self.channel_key, self.channel_host)

    def start_node(self, recipe: NodeRecipe, concurrency: int, observer: Any) -> ThreadNode:
        if getattr(recipe.cls, "runs_in_driver", False):
            # a node that only drives other actors (a nested formation, whose own nodes
            # are Ray actors): it stays beside the router, as on the threads backend
            return super().start_node(recipe, concurrency, observer)
        node = RayNode(self, recipe, concurrency, observer)
        self.nodes.append(node)
        return node

    def stop(self, grace: float, in_flight: Container[str] | None = None) -> None:
        super().stop(grace, in_flight)
        nodes = [node for node in self.nodes if isinstance(node, RayNode)]
        winding = [ref for node in nodes for ref in node.wind_down()]
        if winding:  # a killed process runs no finally: give the cancelled coroutines their moment
            try:
                self.ray.wait(winding, num_returns=len(winding), timeout=min(grace, 1.0))
            except Exception:
                log.debug("formation %r: Ray actors did not stop their event loops", self.formation, exc_info=True)
        for node in nodes:
            node.kill()
        # proxies still waiting on a killed actor get its error at once and end
        deadline = time.monotonic() + 2.0
        for actor in [*self.spawned, *self.abandoned]:
            actor.thread.join(max(0.0, deadline - time.monotonic()))
        if self.owns_ray:
            release_ray(self.ray)  # the last formation using it shuts it down (or leaves a cluster)
        self.owns_ray = self._acquired = False
