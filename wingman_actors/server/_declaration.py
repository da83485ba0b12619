"""Formation declarations in JSON, and how one becomes a :class:`~wingman_actors.Formation`.

A declaration names what Python would pass as objects: agent and fleet nodes name a
stored agent by ``agent_id``, function and map nodes a registered function by ``function``
(a map node calls it on every item of its list input, ``max_workers`` at once), formation
nodes a stored formation by ``formation_id`` (a map node may run one per item instead of a
function; :mod:`.nesting` loads and checks them), and edge conditions a registered
predicate by ``condition``; ``"on_error": true`` makes an error edge. Policies
(``retries``, ``backoff``, ``retry_on``, ``max_backoff``, ``jitter``, ``timeout``,
``on_error``, ``concurrency``, ``max_visits``) sit on the node, flat or under ``policies``;
``retry_on`` names exception classes: built-in ones (``"ConnectionError"``) or those of
:mod:`wingman_actors.errors` (``"NodeTimeoutError"``)::

    {"name": "digest",
     "nodes": [{"name": "clean", "kind": "function", "function": "strip_text"},
               {"name": "summarize", "kind": "agent", "agent_id": "01J...", "prompt": "Summarize: {input}",
                "retries": 2, "timeout": 30}],
     "edges": [{"from": "clean", "to": "summarize", "condition": "is_long"}]}
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Mapping
from typing import Any, Literal

import networkx as nx  # type: ignore[import-untyped]
from pydantic import ConfigDict, Field, field_validator

from .. import errors
from ..agents._agent import Agent
from ..formation import Formation
from ._errors import ApiError
from ._functions import FunctionRegistry
from ._limits import MAX_BACKOFF_S, MAX_CONCURRENCY, MAX_RETRIES, MAX_TIMEOUT_S, MAX_VISITS, MAX_WORKERS
from ._schemas import Name, StrictIn

__all__ = [
    "EdgeDecl", "FormationDecl", "NodeDecl", "PoliciesDecl", "assemble", "declaration_problems",
    "exception_class", "setup_error",
]

POLICY_FIELDS = ("retries", "backoff", "retry_on", "max_backoff", "jitter", "timeout", "on_error", "concurrency",
                 "max_visits", "join")


def exception_class(name: str) -> type[BaseException] | None:
    """The exception class ``retry_on`` may name: a built-in one, or one of
    :mod:`wingman_actors.errors`; None for any other name."""
    found = getattr(builtins, name, None) if not name.startswith("_") else None
    if found is None and name in errors.__all__:
        found = getattr(errors, name)
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


class PoliciesDecl(StrictIn):
    """A node's supervision policies; unset ones take the runtime's defaults."""

    retries: int | None = Field(default=None, ge=0, le=MAX_RETRIES, description="restarts after a failure")
    backoff: float | None = Field(
        default=None, ge=0, le=MAX_BACKOFF_S, description="base seconds of the exponential backoff"
    )
    retry_on: list[str] | str | None = Field(
        default=None, description="exception class names retried (built-in or wingman_actors.errors); default: "
                                  "every error but PayloadError"
    )
    max_backoff: float | None = Field(
        default=None, ge=0, le=MAX_BACKOFF_S, description="the longest wait between retries, in seconds"
    )
    jitter: bool | None = Field(default=None, description="random waits between retries (default true)")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description="seconds per attempt")
    on_error: Literal["fail", "skip"] | None = None
    concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY, description="replicas of the node's actor")
    max_visits: int | None = Field(default=None, ge=1, le=MAX_VISITS, description="visits per run (bounds cycles)")
    join: Literal["all", "any"] | None = Field(
        default=None, description="fan-in: wait for every predecessor (all) or fire with the first value (any)"
    )

    # Type-checked before pydantic tries the union's branches, whose errors name them
    # ("retry_on.list[str]", "retry_on.str") instead of the field and its fix.
    @field_validator("retry_on", mode="before")
    @classmethod
    def _retry_on_type(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str) and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError('give an exception class name or a list of them, e.g. "ConnectionError" or '
                             '["ConnectionError", "TimeoutError"]')
        return value


class NodeDecl(PoliciesDecl):
    """One node: ``function`` (by registered name), ``agent`` or ``fleet`` (by ``agent_id``),
    ``formation`` (a stored formation, by ``formation_id``), or ``map`` (a registered
    ``function`` or a stored formation by ``formation_id``, run per item)."""

    name: Name
    kind: Literal["function", "agent", "fleet", "formation", "map"]
    function: str | None = Field(
        default=None, description="function and map nodes: a registered function's name (a map calls it per item)"
    )
    agent_id: str | None = Field(default=None, description="agent and fleet nodes: a stored agent's id")
    formation_id: str | None = Field(
        default=None, description="formation and map nodes: a stored formation's id, run as one node (a map runs "
                                  "it per item); a map takes this or 'function', not both"
    )
    max_workers: int | None = Field(
        default=None, ge=0, le=MAX_WORKERS,
        description="fleet and map nodes: items at once (0: one per item, up to the server's limit)",
    )
    prompt: str | None = Field(default=None, description="agent and fleet nodes: a template using {input}")
    policies: PoliciesDecl | None = None

    def policy_values(self) -> dict[str, Any]:
        """The policies set, flat and nested merged."""
        values = {f: getattr(self, f) for f in POLICY_FIELDS if getattr(self, f) is not None}
        if self.policies is not None:
            values.update(self.policies.model_dump(exclude_none=True))
        return values


class EdgeDecl(StrictIn):
    """An edge ``from`` → ``to``, carrying a message only when ``condition`` (a registered
    predicate on the upstream output) holds; with ``otherwise``, when none of the
    upstream's conditions holds; with ``on_error``, only when ``from`` fails."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)  # "from" is a keyword

    source: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)
    condition: str | None = None
    otherwise: bool | None = Field(
        default=None, strict=True, description="taken when none of the upstream's conditional edges fire"
    )
    on_error: bool | None = Field(
        default=None, description="an error edge: taken only when 'from' fails after its retries, carrying "
                                  "the failure (node, error, input, attempts, run_id) to 'to'"
    )


