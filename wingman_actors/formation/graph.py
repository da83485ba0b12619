"""The declaration of a formation: a ``networkx.DiGraph`` whose node and edge attributes
say what runs, and the builder that writes exactly those attributes.

Example:
    >>> from wingman_actors.formation import Formation
    >>> def double(x: int) -> int:
    ...     return 2 * x
    >>> def show(x: int) -> str:
    ...     return f"= {x}"
    >>> f = Formation("demo").add_function("double", double, retries=2).add_function("show", show)
    >>> f.connect("double", "show").nodes
    ['double', 'show']
    >>> dict(f.graph.nodes["double"]) == {"kind": "function", "fn": double, "retries": 2}
    True

The node attributes (the contract; a graph built by hand with networkx is the same thing):
``kind="function", fn=<callable>`` | ``kind="agent", agent=<Agent>`` |
``kind="fleet", agent=<Agent>, max_workers=<int>``, plus the policies ``retries``,
``backoff``, ``timeout``, ``on_error``, ``concurrency``, ``max_visits`` and, for agent
and fleet nodes, ``prompt``. An edge may carry ``when=<predicate on the upstream output>``.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import networkx as nx  # type: ignore[import-untyped]

from ..agent import Agent
from .typecheck import inspect_callable

if TYPE_CHECKING:
    from ..providers.base import Provider
    from .events import FormationEvent
    from .plan import Plan
    from .result import FormationResult
    from .runtime import EventListener, RunningFormation

__all__ = [
    "KINDS",
    "NODE_ATTRS",
    "POLICY_DEFAULTS",
    "Formation",
    "edge_label",
    "edge_problems",
    "node_problems",
    "policy_problems",
]

KINDS = ("function", "agent", "fleet")
"""The node kinds."""

POLICY_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {"retries": 0, "backoff": 0.1, "timeout": None, "on_error": "fail", "concurrency": 1, "max_visits": 10}
)
"""Policy attributes any node may carry, with the defaults the plan applies."""

_KIND_ATTRS = {"function": {"fn"}, "agent": {"agent", "prompt"}, "fleet": {"agent", "max_workers", "prompt"}}
NODE_ATTRS = frozenset({"kind", "fn", "agent", "max_workers", "prompt", *POLICY_DEFAULTS})
_ALIASES = {"retry": "retries", "func": "fn", "callable": "fn", "workers": "max_workers", "condition": "when", "predicate": "when"}
_DECLARE = "declare it with add_function/add_agent/add_fleet"
_OWNERS = {"prompt": "agent and fleet nodes (add_agent, add_fleet)", "max_workers": "fleet nodes (add_fleet)"}


def edge_label(when: Any) -> str:
    """The label of an edge carrying ``when``: the predicate's name, or ``"when"``."""
    if when is None:
        return ""
    name = getattr(when, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "when"


def _quote(names: Any) -> str:
    return ", ".join(repr(n) for n in names)


def _unknown_attr(where: str, key: Any, known: frozenset[str]) -> list[str]:
    if not isinstance(key, str) or key in known:
        return []
    guess = _ALIASES.get(key) if _ALIASES.get(key) in known else None
    guess = guess or next(iter(difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)), None)
    if guess is None:
        return []  # a user's own attribute (a label, a colour): allowed
    return [f"{where} has attribute {key!r}: did you mean {guess!r}? (rename it; unknown attributes are ignored)"]


def _is_int(v: Any, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_seconds(v: Any, positive: bool) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return False
    return v > 0 if positive else v >= 0


_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "retries": (lambda v: _is_int(v, 0), "an int >= 0 (restarts after a failure)"),
    "backoff": (lambda v: _is_seconds(v, False), "a number of seconds >= 0 (base of the exponential backoff)"),
    "timeout": (lambda v: v is None or _is_seconds(v, True), "a number of seconds > 0, or None for no timeout"),
    "on_error": (lambda v: isinstance(v, str) and v in ("fail", "skip"), "'fail' or 'skip'"),
    "concurrency": (lambda v: _is_int(v, 1), "an int >= 1"),
    "max_visits": (lambda v: _is_int(v, 1), "an int >= 1 (visits per run, bounds cycles)"),
    "max_workers": (lambda v: _is_int(v, 0), "an int >= 0 (0: one session per item, up to 100)"),
    "prompt": (lambda v: v is None or isinstance(v, str), "a str template using {input}, or None"),
}


