"""Forking a journalled run (``Formation.fork``): a new run that reuses the journal of
another up to one node visit, replaces that visit's output (or runs it again with another
input), and continues from there. The original run is not touched.

The fork is written through the store's public calls: ``begin_run`` (the original's input
and source), then the original's journal entries from before the visit, in their order
(visits, fleet items, steps, skips, interrupts and their answers, inputs given by an
earlier fork; the visit's own steps and everything journalled after it are left out)
with their recorded times (a ``RunStore``'s ``record_entries``; another store's
``record_*`` calls, timed now), then the replaced output; then the new run is resumed, so
the journalled visits are not executed again.

``input=`` is journalled as the visit's input (``RunStore.record_input``, an ``"input"``
entry): when the resumed run reaches that visit (its predecessors' journalled visits
replayed, a join's included), the node runs with it instead of what they deliver, on
every resume until the visit is journalled. At the first visit of the formation's only
source it is the new run's input instead. It is checked against the node's parameter
types first (a function or map node's annotations), so a bad one is refused before
anything is written; so is an ``output=`` that does not fit the node's output type.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from ..errors import FormationRuntimeError, WingmanError
from ..store import FormationMismatchError, FormationShape, JournalEntry, JournalStore, RunJournal
from ._durable import StoreArg, open_store
from ._typecheck import adapter_for, inspect_callable, type_name

if TYPE_CHECKING:
    from ._graph import Formation
    from ._options import RunOptions
    from ._plan import NodeSpec, Plan

__all__ = ["UNSET", "ForkPointError", "begin_fork", "fork", "unknown_fork_node"]

UNSET: Any = ...
"""No ``output=`` / ``input=`` given (``Formation.fork``'s default)."""


class ForkPointError(WingmanError, ValueError):
    """A fork's ``at`` names no visit to fork at (the HTTP server answers it as a 400 on ``at``).
    Also a ``ValueError``, as ``Formation.fork`` documents."""


def _target(formation: Formation, at: Any) -> tuple[str, int]:
    pair = (at, 1) if isinstance(at, str) else tuple(at) if isinstance(at, tuple | list) else ()
    node, visit = pair if len(pair) == 2 else (None, None)  # a (node, visit) of another length is refused below
    if not isinstance(node, str) or isinstance(visit, bool) or not isinstance(visit, int) or visit < 1:
        raise ForkPointError(f"fork: at must be a node name, or (node, visit) with a visit number >= 1, got {at!r}")
    if node not in formation.graph:
        raise ForkPointError(f"fork: {unknown_fork_node(formation, node)}")
    return node, visit


def unknown_fork_node(formation: Formation, node: str) -> str:
    """Why ``node`` is no fork point of ``formation``, and what to fork at instead: a path
    into a nested formation or map (as events and traces name inner nodes) names the node
    that holds it."""
    outer = node.split("/", 1)[0]
    if "/" in node and formation.graph.nodes.get(outer, {}).get("formation") is not None:
        return (f"{node!r} is inside the nested formation {outer!r}, and a fork names formation "
                f"{formation.name!r}'s own nodes: fork at the nested node as a whole (at={outer!r}, with "
                f"output= for its new output, or input= to run it again)")
    return (f"formation {formation.name!r} has no node {node!r} to fork at; its nodes are "
            f"{', '.join(map(repr, formation.graph.nodes))}")


def _check_visit(journal: RunJournal, node: str, visit: int) -> None:
    """Refuse a visit the run never made: one it journalled (done or skipped) may be forked
    at, and so may a node's next visit in a run that did not succeed (the fork's resume
    makes it: the node that failed, or one the run never reached). Any other would be
    journalled where no visit of the new run reads it."""
    made = {e.visit for e in journal.entries if e.node == node and e.kind in ("visit", "skip") and e.item is None}
    if visit in made or (visit == max(made, default=0) + 1 and journal.run.status != "succeeded"):
        return
    raise ForkPointError(
        f"fork: run {journal.run.id!r} never made visit {visit} of node {node!r} (it made {len(made) or 'none'}); "
        f"fork at a visit its history lists (store.history(run_id), or `wingman-actors runs history RUN_ID`)")


def _cut(journal: RunJournal, node: str, visit: int) -> list[JournalEntry]:
    """The entries a fork at ``(node, visit)`` reuses (see the module docs)."""
    entries = journal.entries
    end = next((i for i, e in enumerate(entries) if (e.node, e.visit) == (node, visit) and e.kind in ("visit", "skip")),
               len(entries))
    return [e for e in entries[:end] if (e.node, e.visit) != (node, visit)]


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the value'}: {e['msg']}" for e in exc.errors()[:3])


def _fits(node: str, param: str | None, tp: Any, adapter: TypeAdapter[Any] | None, value: Any,
          item: int | None = None) -> None:
    if adapter is None:
        return
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        what = "input=" if item is None else f"item {item} of input="
        raise ValueError(f"fork: {what} for node {node!r} does not fit its parameter {param!r} of type "
                         f"{type_name(tp)}: {_problems(exc)}; give a value of that type") from None


def _fits_inner(spec: NodeSpec, sub: Plan, value: Any, item: int | None = None) -> None:
    """Refuse a value that a source of ``spec``'s inner formation would refuse (the types
    validation checks across the boundary)."""
    for path, tp in sub.accepts:
        adapter = adapter_for(tp)
        if adapter is None:
            continue
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            what = "input=" if item is None else f"item {item} of input="
            raise ValueError(f"fork: {what} for {spec.kind} node {spec.name!r} does not fit the source "
                             f"'{spec.name}/{path}' of its formation {sub.name!r}, which takes {type_name(tp)}: "
                             f"{_problems(exc)}; give a value of that type") from None


def _check_input(spec: NodeSpec, value: Any) -> None:
    """Refuse an ``input=`` that ``spec``'s node would refuse at its visit (a function or
    map node's parameter types, a kwargs join's parameter names, the types a nested
    formation's sources take, each item's for a map over a formation; fleets and agents
    check their input when they run)."""
    node = spec.name
    if spec.kind in ("fleet", "map") and not isinstance(value, list | tuple):
        raise ValueError(f"fork: input= for {spec.kind} node {node!r} is the list of its items "
                         f"({'one session' if spec.kind == 'fleet' else 'one call'} per item), got "
                         f"{type(value).__name__}; give a list")
    if spec.subplan is not None:
        if spec.kind != "map":
            _fits_inner(spec, spec.subplan, value)
        for index, item in enumerate(value if spec.kind == "map" else []):
            _fits_inner(spec, spec.subplan, item, index)
        return
    if spec.kind not in ("function", "map"):
        return
    info = inspect_callable(spec.fn)
    if spec.input_mode != "kwargs":
        first = next(iter(info.params(inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                      inspect.Parameter.VAR_POSITIONAL)), None)
        param, tp = None if first is None else first.name, info.annotation(first)
        if spec.kind != "map":
            _fits(node, param, tp, spec.input_adapter, value)
        for index, item in enumerate(value if spec.kind == "map" else []):
            _fits(node, param, tp, spec.input_adapter, item, index)
        return
    preds = spec.forward_preds
    shape = "{" + ", ".join(f"{p!r}: ..." for p in preds) + "}"
    if not isinstance(value, Mapping):
        raise ValueError(f"fork: node {node!r} takes its predecessors' outputs as keyword arguments: give input= as "
                         f"a dict {shape}, got {type(value).__name__}")
    unknown = [k for k in value if k not in preds]
    if unknown:
        raise ValueError(f"fork: input= for node {node!r} names {', '.join(map(repr, unknown))}, none of its "
                         f"predecessors: give a dict {shape}")
    by_name = {p.name: p for p in info.params()}
    board = "" if spec.blackboard == "none" else "blackboard"  # (given by the runtime, not an input)
    missing = [p.name for p in info.params(inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
               if p.default is p.empty and p.name != board and p.name not in value]
    if missing:
        raise ValueError(f"fork: input= for node {node!r} gives no value for its parameter(s) "
                         f"{', '.join(map(repr, missing))}: give a dict {shape}")
    for key, adapter in spec.kwarg_adapters.items():
        if key in value:
            _fits(node, key, info.annotation(by_name.get(key)), adapter, value[key])


def _check_output(formation: Formation, node: str, value: Any) -> Any:
    """Refuse an ``output=`` that does not fit ``node``'s declared output type (a function's
    return annotation, a map's list of them, an agent's output schema, a nested formation's
    output): its successors would refuse it, after the fork was written. An unknown type
    takes any value.

    Returns:
        The value as that type (a dict given for a model output becomes the model, as the
        node's own visit would have given it), which the fork journals and delivers.
    """
    tp = formation.validate().nodes[node].output_type
    adapter = adapter_for(tp)
    if adapter is None:
        return value
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise ValueError(f"fork: output= for node {node!r} does not fit its output type {type_name(tp)}: "
                         f"{_problems(exc)}; give a value of that type") from None


def _check_options(timeout: float | timedelta | None, options: RunOptions | None) -> None:
    """Refuse the run options the fork's resume would refuse, before the fork is written
    (``options`` may set what ``Formation.resume`` takes but the store and the run id,
    which the fork gives)."""
    from ._options import _DEFAULTS, merge_options

    taken = {name: default for name, default in _DEFAULTS.items() if name not in ("store", "run_id")}
    merge_options(options, "Formation.fork()", **{**taken, "timeout": timeout})


def _given_input(formation: Formation, node: str, visit: int, value: Any) -> bool:
    """Check ``input=`` for ``node``'s visit (see :func:`_check_input`); True when it is
    the new run's input (the first visit of the formation's only source)."""
    plan = formation.validate()
    _check_input(plan.nodes[node], value)
    return plan.sources == (node,) and visit == 1


def _write(store: JournalStore, run_id: str, entries: list[JournalEntry]) -> None:
    for e in entries:
        if e.kind == "visit":
            store.record_visit(run_id, e.node, e.visit, e.value)
        elif e.kind == "item" and e.item is not None:
            store.record_item(run_id, e.node, e.visit, e.item, e.value)
        elif e.kind == "progress":
            store.record_progress(run_id, e.node, e.visit, e.value, item=e.item)
        elif e.kind == "skip":
            store.record_skip(run_id, e.node, e.visit, str(e.value))
        elif e.kind == "interrupt":
            store.record_interrupt(run_id, e.node, e.visit, e.value, item=e.item)
        elif e.kind == "answer":
            store.answer(run_id, e.value)  # (after the interrupt above: writes apply in call order)
        elif e.kind == "withdrawn":
            store.withdraw_interrupt(run_id, e.node, e.visit, str(e.value), item=e.item)
        elif e.kind == "input":
            _input_recorder(store)(run_id, e.node, e.visit, e.value)


def _input_recorder(store: JournalStore) -> Callable[[str, str, int, Any], None]:
    record: Callable[[str, str, int, Any], None] | None = getattr(store, "record_input", None)  # a RunStore's
    if record is None:
        raise ValueError(f"fork: input= needs a store that journals a visit's input (RunStore.record_input); "
                         f"{type(store).__name__} has none: give output= instead")
    return record


def begin_fork(formation: Formation, journal_store: JournalStore, run_id: str, *, at: str | tuple[str, int],
               output: Any = UNSET, input: Any = UNSET, new_id: str | None = None) -> str:
    """Write the fork of ``run_id`` (see :func:`fork`) into ``journal_store`` as a new run,
    ``interrupted`` and ready to be resumed (``new_id``: its id, default a fresh one);
    return its id. :func:`fork` resumes it; the HTTP server resumes it as its own runs.

    Raises:
        ValueError, UnknownRunError, FormationMismatchError: as :func:`fork`.
    """
    if (output is UNSET) == (input is UNSET):
        raise ValueError("fork: give exactly one of output= (the visit's new output) or input= (run the visit "
                         "again with this input)")
    node, visit = _target(formation, at)
    shape = FormationShape.of(formation.graph)
    journal = journal_store.load(run_id)
    if journal.run.parent is not None:
        raise ValueError(f"fork: run {run_id!r} is an inner run of run {journal.run.parent!r}; fork that run")
    if journal.shape.fingerprint != shape.fingerprint:
        raise FormationMismatchError(formation.name, run_id, journal.shape.diff(shape) or ["the fingerprints differ"])
    _check_visit(journal, node, visit)
    if output is not UNSET:
        output = _check_output(formation, node, output)
    kept = _cut(journal, node, visit)
    as_run_input = input is not UNSET and _given_input(formation, node, visit, input)
    run_input = input if as_run_input else journal.run.input
    record_input = _input_recorder(journal_store) if input is not UNSET and not as_run_input else None
    # the file the launcher loaded the formation from (`fork --formation FILE`), else the original's
    source = getattr(formation, "source", None) or journal.run.source
    new_id = journal_store.begin_run(formation.name, shape, run_input, run_id=new_id, source=source)
    copy = getattr(journal_store, "record_entries", None)  # a RunStore keeps their times
    if copy is not None:
        copy(new_id, kept)
    else:
        _write(journal_store, new_id, kept)
    if output is not UNSET:
        journal_store.record_visit(new_id, node, visit, output)
    elif record_input is not None:
        record_input(new_id, node, visit, input)
    journal_store.set_status(new_id, "interrupted", wait=True)  # ready to be resumed
    journal_store.flush(new_id)
    return new_id


def fork(formation: Formation, run_id: str, *, store: StoreArg, at: str | tuple[str, int], output: Any = UNSET,
         input: Any = UNSET, timeout: float | timedelta | None = None, options: RunOptions | None = None) -> str:
    """``Formation.fork``: a new run from the journal of ``run_id`` before node ``at``'s visit
    (a node name: its first visit; or ``(node, visit)``), with that visit's output replaced
    by ``output``, or the visit run again with ``input`` (in place of what its predecessors
    deliver; see the module docs). The journalled
    visits before it are not executed again; the rest runs to the end (``timeout`` and
    ``options`` as for ``Formation.resume``). The original run is unchanged.

    Returns:
        The new run's id once it ended (succeeded, failed or suspended: its status and
        error are in the store).

    Raises:
        ValueError: neither or both of ``output`` and ``input``, an unknown node, a visit
            the run never made (:class:`ForkPointError`, as an unknown node), an
            ``input`` that node cannot be given, or an ``output`` that does not fit its
            output type.
        wingman_actors.store.UnknownRunError: no such run.
        wingman_actors.store.FormationMismatchError: the formation differs from the run's.
    """
    if (output is UNSET) == (input is UNSET):
        raise ValueError("fork: give exactly one of output= (the visit's new output) or input= (run the visit "
                         "again with this input)")
    _target(formation, at)  # a bad `at` is refused before the store is opened
    _check_options(timeout, options)
    journal_store, owned = open_store(store, run_id=run_id)
    try:
        new_id = begin_fork(formation, journal_store, run_id, at=at, output=output, input=input)
        try:
            formation.resume(new_id, store=journal_store, timeout=timeout, options=options)
        except FormationRuntimeError:
            pass  # the new run failed: its status and error are in the store
    finally:
        if owned:
            journal_store.close()
    return new_id
