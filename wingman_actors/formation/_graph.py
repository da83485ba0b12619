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

The node attributes (the contract; a graph built by hand with networkx is the same thing)
are defined, and checked, in :mod:`wingman_actors.formation._validation`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from itertools import pairwise
from types import UnionType
from typing import TYPE_CHECKING, Any

import networkx as nx  # type: ignore[import-untyped]

from ..errors import FormationSetupError
from ._async_api import AsyncRuns
from ._fork_api import Forks
from ._plan import Plan, compile_plan
from ._render import to_dot, to_mermaid
from ._spellings import spelling_hint
from ._sync_api import Runs
from ._validation import OWNERS, POLICY_DEFAULTS, close_name, edge_problems, is_agent, policy_problems, quote

# Declaring a formation loads neither the agent layer, nor the store, nor the runtime: each is imported where
# first needed (an agent's check, a journal, start(), run(), fork()): `import Formation` stays light.
if TYPE_CHECKING:
    from ..agents._agent import Agent

__all__ = ["Formation"]


class Formation(Runs, AsyncRuns, Forks):
    """A formation: a named ``networkx.DiGraph`` of function, agent, fleet and map nodes.

    The builder methods write exactly the documented attributes (policy defaults are
    applied by the plan, not written), so a graph built by hand is the same thing. They
    return the formation, so calls chain.

    Args:
        name: the formation's name, used in errors, logs and results.
        graph: a ``networkx.DiGraph`` declared by hand; a new empty one when None.

    Raises:
        FormationSetupError: the name is empty, or ``graph`` is not a ``networkx.DiGraph``
            (a ``MultiDiGraph`` or an undirected graph is refused). Every builder method
            raises it too, listing each problem of the call with its fix.

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
            raise FormationSetupError(
                str(name), [f"Formation needs a non-empty name, e.g. Formation('research'), got {name!r}"]
            )
        if graph is None:
            graph = nx.DiGraph()
        elif isinstance(graph, nx.MultiGraph) or not isinstance(graph, nx.DiGraph):
            raise FormationSetupError(name, [
                f"graph must be a networkx.DiGraph, got {type(graph).__name__}; "
                "convert it with networkx.DiGraph(graph) (parallel edges merge into one; an undirected "
                "edge becomes two directed ones)"
            ])
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
            **policies: ``retries``, ``backoff``, ``retry_on``, ``max_backoff``,
                ``jitter``, ``timeout``, ``on_error``, ``concurrency``, ``max_visits``
                (see :mod:`wingman_actors.formation._supervision` for the retry policy).

        Raises:
            FormationSetupError: the name is taken or not a str, ``fn`` is not callable, a
                policy keyword is unknown or a policy value out of range (all listed).
        """
        bad: list[str] = [] if callable(fn) else [f"fn must be callable, got {type(fn).__name__}"]
        return self._add("add_function", name, {"kind": "function", "fn": fn}, policies, bad)

    def add_agent(self, name: str, agent: Agent, *, prompt: str | None = None, **policies: Any) -> Formation:
        """Declare an agent node: one session per input; the output is the answer's text,
        or the validated object of the agent's ``output_schema``.

        Args:
            name: the node's name.
            agent: the agent to run.
            prompt: a template for the user message, with ``{input}`` and, for dict or
                model inputs, their keys; without it, the input as text or JSON.
            **policies: as for :meth:`add_function`.

        Raises:
            FormationSetupError: as for :meth:`add_function`; ``agent`` is not an Agent.
        """
        attrs: dict[str, Any] = {"kind": "agent", "agent": agent}
        if prompt is not None:
            attrs["prompt"] = prompt
        return self._add("add_agent", name, attrs, policies, _agent_problems(agent))

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

        Raises:
            FormationSetupError: as for :meth:`add_agent`; ``max_workers`` is not an int >= 0.
        """
        attrs: dict[str, Any] = {"kind": "fleet", "agent": agent, "max_workers": max_workers}
        if prompt is not None:
            attrs["prompt"] = prompt
        return self._add("add_fleet", name, attrs, policies, _agent_problems(agent))

    def add_formation(self, name: str, formation: Formation, **policies: Any) -> Formation:
        """Declare a formation node: ``formation`` runs as one node. Its input is the
        inner run's input (every inner source receives it); its output is the inner
        single sink's output, or the dict of sink outputs when there are several. When
        the single sink is skipped (an ``on_error="skip"`` inside), the node has no
        output: it is skipped, and so is what depends only on it.

        Inner events reach this formation's listeners with ``node`` set to the path
        (``"name/inner_node"``); a journalled run journals the inner visits (in the same
        store, as the run ``"<run id>/name/<visit>"``), so a resume does not repeat them;
        an ``interrupt()`` inside suspends this run. The policies (``retries``,
        ``backoff``, ``timeout``, ``on_error``) apply to the inner run as a whole
        (``retry_on`` names the errors of inner nodes that are worth another run); the node
        has no actor of its own (its inner formation's nodes do the work, and pipeline its
        visits as any formation does), so ``concurrency`` has no effect on it.

        Args:
            name: the node's name.
            formation: the formation to run (validated with this one; it may not contain
                this formation, directly or through another nested one).
            **policies: as for :meth:`add_function`.

        Raises:
            FormationSetupError: as for :meth:`add_function`; ``formation`` is not a Formation.

        Example:
            >>> inner = Formation("inner").add_function("double", lambda x: 2 * x)
            >>> outer = Formation("outer").add_formation("sub", inner, retries=1)
            >>> outer.graph.nodes["sub"]["kind"]
            'formation'
        """
        bad: list[str] = [] if isinstance(formation, Formation) else [
            f"formation must be a Formation, e.g. Formation('inner').add_function(...), got {type(formation).__name__}"
        ]
        if formation is self:
            bad.append(f"formation {self.name!r} cannot be nested in itself; nest a different formation")
        return self._add("add_formation", name, {"kind": "formation", "formation": formation}, policies, bad)

    def add_map(
        self,
        name: str,
        fn: Callable[[Any], Any] | None = None,
        *,
        formation: Formation | None = None,
        max_workers: int = 0,
        **policies: Any,
    ) -> Formation:
        """Declare a map node: takes a list and applies ``fn`` to every item, or runs
        ``formation`` once per item, at most ``max_workers`` items at once (0: one per item,
        up to 100, as for a fleet); outputs the list of results in item order.

        With ``fn``: an ``async def`` function is awaited, on an event loop the runtime owns
        (one per node replica, shared by its items: it must not block, or the other items
        wait). With ``formation``: the inner formation's sources receive the item (as
        :meth:`add_formation` runs it once), its nodes get ``max_workers`` replicas, inner
        events are named ``"name/<item>/<inner node>"``, and a journalled run journals each
        item's inner run (as ``"<run id>/name/<visit>/<item>"``).

        ``retries`` apply per item: a retry reruns only the items that failed, and an item
        that still fails fails the node (:class:`~wingman_actors.errors.MapItemsError`, its
        ``errors`` by item index). ``timeout`` bounds the whole visit. A journalled run
        journals each item as it finishes, so a resumed run does not run it again; an
        ``interrupt()`` inside an item suspends the run.

        Args:
            name: the node's name.
            fn: a callable of one item; its parameter's annotation validates each item,
                and the node outputs ``list[<its return type>]``.
            formation: instead of ``fn``, the formation each item runs through.
            max_workers: the most items at once.
            **policies: as for :meth:`add_function`.

        Raises:
            FormationSetupError: as for :meth:`add_function`; neither or both of ``fn`` and
                ``formation``; ``max_workers`` is not an int >= 0.

        Example:
            >>> def square(x: int) -> int:
            ...     return x * x
            >>> Formation("squares").add_map("square", square, max_workers=4).run([1, 2, 3]).output
            [1, 4, 9]
            >>> inner = Formation("square").add_function("square", square)
            >>> Formation("squares").add_map("each", formation=inner, max_workers=2).run([1, 2, 3]).output
            [1, 4, 9]
        """
        if (fn is None) == (formation is None):
            has = "both fn and formation" if fn is not None else "neither fn nor formation"
            bad = [f"add_map needs exactly one of fn (a function of one item) or formation= (a Formation run per "
                   f"item), got {has}"]
            return self._add("add_map", name, {"kind": "map", "max_workers": max_workers}, policies, bad)
        if fn is not None:
            if isinstance(fn, Formation):  # add_map("box", inner): the formation is a keyword argument
                bad = [f"fn is the formation {fn.name!r}: to run a formation per item, pass it by keyword, "
                       f"add_map({name!r}, formation=...)"]
            else:
                bad = [] if callable(fn) else [f"fn must be callable (a function of one item), got {type(fn).__name__}"]
            return self._add("add_map", name, {"kind": "map", "fn": fn, "max_workers": max_workers}, policies, bad)
        bad = [] if isinstance(formation, Formation) else [
            f"formation must be a Formation, e.g. Formation('inner').add_function(...), got {type(formation).__name__}"
        ]
        if formation is self:
            bad.append(f"formation {self.name!r} cannot be mapped over inside itself; map a different formation")
        attrs = {"kind": "map", "formation": formation, "max_workers": max_workers}
        return self._add("add_map", name, attrs, policies, bad)

    def connect(
        self,
        *names: str,
        when: Callable[[Any], bool] | type | tuple[type, ...] | UnionType | None = None,
        otherwise: bool = False,
        on_error: bool = False,
        **unknown: Any,
    ) -> Formation:
        """Add edges along ``names``: ``connect("a", "b", "c")`` adds a → b and b → c.

        Args:
            *names: two or more declared node names.
            when: a condition on the upstream output; the edge carries a message only when
                it holds: a predicate, or a type, tuple or union of types (``when=int`` means
                ``isinstance(output, int)``; validation then narrows the upstream's output
                type along the edge, as it does for a predicate annotated ``TypeGuard[T]``
                or ``TypeIs[T]``). Applies to every edge added.
            otherwise: the edge is taken when none of the upstream's conditional edges
                fire (one per node). A node whose outgoing edges are all conditional, with
                no otherwise edge, fails the run with ``NoRouteError`` when none fires.
            on_error: add error edges (attribute ``on_error=True``), taken only when the
                source fails after its retries (timeouts included), carrying a
                :class:`~wingman_actors.formation.NodeFailure`: the run goes on from there.
            **unknown: none is taken: a misspelt keyword is a ``FormationSetupError``.

        Raises:
            FormationSetupError: an unknown keyword, fewer than two names, ``when`` is not a predicate or a
                type, both ``when`` and ``otherwise``, ``on_error`` is not a bool or comes
                with a condition, a name is not declared, or an edge already exists (all
                listed). Nothing is added.
        """
        call = f"connect({', '.join(repr(n) for n in names)})"
        if len(names) < 2:
            raise FormationSetupError(self.name, [f"{call}: connect needs two or more node names, e.g. connect('a', 'b')"])
        attrs: dict[str, Any] = {} if when is None else {"when": when}
        if otherwise is not False:
            attrs["otherwise"] = otherwise
        if on_error is not False:
            attrs["on_error"] = on_error
        problems = edge_problems(names[0], names[1], attrs)
        if unknown:
            hints = [f"did you mean {c[0]!r}?" for k in unknown
                     if (c := difflib.get_close_matches(k, ["when", "otherwise", "on_error"], n=1))]
            problems.insert(0, f"unknown keyword(s) {', '.join(map(repr, unknown))}; {' '.join(hints)}"
                               f"{' ' if hints else ''}connect takes when=, otherwise= and on_error=")
        for n in dict.fromkeys(names):
            if callable(n) and not isinstance(n, str):  # a function handed over as a callback, not its node's name
                label = getattr(n, "__name__", "")
                fn = label if label.isidentifier() else "fn"
                label = label if label.isidentifier() else "step"
                problems.append(f"connect takes node names, not a {type(n).__name__}; declare it as a node "
                                f"first, e.g. add_function({label!r}, {fn}), and connect its name {label!r}")
            elif n not in self.graph:
                close = difflib.get_close_matches(str(n), [str(k) for k in self.graph], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                problems.append(f"no node named {n!r}{hint}; declare it first with add_function/add_agent/add_fleet/add_map/add_formation")
        edges = list(pairwise(names))
        for u, v in dict.fromkeys(edges):
            if self.graph.has_edge(u, v) or edges.count((u, v)) > 1:
                problems.append(f"edge {u!r} → {v!r} is declared twice; connect each pair once")
        if otherwise and not problems:
            sources = {u for u, _ in edges}
            taken = [u for u in sources if any(o is True for *_, o in self.graph.out_edges(u, data="otherwise"))]
            problems += [f"node {u!r} has an otherwise edge already; a node may have one" for u in sorted(taken)]
            if len(edges) != len(sources):
                problems.append("otherwise=True applies to every edge added; give each node at most one")
        if problems:
            raise FormationSetupError(self.name, [f"{call}: {p}" for p in problems])
        self.graph.add_edges_from(edges, **attrs)
        return self

    def validate(self) -> Plan:
        """Check the whole formation and compile it.

        Returns:
            The :class:`~wingman_actors.formation._plan.Plan` the runtime executes.

        Raises:
            FormationSetupError: listing every problem found.
        """
        return compile_plan(self)

    def to_mermaid(self) -> str:
        """The formation as a Mermaid flowchart (works on an invalid formation too)."""
        return to_mermaid(self)

    def to_dot(self) -> str:
        """The formation as a Graphviz DOT digraph (works on an invalid formation too)."""
        return to_dot(self)

    def _add(
        self, method: str, name: str, attrs: dict[str, Any], policies: dict[str, Any], problems: list[str]
    ) -> Formation:
        call = f"{method}({name!r}, ...)"
        if not isinstance(name, str) or not name.strip():
            raise FormationSetupError(self.name, [f"{call}: a node name must be a non-empty str"])
        if "kind" in self.graph.nodes.get(name, {}):
            problems.insert(0, f"formation {self.name!r} already has a node named {name!r}; pick another name")
        unknown = sorted(set(policies) - set(POLICY_DEFAULTS))
        if unknown:
            spelt = {k: h for k in unknown if (h := spelling_hint(k, policies[k])) is not None}
            hints = [None if k in spelt else close_name(k, POLICY_DEFAULTS, cutoff=0.6) for k in unknown]
            guesses = "".join(f"; did you mean {h!r} for {k!r}?" for k, h in zip(unknown, hints, strict=True) if h)
            guesses += "".join(f"; {h}" for h in spelt.values())
            guesses += "".join(f"; {k} applies only to {OWNERS[k]}" for k in unknown if k in OWNERS)
            problems.append(
                f"unknown policy keyword(s) {quote(unknown)}{guesses} (policies: {', '.join(POLICY_DEFAULTS)})"
            )
        attrs.update((k, v) for k, v in policies.items() if k in POLICY_DEFAULTS)
        problems += policy_problems(name, attrs)
        if problems:
            raise FormationSetupError(self.name, [f"{call}: {p}" for p in problems])
        # A node created by an edge to a not-yet-declared name gets its attributes now.
        self.graph.add_node(name, **attrs)
        return self


def _agent_problems(agent: Any) -> list[str]:
    if is_agent(agent):
        return []
    return [f"agent must be an Agent, e.g. Agent('writer', provider=...), got {type(agent).__name__}"]
