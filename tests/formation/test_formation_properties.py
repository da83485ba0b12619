"""A differential test of the formation language: random formations of function nodes
(fan-out, fan-in joins by dict and by keyword, routes by predicate and by type,
``otherwise``, ``NoRouteError``, ``on_error="skip"``, error edges with ``NodeFailure``,
self-loops and agent-style loops bounded by ``max_visits``, whose body may end the loop
itself: raising with ``on_error="skip"`` or ``"fail"`` or into a handler, or leaving by
an edge of its own; often with a join after the loop) and of formation nodes
(``add_formation``: a small formation, maybe raising or looping, as a node anywhere,
a loop's body included, its inner traces compared by path) run by the library and by a
small sequential reference interpreter written from DESIGN's rules ("Data flow in a
formation", "Supervision", "The formation language"), not from the library's code. Both
must agree on sink outputs, node statuses and every visit's outputs, or fail with the same
kind of error at a node the reference says can fail first (branches run concurrently, so
any failure not downstream of another may come first).

A loop is one step of the reference (``run_loop``): what is after it hears of it once,
when it ends, as joins are per visit and nothing is lost. The looping node's exit edges
carry its last output if that visit left through them, else they count as not taken; a
body's edge out (``otherwise``, or the complement of its back edge's condition) and its
error edge carry the value of the visit that ended the loop, else count as not taken.

Where DESIGN leaves a case open, the reference follows the library, saying so: a node
whose only out-edges are error edges is a sink; a node's status is ``succeeded`` if any
visit succeeded, though a later one was skipped, but ``failed`` if its last visit failed
into an error edge (DESIGN: "its trace says failed"). A node with ``on_error="skip"``
whose output finds no route fails the run with ``NoRouteError`` like any other:
``on_error`` decides what a node that failed does, and this one finished.

``WINGMAN_FORMATION_EXAMPLES=2000`` runs a longer hunt (the default, 300, takes seconds)."""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

from tests.support.formation_reference import Cond, NodeSpec, Outcome, Spec, build, reference
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation import NestedRunError

EXAMPLES = int(os.environ.get("WINGMAN_FORMATION_EXAMPLES", "300"))  # a longer hunt: 2000
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ---------------------------------------------------------------------------------------
# Strategies.