def policy_problems(node: Any, attrs: Mapping[str, Any]) -> list[str]:
    """Problems with the policy values (and ``max_workers``, ``prompt``) in ``attrs``."""
    out = []
    for key, (ok, expected) in _RULES.items():
        if key in attrs and not ok(attrs[key]):
            out.append(f"node {node!r}: {key} must be {expected}, got {attrs[key]!r}")
    return out


def node_problems(node: Any, attrs: Mapping[str, Any]) -> tuple[list[str], bool]:
    """Problems with one node's attributes, and whether its kind, ``fn`` and ``agent`` are
    usable for the checks that follow (signatures, types)."""
    if not isinstance(node, str):
        return [f"node {node!r} has a {type(node).__name__} name; name every node with a str"], False
    kind = attrs.get("kind")
    if kind is None:
        return [
            f"node {node!r} has no kind: it was probably created by an edge to an undeclared node; "
            f"{_DECLARE} or fix the edge's name"
        ], False
    if not isinstance(kind, str) or kind not in KINDS:
        return [f"node {node!r} has unknown kind {kind!r}; use one of {_quote(KINDS)}"], False
    out = [p for key in attrs for p in _unknown_attr(f"node {node!r}", key, NODE_ATTRS)]
    for key in sorted(set(attrs) & (NODE_ATTRS - {"kind", *POLICY_DEFAULTS}) - _KIND_ATTRS[kind]):
        owners = " and ".join(k for k in KINDS if key in _KIND_ATTRS[k])
        out.append(f"{kind} node {node!r} has {key}=, which only applies to {owners} nodes; remove it")
    usable = True
    if kind == "function" and not callable(attrs.get("fn")):
        got = "no fn" if "fn" not in attrs else f"fn={type(attrs['fn']).__name__}, not callable"
        out.append(f"function node {node!r} has {got}; set fn=<a callable taking the node's input>")
        usable = False
    elif kind != "function" and not isinstance(attrs.get("agent"), Agent):
        got = "nothing" if "agent" not in attrs else type(attrs["agent"]).__name__
        out.append(f"{kind} node {node!r} needs agent=<an Agent>, got {got}")
        usable = False
    return out + policy_problems(node, attrs), usable


def edge_problems(u: Any, v: Any, attrs: Mapping[str, Any]) -> list[str]:
    """Problems with one edge's attributes (``when`` and close typos of it)."""
    where = f"edge {u!r} → {v!r}"
    out = [p for key in attrs for p in _unknown_attr(where, key, frozenset({"when"}))]
    when = attrs.get("when")
    if when is not None:
        if not callable(when):
            out.append(f"{where}: when must be a predicate on the output of {u!r}, got {type(when).__name__}")
        elif not inspect_callable(when).accepts_one():
            out.append(f"{where}: when={edge_label(when)} must take one argument (the output of {u!r})")
    return out