class FormationDecl(StrictIn):
    """``POST /formations`` and ``PUT /formations/{id}``: a whole declaration."""

    name: Name
    nodes: list[NodeDecl] = Field(min_length=1)
    edges: list[EdgeDecl] = Field(default_factory=list)

    def stored_nodes(self) -> list[dict[str, Any]]:
        """The nodes as stored and returned: null fields left out, policies flat."""
        out = []
        for n in self.nodes:
            node = n.model_dump(exclude_none=True, exclude={"policies", *POLICY_FIELDS})
            node.update(n.policy_values())
            out.append(node)
        return out

    def stored_edges(self) -> list[dict[str, Any]]:
        """The edges as stored and returned: ``{"from", "to", "condition"?}``."""
        return [e.model_dump(by_alias=True, exclude_none=True) for e in self.edges]


def _names(values: Mapping[str, Any]) -> str:
    return ", ".join(sorted(values)) or "none (start the server with --functions my.module)"


def declaration_problems(
    decl: FormationDecl, registry: FunctionRegistry, agent_ids: Collection[str], formation_ids: Collection[str] = ()
) -> list[str]:
    """What is wrong with ``decl`` before it reaches the formation validator, every problem
    naming where it is (``nodes[1]``, ``edges[0]``) and the fix.

    Args:
        decl: the declaration.
        registry: where function and predicate names are looked up.
        agent_ids: the ids of the stored agents nodes may name.
        formation_ids: the ids of the stored formations nodes may nest (whether nesting
            one would make a formation contain itself is :mod:`.nesting`'s concern).
    """
    problems: list[str] = []
    seen: set[str] = set()
    for i, n in enumerate(decl.nodes):
        where = f"nodes[{i}] ({n.name!r})"
        if n.name in seen:
            problems.append(f"{where}: the name {n.name!r} is used twice; give each node its own name")
        seen.add(n.name)
        if n.policies is not None:
            both = sorted(f for f in n.policies.model_fields_set if getattr(n, f) is not None)
            if both:
                problems.append(f"{where}: {', '.join(both)} given both flat and under policies; keep one")
        nested = n.policies is not None and n.policies.retry_on is not None
        problems += _retry_on_problems(where, n.policy_values().get("retry_on"),
                                       f"nodes[{i}].{'policies.' if nested else ''}retry_on")
        problems += _node_problems(where, n, registry, agent_ids, formation_ids, f"nodes[{i}]")
    pairs: set[tuple[str, str]] = set()
    for j, e in enumerate(decl.edges):
        where = f"edges[{j}] ({e.source!r} → {e.to!r})"
        if (e.source, e.to) in pairs:
            problems.append(f"{where}: this edge is declared twice; declare each pair once")
        pairs.add((e.source, e.to))
        for key, end in (("from", e.source), ("to", e.to)):
            if end not in seen:
                problems.append(at(f"edges[{j}].{key}",
                                   f"{where}: no node named {end!r}; nodes: {', '.join(sorted(seen))}"))
        if e.otherwise and e.condition is not None:
            problems.append(f"{where}: an otherwise edge takes no condition; drop one of them")
        if e.condition is not None and e.condition not in registry.predicates:
            problems.append(at(
                f"edges[{j}].condition",
                f"{where}: no registered predicate {e.condition!r}; registered: {_names(registry.predicates)}"))
    return problems