@st.composite
def formations(draw: st.DrawFn) -> Spec:
    n = draw(st.integers(5, 10))
    nodes = tuple(
        NodeSpec(
            mult=draw(st.integers(1, 50)),
            add=draw(st.integers(0, 50)),
            fail_mod=draw(st.sampled_from([None, None, None, 3, 5, 7])),
            as_str=draw(st.booleans()),
            on_error=draw(st.sampled_from(["fail", "fail", "skip"])),
            kwargs=draw(st.booleans()),
        )
        for _ in range(n)
    )
    # some nodes are formations (add_formation): a small formation runs as the node
    nodes = tuple(NodeSpec(**{**vars(nd), "inner": draw(inner_formations(can_fail=True)), "kwargs": False})
                  if not draw(st.integers(0, 5)) else nd for nd in nodes)
    edges: list[tuple[int, int, Cond]] = []
    handled: set[int] = set()
    for v in range(1, n):
        if draw(st.integers(0, 9)) == 0:
            continue  # another source
        candidates = [u for u in range(v) if u not in handled]
        if candidates and draw(st.integers(0, 6)) == 0:  # an error handler of one node
            u = draw(st.sampled_from(candidates))
            handled.add(u)
            edges.append((u, v, Cond("error")))
            continue
        preds = draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=3, unique=True))
        for u in sorted(preds):
            edges.append((u, v, draw(conditions())))
    # a formation node with several sinks outputs a dict, which validation refuses to route
    # by type (the edge could never fire): route it by value instead
    edges = [(u, v, Cond("mod", 2, 0) if c.kind == "type" and dict_output(nodes[u]) else c) for u, v, c in edges]
    # at most one otherwise edge per node, and only beside a condition
    fixed: list[tuple[int, int, Cond]] = []
    for u in range(n):
        outs = [(a, b, c) for a, b, c in edges if a == u]
        has_when = any(c.kind in ("mod", "type") for _, _, c in outs)
        seen_otherwise = False
        for a, b, c in outs:
            if c.kind == "otherwise" and (seen_otherwise or not has_when):
                c = Cond("plain")
            seen_otherwise |= c.kind == "otherwise"
            fixed.append((a, b, c))
    # on_error="skip" beside an error edge is a setup error (the policy would never apply);
    # a node with an error edge fails often, so its handler has work
    nodes = tuple(NodeSpec(**{**vars(nd), "on_error": "fail", "fail_mod": nd.fail_mod or 2})
                  if i in handled else nd for i, nd in enumerate(nodes))
    # self-loops (back edges) on nodes with forward successors: the loop runs while its
    # condition holds, and its forward edges take the last visit's output only
    loopable = [u for u in range(n) if u not in handled and any(a == u for a, _, _ in fixed)]
    looped: set[int] = set()
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):  # most formations have a loop
        k = draw(st.integers(2, 4))
        # a loop with a body node needs a node with a forward predecessor (a cycle through a
        # source and another node is refused: docs/formations.md, Validation)
        fed = [u for u in loopable if u not in looped and any(v == u for _, v, _ in fixed)]
        candidates = fed if fed and draw(st.integers(0, 3)) else [u for u in loopable if u not in looped]
        if not candidates:
            break
        u = draw(st.sampled_from(candidates))
        looped.add(u)
        fixed = [(a, b, Cond("exit", k) if a == u else c) for a, b, c in fixed]
        if candidates is not fed:  # a self-loop
            fixed.append((u, u, Cond("loop", k)))
        else:  # u -> body while the condition holds, body -> u (a back edge), as an agent's tool loop
            nodes, edges = loop_body(draw, u, k, nodes, [v for v in range(n) if v not in looped])
            fixed += edges
        nodes = tuple(NodeSpec(**{**vars(nd), "on_error": "fail", "fail_mod": None, "kwargs": False,
                                  "max_visits": draw(st.integers(1, 4)), "inner": None}) if i == u else nd
                      for i, nd in enumerate(nodes))
    return Spec(nodes, tuple(sorted(fixed, key=lambda e: (e[1], e[0]))))


def loop_body(draw: st.DrawFn, u: int, k: int, nodes: tuple[NodeSpec, ...],
              others: list[int]) -> tuple[tuple[NodeSpec, ...], list[tuple[int, int, Cond]]]:
    """A body node for ``u``'s loop (appended to ``nodes``, with its edges), which may end
    the loop itself: raising with ``on_error="skip"``, with ``"fail"`` or into an error
    edge to a handler, or turning back only while a condition holds and otherwise
    leaving by an edge of its own; and often a join after the loop, fed by ``u``'s exit,
    what leaves the body and one of ``others``."""
    def plain(kwargs: bool = False) -> NodeSpec:
        return NodeSpec(mult=draw(st.integers(1, 50)), add=draw(st.integers(0, 50)), fail_mod=None,
                        as_str=draw(st.booleans()), on_error="fail", kwargs=kwargs)

    body = len(nodes)
    ends = draw(st.sampled_from(["back", "skip", "fail", "handler", "handler"]))
    turns = draw(st.integers(2, 4)) if draw(st.booleans()) else 0  # 0: it always turns back
    fails = [m for m in (2, 3, 5) if k % m]  # it gets outputs of u not divisible by k: one of them may fail it
    nodes += (NodeSpec(**{**vars(plain()), "fail_mod": None if ends == "back" else draw(st.sampled_from(fails)),
                          "on_error": "skip" if ends == "skip" else "fail",
                          # a formation as the body: an inner run per visit, which may fail it
                          "inner": draw(inner_formations(can_fail=ends != "back")) if draw(st.booleans())
                          else None}),)
    edges = [(u, body, Cond("loop", k)), (body, u, Cond("back", turns))]
    after = [u]
    if ends == "handler":
        nodes += (plain(),)
        edges.append((body, len(nodes) - 1, Cond("error")))
        after.append(len(nodes) - 1)
    if turns:
        nodes += (plain(),)
        edges.append((body, len(nodes) - 1, draw(st.sampled_from([Cond("otherwise"), Cond("exit", turns)]))))
        after.append(len(nodes) - 1)
    if draw(st.integers(0, 3)):  # a join after the loop, by dict or by keyword
        join = len(nodes)
        nodes += (plain(kwargs=draw(st.booleans())),)
        feeds = [u, *(v for v in after[1:] if draw(st.booleans())), draw(st.sampled_from(others))]
        edges += [(v, join, Cond("exit", k) if v == u else Cond("plain")) for v in feeds]
    return nodes, edges


