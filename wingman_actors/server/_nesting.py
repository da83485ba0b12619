"""Formations nested by id: a ``{"kind": "formation", "formation_id": ...}`` node runs a
stored formation as one node, a ``{"kind": "map", "formation_id": ...}`` node runs it once
per item.

A declaration holds the id, not a copy: the nested formations' declarations are loaded from
the store (recursively) each time a formation is validated or run, so a run uses their
current declarations. A formation may not contain itself, directly or through other stored
formations (``a → b → a``): that is refused when a formation is created or replaced, and
again when one is run (two servers sharing a database could each store one half of a loop).
A formation that another one nests cannot be deleted (:func:`nested_in`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from graphlib import TopologicalSorter

from ..agents._agent import Agent
from ..errors import FormationSetupError
from ..formation import Formation
from ._declaration import FormationDecl, assemble, declaration_problems, setup_error
from ._errors import ApiError
from ._functions import FunctionRegistry
from ._limits import MAX_NESTING
from ._schemas import FormationOut
from ._store import Store

__all__ = ["agent_ids", "build_nested", "declaration_of", "depth_problems", "load_nested", "loop_problems", "nested_in",
           "nesting_users"]


def declaration_of(record: FormationOut) -> FormationDecl:
    """A stored formation's declaration."""
    return FormationDecl.model_validate({"name": record.name, "nodes": record.nodes, "edges": record.edges})


def _ids(decl: FormationDecl) -> list[str]:
    return list(dict.fromkeys(n.formation_id for n in decl.nodes if n.formation_id is not None))


def load_nested(
    store: Store, decl: FormationDecl, own_id: str | None = None, replacing: Mapping[str, FormationDecl] | None = None,
) -> dict[str, FormationDecl]:
    """The declarations of every stored formation ``decl`` nests, directly or through others,
    by id; ids no stored formation has are left out. With ``own_id`` (``decl`` replaces that
    formation, or is its stored declaration) ``decl`` stands for it, so a loop through it shows;
    ``replacing`` stands for stored declarations by id (a replacement not yet stored)."""
    found: dict[str, FormationDecl] = {} if own_id is None else {own_id: decl}
    missing: set[str] = set()
    todo = _ids(decl)
    while todo:
        fid = todo.pop()
        if fid in found or fid in missing:
            continue
        if replacing is not None and fid in replacing:
            found[fid] = inner = replacing[fid]
            todo += _ids(inner)
            continue
        try:
            found[fid] = inner = declaration_of(store.get_formation(fid))
        except ApiError as exc:
            if exc.status != 404:
                raise
            missing.add(fid)
            continue
        todo += _ids(inner)
    return found


def _loop(root: str, start: str, refs: Mapping[str, list[str]]) -> list[str] | None:
    """The first loop met going down from ``root`` through ``start``: the ids from its first
    repeated one to that one again; None when there is none."""
    path, done = [root], set()
    stack: list[Iterator[str]] = [iter([start])]
    while stack:
        fid = next(stack[-1], None)
        if fid is None:
            stack.pop()
            done.add(path.pop())
        elif fid in path:
            return [*path[path.index(fid):], fid]
        elif fid not in done:
            path.append(fid)
            stack.append(iter(refs.get(fid, ())))
    return None


def loop_problems(decl: FormationDecl, nested: Mapping[str, FormationDecl], own_id: str | None = None) -> list[str]:
    """The nodes of ``decl`` that would make a formation contain itself: ``decl`` (as formation
    ``own_id``, when it has an id) or one of the formations it nests.

    Args:
        decl: the declaration.
        nested: what :func:`load_nested` found for it.
        own_id: the id ``decl`` is stored (or is to be stored) under; None for a new one.
    """
    root = own_id or ""  # no formation has the id ""
    refs = {fid: _ids(d) for fid, d in nested.items()}
    refs[root] = _ids(decl)

    def named(fid: str) -> str:
        return f"{decl.name!r}" if fid == root and not own_id else f"{nested[fid].name!r} ({fid})"

    problems = []
    for i, n in enumerate(decl.nodes):
        if n.formation_id is None or n.formation_id not in nested:
            continue
        loop = _loop(root, n.formation_id, refs)
        if loop is None:
            continue
        where, path = f"nodes[{i}] ({n.name!r})", " → ".join(named(fid) for fid in loop)
        if loop[0] == root:
            problems.append(f"{where}: nesting formation {named(n.formation_id)} makes formation {named(root)} "
                            f"contain itself ({path}); a formation cannot contain itself, directly or through "
                            "other stored formations: nest a different one")
        else:
            problems.append(f"{where}: formation {named(n.formation_id)} contains itself ({path}); fix one of "
                            "those with PUT /formations/{id}, or nest a different formation")
    return problems