class Formation:
    """A formation: a named ``networkx.DiGraph`` of function, agent and fleet nodes.

    The builder methods write exactly the documented attributes (policy defaults are
    applied by the plan, not written), so a graph built by hand is the same thing. They
    return the formation, so calls chain.

    Args:
        name: the formation's name, used in errors, logs and results.
        graph: a ``networkx.DiGraph`` declared by hand; a new empty one when None.

    Raises:
        ValueError: the name is empty.
        TypeError: ``graph`` is not a ``networkx.DiGraph`` (a ``MultiDiGraph`` or an
            undirected graph is refused).

    Example:
        >>> from wingman_actors import Agent
        >>> from wingman_actors.testing import ScriptedProvider
        >>> writer = Agent("writer", provider=ScriptedProvider(["a draft"]))
        >>> f = Formation("blog").add_function("topic", str.strip).add_agent("write", writer)
        >>> f.connect("topic", "write")
        Formation('blog', nodes=2, edges=1)
    """

    def __init__(self, name: str, graph: nx.DiGraph | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"Formation needs a non-empty name, e.g. Formation('research'), got {name!r}")
        if graph is None:
            graph = nx.DiGraph()
        elif isinstance(graph, nx.MultiGraph) or not isinstance(graph, nx.DiGraph):
            raise TypeError(
                f"formation {name!r}: graph must be a networkx.DiGraph, got {type(graph).__name__}; "
                "convert it with networkx.DiGraph(graph) (parallel edges merge into one; an undirected "
                "edge becomes two directed ones)"
            )
        self.name = name
        self.graph: nx.DiGraph = graph

    @property
    def nodes(self) -> list[str]:
        """The node names, in declaration order."""
        return list(self.graph.nodes)

    def __repr__(self) -> str:
        return f"Formation({self.name!r}, nodes={self.graph.number_of_nodes()}, edges={self.graph.number_of_edges()})"

    def add_function(self, name: str, fn: Callable[..., Any], **policies: Any) -> Formation:
        """Declare a function node: ``fn`` is called with the node's input.

        Args:
            name: the node's name.
            fn: any callable; its annotations are checked against its neighbours'.
            **policies: ``retries``, ``backoff``, ``timeout``, ``on_error``,
                ``concurrency``, ``max_visits``.

        Raises:
            ValueError: the name is taken, or a policy value is out of range.
            TypeError: ``fn`` is not callable, or a policy keyword is unknown.
        """
        if not callable(fn):
            raise TypeError(f"add_function({name!r}, fn): fn must be callable, got {type(fn).__name__}")
        return self._add("add_function", name, {"kind": "function", "fn": fn}, policies)

    def add_agent(self, name: str, agent: Agent, *, prompt: str | None = None, **policies: Any) -> Formation:
        """Declare an agent node: one session per input; the output is the answer's text,
        or the validated object of the agent's ``output_schema``.

        Args:
            name: the node's name.
            agent: the agent to run.
            prompt: a template for the user message, with ``{input}`` and, for dict or
                model inputs, their keys; without it, the input as text or JSON.
            **policies: as for :meth:`add_function`.
        """
        attrs: dict[str, Any] = {"kind": "agent", "agent": _check_agent("add_agent", name, agent)}
        if prompt is not None:
            attrs["prompt"] = prompt
        return self._add("add_agent", name, attrs, policies)

    def add_fleet(
        self, name: str, agent: Agent, *, max_workers: int = 0, prompt: str | None = None, **policies: Any
    ) -> Formation:
        """Declare a fleet node: takes a list and runs one ``agent`` session per item, at
        most ``max_workers`` at once (0: one per item, up to 100); outputs the list of
        per-item outputs in item order.

        Args:
            name: the node's name.
            agent: the agent every item runs.
            max_workers: the most sessions at once.
            prompt: a template applied to each item (see :meth:`add_agent`).
            **policies: as for :meth:`add_function`.
        """
        attrs: dict[str, Any] = {
            "kind": "fleet",
            "agent": _check_agent("add_fleet", name, agent),
            "max_workers": max_workers,
        }
        if prompt is not None:
            attrs["prompt"] = prompt
        return self._add("add_fleet", name, attrs, policies)

    def connect(self, *names: str, when: Callable[[Any], bool] | None = None) -> Formation:
        """Add edges along ``names``: ``connect("a", "b", "c")`` adds a → b and b → c.

        Args:
            *names: two or more declared node names.
            when: a predicate on the upstream output; the edge carries a message only
                when it returns true. Applies to every edge added.

        Raises:
            ValueError: a name is not declared, or an edge already exists.
            TypeError: fewer than two names, or ``when`` is not callable.
        """
        call = f"connect({', '.join(repr(n) for n in names)})"
        if len(names) < 2:
            raise TypeError(f"{call}: connect needs two or more node names, e.g. connect('a', 'b')")
        if when is not None and not callable(when):
            raise TypeError(f"{call}: when must be a predicate on the upstream output, got {type(when).__name__}")
        problems = []
        for n in dict.fromkeys(names):
            if n not in self.graph:
                close = difflib.get_close_matches(str(n), [str(k) for k in self.graph], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(f"no node named {n!r}{hint}; declare it first with add_function/add_agent/add_fleet")
        edges = list(pairwise(names))
        for u, v in dict.fromkeys(edges):
            if self.graph.has_edge(u, v) or edges.count((u, v)) > 1:
                problems.append(f"edge {u!r} → {v!r} is declared twice; connect each pair once")
        if problems:
            raise ValueError(f"{call} in formation {self.name!r}: " + "; ".join(problems))
        attrs = {} if when is None else {"when": when}
        self.graph.add_edges_from(edges, **attrs)
        return self

    def validate(self) -> Plan:
        """Check the whole formation and compile it.

        Returns:
            The :class:`~wingman_actors.formation.plan.Plan` the runtime executes.

        Raises:
            FormationSetupError: listing every problem found.
        """
        from .plan import compile_plan  # plan imports this module's attribute contract

        return compile_plan(self)

    def start(
        self,
        *,
        on_event: EventListener | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
    ) -> RunningFormation:
        """Validate, then start every node actor and the supervisor.

        Args:
            on_event: called with every :class:`FormationEvent` of every run.
            provider: replaces the provider of every agent and fleet node (e.g. from the CLI).
            work_dir: where agent and fleet sessions run their tools (default: the current
                directory).
            backend: where the node actors live: ``"threads"`` (Pykka actors on threads of
                this process, the default) or ``"ray"`` (each replica a Ray actor; needs
                the ``ray`` extra); any other name is a ``FormationSetupError``.
            backend_options: for ``backend="ray"``: ``address`` (``"auto"`` or a
                ``ray://`` address to join a cluster; default a local Ray), ``num_cpus``,
                ``init`` (more ``ray.init`` arguments).

        Returns:
            The running formation: ``submit(input) -> Future[FormationResult]``; use it
            as a context manager so it stops.
        """
        from .runtime import RunningFormation

        return RunningFormation(
            self.validate(), on_event=on_event, provider=provider, work_dir=work_dir, backend=backend,
            backend_options=backend_options,
        ).start()

    def run(
        self,
        input: Any,
        *,
        timeout: float | None = None,
        on_event: EventListener | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
    ) -> FormationResult:
        """Start, run ``input`` through, stop. ``timeout`` bounds the whole run;
        ``backend`` and ``backend_options`` are as for :meth:`start`.

        Raises:
            FormationSetupError: the formation is not valid.
            FormationRuntimeError: the run failed (node, attempts, run id, partial outputs).
        """
        from .runtime import run_once

        return run_once(
            self.validate(), input, timeout=timeout, on_event=on_event, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options,
        )

    def run_stream(
        self,
        input: Any,
        *,
        timeout: float | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
    ) -> Iterator[FormationEvent]:
        """Start, run ``input``, yield its events (ending with ``run_finished``, whose
        ``data["result"]`` is the result, or ``run_failed``), stop. ``backend`` and
        ``backend_options`` are as for :meth:`start`."""
        from .runtime import run_stream

        return run_stream(self.validate(), input, timeout=timeout, provider=provider, work_dir=work_dir,
                          backend=backend, backend_options=backend_options)

    def to_mermaid(self) -> str:
        """The formation as a Mermaid flowchart (works on an invalid formation too)."""
        from .render import to_mermaid

        return to_mermaid(self)

    def to_dot(self) -> str:
        """The formation as a Graphviz DOT digraph (works on an invalid formation too)."""
        from .render import to_dot

        return to_dot(self)

    def _add(self, method: str, name: str, attrs: dict[str, Any], policies: dict[str, Any]) -> Formation:
        call = f"{method}({name!r}, ...)"
        if not isinstance(name, str) or not name:
            raise TypeError(f"{call}: a node name must be a non-empty str")
        if "kind" in self.graph.nodes.get(name, {}):
            raise ValueError(f"{call}: formation {self.name!r} already has a node named {name!r}; pick another name")
        unknown = sorted(set(policies) - set(POLICY_DEFAULTS))
        if unknown:
            hints = [difflib.get_close_matches(k, list(POLICY_DEFAULTS), n=1, cutoff=0.6) for k in unknown]
            guesses = "".join(f"; did you mean {h[0]!r} for {k!r}?" for k, h in zip(unknown, hints, strict=True) if h)
            guesses += "".join(f"; {k} applies only to {_OWNERS[k]}" for k in unknown if k in _OWNERS)
            raise TypeError(
                f"{call}: unknown policy keyword(s) {_quote(unknown)}{guesses} "
                f"(policies: {', '.join(POLICY_DEFAULTS)})"
            )
        attrs.update(policies)
        problems = policy_problems(name, attrs)
        if problems:
            raise ValueError(f"{call}: " + "; ".join(problems))
        # A node created by an edge to a not-yet-declared name gets its attributes now.
        self.graph.add_node(name, **attrs)
        return self


def _check_agent(method: str, name: str, agent: Any) -> Agent:
    if not isinstance(agent, Agent):
        raise TypeError(
            f"{method}({name!r}, agent): agent must be an Agent, e.g. Agent('writer', provider=...), "
            f"got {type(agent).__name__}"
        )
    return agent