def dict_output(node: NodeSpec) -> bool:
    """Whether ``node`` is a formation node whose inner formation has several sinks."""
    inner = node.inner
    return inner is not None and sum(not inner.out_edges(i) for i in range(len(inner.nodes))) > 1


@st.composite
def inner_formations(draw: st.DrawFn, can_fail: bool) -> Spec:
    """A formation run as a node: 1 to 4 function nodes joined by plain edges (one source,
    one or several sinks), maybe raising (``can_fail``: the inner run fails, and so does
    the node) and maybe with a self-loop bounded by ``max_visits``; no node of it is ever
    skipped, so every sink has an output."""
    n = draw(st.integers(1, 4))
    nodes = tuple(
        NodeSpec(mult=draw(st.integers(1, 50)), add=draw(st.integers(0, 50)),
                 fail_mod=draw(st.sampled_from([None, None, 3, 5, 7])) if can_fail else None,
                 as_str=draw(st.booleans()), on_error="fail", kwargs=draw(st.booleans()))
        for _ in range(n)
    )
    edges = [(u, v, Cond("plain")) for v in range(1, n)
             for u in draw(st.lists(st.integers(0, v - 1), min_size=1, max_size=2, unique=True))]
    fed_on = [u for u in range(n) if any(a == u for a, _, _ in edges)]
    if fed_on and can_fail and draw(st.integers(0, 2)) == 0:  # a self-loop, its forward edges its exits
        u, k = draw(st.sampled_from(fed_on)), draw(st.integers(2, 4))
        edges = [(a, b, Cond("exit", k) if a == u else c) for a, b, c in edges] + [(u, u, Cond("loop", k))]
        nodes = tuple(NodeSpec(**{**vars(nd), "fail_mod": None, "kwargs": False, "max_visits": draw(st.integers(1, 4))})
                      if i == u else nd for i, nd in enumerate(nodes))
    return Spec(nodes, tuple(sorted(edges, key=lambda e: (e[1], e[0]))))


def conditions() -> st.SearchStrategy[Cond]:
    return st.one_of(
        st.just(Cond("plain")), st.just(Cond("plain")), st.just(Cond("plain")),
        st.builds(lambda k, r: Cond("mod", k, r % k), st.integers(2, 3), st.integers(0, 2)),
        st.sampled_from([Cond("type", typ=int), Cond("type", typ=str)]),
        st.just(Cond("otherwise")),
    )


inputs = st.integers(0, 10_000)


def loop_ended_by_its_body(handled: bool, inner_body: bool = False) -> Spec:
    """A formation whose loop's body often ends it (shown to every run of the tests, and
    on Ray): n1 loops through n2 while its output % 4 != 0; n2 fails on multiples of 3,
    into a handler n3 (``handled``), else skipped, and turns back only while its output
    % 5 != 0, else leaves to n3; n4 joins n1's exit, n3 and n0. With ``inner_body``, n2 is
    a formation node (an inner run per visit) whose first node fails on multiples of 3."""
    def node(mult: int, add: int, **kw: Any) -> NodeSpec:
        return NodeSpec(**{"mult": mult, "add": add, "fail_mod": None, "as_str": False, "on_error": "fail",
                           "kwargs": False, **kw})

    body = node(2, 1, fail_mod=3, on_error="fail" if handled else "skip")
    if inner_body:
        body = node(0, 0, on_error=body.on_error,
                    inner=Spec((node(2, 1, fail_mod=3), node(1, 2, as_str=True)), ((0, 1, Cond("plain")),)))
    out = [(2, 3, Cond("error")), (2, 1, Cond("back"))] if handled else [(2, 3, Cond("otherwise")),
                                                                         (2, 1, Cond("back", 5))]
    return Spec((node(1, 0), node(1, 1, max_visits=4), body, node(3, 2), node(5, 1, kwargs=handled)),
                ((0, 1, Cond("plain")), (1, 2, Cond("loop", 4)), *out, (1, 4, Cond("exit", 4)),
                 (3, 4, Cond("plain")), (0, 4, Cond("plain"))))