def _node_problems(
    where: str, n: NodeDecl, registry: FunctionRegistry, agent_ids: Collection[str], formation_ids: Collection[str],
    path: str,
) -> list[str]:
    """What is wrong with node ``n`` (at ``path``, e.g. ``nodes[0]``): its kind and the fields
    that go with it."""
    out: list[str] = []
    if n.kind == "map" and n.function is not None and n.formation_id is not None:
        out.append(f"{where}: a map node takes \"function\" (called per item) or \"formation_id\" (a stored "
                   "formation run per item), not both; remove one")
    elif n.kind == "function" or (n.kind == "map" and n.formation_id is None):
        if n.function is None:
            also = ", or \"formation_id\": a stored formation's id (GET /formations)" if n.kind == "map" else ""
            out.append(at(f"{path}.function",
                          f"{where}: a {n.kind} node needs \"function\": one of {_names(registry.functions)}{also}"))
        elif n.function not in registry.functions:
            out.append(at(f"{path}.function", f"{where}: no registered function {n.function!r}; registered: "
                                              f"{_names(registry.functions)}"))
    elif n.kind in ("formation", "map"):
        if n.formation_id is None:
            out.append(f"{where}: a formation node needs \"formation_id\": a stored formation's id (GET /formations "
                       "lists them; create one with POST /formations)")
        elif n.formation_id not in formation_ids:
            out.append(at(f"{path}.formation_id", f"{where}: no formation with id {n.formation_id!r}; create it "
                                                  "with POST /formations or fix the id (GET /formations lists them)"))
    elif n.agent_id is None:
        out.append(f"{where}: an {n.kind} node needs \"agent_id\" (create agents with POST /agents)")
    elif n.agent_id not in agent_ids:
        out.append(at(f"{path}.agent_id", f"{where}: no agent with id {n.agent_id!r}; create it with POST /agents or "
                                          "fix the id"))
    agentish = [f for f in ("agent_id", "prompt") if getattr(n, f) is not None]
    if agentish and n.kind not in ("agent", "fleet"):
        out.append(f"{where}: {', '.join(agentish)} only apply to agent and fleet nodes; remove them")
    if n.function is not None and n.kind not in ("function", "map"):
        out.append(f"{where}: \"function\" only applies to function and map nodes; remove it")
    if n.formation_id is not None and n.kind not in ("formation", "map"):
        out.append(f"{where}: formation_id only applies to formation and map nodes; remove it or use kind "
                   "\"formation\"")
    if n.max_workers is not None and n.kind in ("function", "agent", "formation"):
        instead = {"function": "kind \"map\" to call the function once per item",
                   "agent": "kind \"fleet\" to run the agent once per item",
                   "formation": "kind \"map\" to run the formation once per item"}[n.kind]
        out.append(f"{where}: max_workers only applies to fleet and map nodes; remove it or use {instead}")
    return out


def _retry_on_names(value: list[str] | str | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or ())


def _retry_on_problems(where: str, value: list[str] | str | None, field: str) -> list[str]:
    unknown = [name for name in _retry_on_names(value) if exception_class(name) is None]
    if not unknown:
        return []
    return [at(field, f"{where}: retry_on names {', '.join(repr(u) for u in unknown)}, not a built-in exception nor "
                      "one of wingman_actors.errors; use names such as \"ConnectionError\", \"TimeoutError\" or "
                      "\"NodeTimeoutError\"")]


class Problem(str):
    """A problem of a declaration that one field of the request is at fault for (``field``,
    e.g. ``nodes[0].function``): the 400 names it in ``fields`` too."""

    field: str


def at(field: str, text: str) -> str:
    """``text``, a problem that ``field`` of the declaration is at fault for."""
    problem = Problem(text)
    problem.field = field
    return problem


def setup_error(name: str, problems: list[str]) -> ApiError:
    """400 listing every problem of a declaration, and the fields at fault where a problem
    has one (see :func:`at`)."""
    lines = "; ".join(problems)
    fields = list(dict.fromkeys(p.field for p in problems if isinstance(p, Problem))) or None
    return ApiError(400, f"formation {name!r} is not valid ({len(problems)} problem(s)): {lines}", problems=problems,
                    fields=fields)


def assemble(
    decl: FormationDecl, registry: FunctionRegistry, agents: Mapping[str, Agent], formations: Mapping[str, Formation]
) -> Formation:
    """The formation ``decl`` declares, unvalidated: ``decl`` must have no
    :func:`declaration_problems` (its functions, agents and nested formations exist).
    :func:`~wingman_actors.server._nesting.build_nested` checks, builds and validates."""
    graph = nx.DiGraph()
    for n in decl.nodes:
        attrs: dict[str, Any] = {"kind": n.kind, **n.policy_values()}
        if "retry_on" in attrs:
            attrs["retry_on"] = tuple(exception_class(name) for name in _retry_on_names(attrs["retry_on"]))
        if n.formation_id is not None:
            attrs["formation"] = formations[n.formation_id]
        elif n.kind in ("function", "map"):
            attrs["fn"] = registry.functions[n.function or ""]
        else:
            attrs["agent"] = agents[n.agent_id or ""]
            if n.prompt is not None:
                attrs["prompt"] = n.prompt
        if n.kind in ("fleet", "map"):
            attrs["max_workers"] = n.max_workers or 0
        graph.add_node(n.name, **attrs)
    for e in decl.edges:
        attrs = {} if e.condition is None else {"when": registry.predicates[e.condition]}
        if e.otherwise:
            attrs["otherwise"] = True
        if e.on_error:
            attrs["on_error"] = True
        graph.add_edge(e.source, e.to, **attrs)
    return Formation(decl.name, graph)