def depth_problems(decl: FormationDecl, nested: Mapping[str, FormationDecl]) -> list[str]:
    """The nodes of ``decl`` that nest formations more than :data:`~.limits.MAX_NESTING`
    deep. ``nested`` (what :func:`load_nested` found) must hold no loop."""
    refs = {fid: [r for r in _ids(d) if r in nested] for fid, d in nested.items()}
    deepest: dict[str, list[str]] = {}  # by id: its longest chain of nested ids, itself first
    for fid in TopologicalSorter(refs).static_order():  # the nested before those nesting them
        below = max((deepest[r] for r in refs[fid]), key=len, default=[])
        deepest[fid] = [fid, *below]
    problems = []
    for i, n in enumerate(decl.nodes):
        chain = deepest.get(n.formation_id or "")
        if chain is not None and len(chain) > MAX_NESTING:
            path = " → ".join(repr(nested[fid].name) for fid in chain[:4])
            problems.append(f"nodes[{i}] ({n.name!r}): nests formations {len(chain)} levels deep ({path} → ...), "
                            f"more than the {MAX_NESTING} the server allows; flatten some of them")
    return problems


def build_nested(
    decl: FormationDecl, registry: FunctionRegistry, agents: Mapping[str, Agent],
    nested: Mapping[str, FormationDecl], own_id: str | None = None,
) -> Formation:
    """The formation ``decl`` declares with the formations it nests built from their stored
    declarations (each once, however often it is nested), validated.

    Args:
        decl: the declaration.
        registry: where function and predicate names are looked up.
        agents: the agents of ``decl`` and of every formation it nests, by id.
        nested: what :func:`load_nested` found for ``decl``.
        own_id: the id ``decl`` is stored (or is to be stored) under; None for a new one.

    Raises:
        ApiError: 400 listing every problem: ``decl``'s own, loops, those of the formations
            it nests (each prefixed with the node that nests it), and the formation
            validator's (types across the boundaries included).
    """
    loops = loop_problems(decl, nested, own_id)
    problems = declaration_problems(decl, registry, agents, nested) + loops
    built: dict[str, Formation | list[str]] = {}
    if not loops:  # no loop below decl either, so the recursion ends
        deep = depth_problems(decl, nested)
        problems += deep or _inner_problems(decl, registry, agents, nested, built)
    if problems:
        raise setup_error(decl.name, problems)
    try:  # Formation() itself refuses some names (one of whitespace only, as Python's str.isspace sees it)
        formation = assemble(decl, registry, agents, _formations(built))
        formation.validate()
    except FormationSetupError as exc:
        raise setup_error(decl.name, exc.problems) from None
    return formation


def _formations(built: Mapping[str, Formation | list[str]]) -> dict[str, Formation]:
    return {fid: f for fid, f in built.items() if isinstance(f, Formation)}


def _inner_problems(
    decl: FormationDecl, registry: FunctionRegistry, agents: Mapping[str, Agent],
    nested: Mapping[str, FormationDecl], built: dict[str, Formation | list[str]],
) -> list[str]:
    """Builds the formations ``decl`` nests into ``built`` (by id: the formation, or its
    problems); the problems, each prefixed with the node of ``decl`` that nests it."""
    problems = []
    for i, n in enumerate(decl.nodes):
        fid = n.formation_id
        if fid is None or fid not in nested:
            continue
        if fid not in built:
            inner = nested[fid]
            found = declaration_problems(inner, registry, agents, nested)
            found += _inner_problems(inner, registry, agents, nested, built)
            built[fid] = found or assemble(inner, registry, agents, _formations(built))
        result = built[fid]
        if isinstance(result, list):
            problems += [f"nodes[{i}] ({n.name!r}): formation {nested[fid].name!r} ({fid}): {p}" for p in result]
    return problems


def agent_ids(decl: FormationDecl, nested: Mapping[str, FormationDecl]) -> dict[str, list[str]]:
    """The agents ``decl`` and the formations it nests name: by id, the names of the
    formations that name each."""
    found: dict[str, list[str]] = {}
    for d in (decl, *nested.values()):
        for n in d.nodes:
            if n.agent_id is not None and d.name not in found.setdefault(n.agent_id, []):
                found[n.agent_id].append(d.name)
    return found


def nested_in(store: Store, id: str) -> list[FormationOut]:
    """The stored formations that nest formation ``id`` directly."""
    return [f for f in store.list_formations()
            if f.id != id and any(n.get("formation_id") == id for n in f.nodes)]


def nesting_users(store: Store, id: str) -> list[FormationOut]:
    """The stored formations that nest formation ``id``, directly or through others."""
    formations = store.list_formations()
    users: dict[str, FormationOut] = {}
    todo = [id]
    while todo:
        target = todo.pop()
        for f in formations:
            if f.id != id and f.id not in users and any(n.get("formation_id") == target for n in f.nodes):
                users[f.id] = f
                todo.append(f.id)
    return list(users.values())