# ---------------------------------------------------------------------------------------
# Comparing a run with the reference.


def check_result(spec: Spec, ref: Outcome, get: Callable[[], Any]) -> None:
    """``get`` returns the library's result or raises its error."""
    try:
        result = get()
    except FormationRuntimeError as err:
        assert ref.failures, f"the library failed ({err!r}) where the reference succeeds"
        assert err.node in ref.failures, f"{err.node!r} failed; the reference says {sorted(ref.failures)}"
        expected = ref.failures[err.node]
        if expected == "no route":
            assert isinstance(err, NoRouteError), repr(err)
        elif expected == "raised" and err.node in ref.inner:  # a formation node: its inner run failed
            cause = err.__cause__
            assert isinstance(cause, NestedRunError), repr(err)
            assert cause.inner.node in ref.inner[err.node].failures, (cause.inner.node, ref.inner[err.node].failures)
        elif expected == "raised":
            assert not isinstance(err, NoRouteError) and isinstance(err.__cause__, ValueError), repr(err)
        else:
            assert not isinstance(err, NoRouteError) and "max_visits" in str(err), repr(err)
        for name, value in err.outputs.items():  # a loop cut short keeps the output of a visit it made
            allowed = ref.loop_outputs.get(name, [ref.output.get(name)])
            assert value in allowed, f"kept output of {name}: {value!r}, reference {allowed!r}"
        return
    assert not ref.failures, f"the reference fails at {sorted(ref.failures)}, the library succeeded"
    assert result.outputs == ref.sink_outputs()
    if len(ref.sinks) == 1:
        assert result.output == ref.output.get(ref.sinks[0])
    elif len(ref.sink_outputs()) != 1:  # none, or several sinks produced: no one output
        assert result.output is None
    else:  # one sink produced: the output when the sinks exclude one another (formation/_sinks.py)
        assert result.output in (None, *ref.sink_outputs().values())
    for name, status in ref.status.items():
        trace = result.nodes[name]
        assert trace.status == status, f"{name}: {trace.status} (reference {status})"
        visits = ref.loop_outputs.get(name, [ref.output[name]] if name in ref.output else [])
        assert trace.outputs == visits, name
    for name, inner in ref.inner.items():  # a formation node visited once: its inner traces, by path
        if ref.status[name] != "succeeded" or result.nodes[name].visits != 1:
            continue
        for inner_name, status in inner.status.items():
            trace = result.nodes[f"{name}/{inner_name}"]
            assert trace.status == status, f"{name}/{inner_name}: {trace.status} (reference {status})"
            assert trace.outputs == inner.loop_outputs.get(inner_name, [inner.output[inner_name]]), inner_name


@SETTINGS
@given(spec=formations(), run_input=inputs)
def test_a_run_agrees_with_the_reference_interpreter(spec: Spec, run_input: int) -> None:
    note(spec.describe())
    ref = reference(spec, run_input)
    for failure in set(ref.failures.values()) or {"none"}:  # --hypothesis-show-statistics
        event(f"failure: {failure}")
    event(f"skips: {'skipped' in ref.status.values()}")
    for ending in ref.endings.values():
        event(f"loop ended: {ending}")
    event(f"longest loop: {max(map(len, ref.loop_outputs.values()), default=0)}")
    event(f"a handler ran: {any(c.kind == 'error' and ref.status[spec.name(v)] == 'succeeded' for _, v, c in spec.edges)}")
    event(f"a formation node ran: {bool(ref.inner)}, its inner run failed: {any(i.failures for i in ref.inner.values())}")
    event(f"a loop body ran: {any(spec.name(b) in ref.loop_outputs for _, b, c in spec.edges if c.kind == 'loop')}, a formation: "
          f"{any(nd.inner and spec.name(i) in ref.loop_outputs for i, nd in enumerate(spec.nodes))}")
    check_result(spec, ref, lambda: build(spec).run(run_input, timeout=5))


@settings(SETTINGS, max_examples=EXAMPLES // 3)
@given(spec=formations(), batch=st.lists(inputs, min_size=20, max_size=20))
@example(spec=loop_ended_by_its_body(handled=True), batch=list(range(20)))
@example(spec=loop_ended_by_its_body(handled=False), batch=list(range(20)))
@example(spec=loop_ended_by_its_body(handled=True, inner_body=True), batch=list(range(20)))
@example(spec=loop_ended_by_its_body(handled=False, inner_body=True), batch=list(range(20)))
def test_twenty_runs_submitted_at_once_each_get_their_own_result(spec: Spec, batch: list[int]) -> None:
    # each run's result is compared with the reference, which a lone run agrees with (above)
    note(spec.describe())
    with build(spec).start() as running:
        futures = [running.submit(x, timeout=20) for x in batch]
        for x, future in zip(batch, futures, strict=True):
            check_result(spec, reference(spec, x), partial(future.result, timeout=30))


# ---------------------------------------------------------------------------------------
# Payload isolation under fan-out.

MUTATIONS: dict[str, Callable[[Any], None]] = {
    "append": lambda p: p["items"].append(99),
    "clear": lambda p: p["items"].clear(),
    "set": lambda p: p.__setitem__("new", True),
    "nested": lambda p: p["meta"].__setitem__("n", -1),
    "none": lambda p: None,
}


@settings(SETTINGS, max_examples=EXAMPLES // 2)
@given(kinds=st.lists(st.sampled_from(sorted(MUTATIONS)), min_size=2, max_size=4), x=inputs,
       keep=st.booleans())
def test_a_receiver_mutating_a_fanned_out_payload_changes_no_sibling(kinds: list[str], x: int, keep: bool) -> None:
    everyone_in = threading.Barrier(len(kinds), timeout=10)
    original = {"items": [x, x + 1], "meta": {"n": x}}

    def receiver(kind: str) -> Callable[[Any], Any]:
        def body(payload: dict[str, Any]) -> Any:
            seen = copy.deepcopy(payload)
            MUTATIONS[kind](payload)
            everyone_in.wait()  # all receivers hold their input at once
            everyone_in.wait()  # and every mutation is done before anyone looks again
            return {"seen": seen, "after": payload} if keep else repr(payload)
        return body

    f = Formation("fan").add_function("make", lambda v: {"items": [v, v + 1], "meta": {"n": v}})
    for i, kind in enumerate(kinds):
        f.add_function(f"r{i}", receiver(kind)).connect("make", f"r{i}")
    result = f.run(x, timeout=20)
    assert result.nodes["make"].output == original
    for i, kind in enumerate(kinds):
        expected = copy.deepcopy(original)
        MUTATIONS[kind](expected)
        out = result.outputs[f"r{i}"]
        if keep:
            assert out == {"seen": original, "after": expected}
        else:
            assert out == repr(expected)


def test_the_reference_reads_design_s_routes_example() -> None:
    """A sanity check of the reference itself, on a shape DESIGN spells out: a node none
    of whose incoming edges fire is skipped, and a join gets only what was delivered."""
    node = NodeSpec(mult=1, add=0, fail_mod=None, as_str=False, on_error="fail", kwargs=False)
    spec = Spec((node,) * 4, ((0, 1, Cond("mod", 2, 0)), (0, 2, Cond("mod", 2, 1)),
                              (1, 3, Cond("plain")), (2, 3, Cond("plain"))))
    ref = reference(spec, 4)
    assert ref.status == {"n0": "succeeded", "n1": "succeeded", "n2": "skipped", "n3": "succeeded"}
    assert ref.output["n3"] == 3 * 4 + 11
    result = build(spec).run(4)
    assert result.output == ref.output["n3"] and result.nodes["n2"].status == "skipped"

