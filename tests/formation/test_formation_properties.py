"""A differential test of the formation language: random formations of function nodes
(fan-out, fan-in joins by dict and by keyword, routes by predicate and by type,
``otherwise``, ``NoRouteError``, ``on_error="skip"``, error edges with ``NodeFailure``,
self-loops and agent-style loops bounded by ``max_visits``, whose body may end the loop
itself: raising with ``on_error="skip"`` or ``"fail"`` or into a handler, or leaving by
an edge of its own; often with a join after the loop) run by the library and by a
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
whose only out-edges are error edges is a sink; a node with ``on_error="skip"`` whose
output finds no route is not a failure of the run (its successors are skipped); a node's
status is ``succeeded`` if any visit succeeded, though a later one was skipped, but
``failed`` if its last visit failed into an error edge (DESIGN: "its trace says failed").

``WINGMAN_FORMATION_EXAMPLES=2000`` runs a longer hunt (the default, 300, takes seconds)."""

from __future__ import annotations

import copy
import inspect
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation import NodeFailure

EXAMPLES = int(os.environ.get("WINGMAN_FORMATION_EXAMPLES", "300"))  # a longer hunt: 2000
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ---------------------------------------------------------------------------------------
# The formations generated: a description, the library's Formation built from it, and the
# reference's reading of it.


@dataclass(frozen=True)
class Cond:
    """An edge's condition: ``plain`` (always), ``mod`` (``val(v) % k == r``), ``type``
    (``when=int`` or ``when=str``), ``otherwise``, ``error`` (an error edge), or a loop's:
    ``loop`` (a self-loop, or the edge to a loop's body node, taken while
    ``val(v) % k != 0``), ``back`` (the body's edge back: always with ``k == 0``, else
    taken while ``val(v) % k != 0``) and ``exit`` (the looping node's forward edges, or
    the body's edge out of the loop: taken when ``val(v) % k == 0``)."""

    kind: str
    k: int = 0
    r: int = 0
    typ: type = int

    def holds(self, value: Any) -> bool:
        if self.kind == "mod":
            return val(value) % self.k == self.r
        if self.kind == "type":
            return isinstance(value, self.typ)
        if self.kind == "back" and not self.k:
            return True
        if self.kind in ("loop", "exit", "back"):
            return (val(value) % self.k != 0) == (self.kind != "exit")
        raise AssertionError(self.kind)


@dataclass(frozen=True)
class NodeSpec:
    mult: int
    add: int
    fail_mod: int | None  # raises ValueError when its combined input % fail_mod == 0
    as_str: bool  # outputs a str when the result is even (so type routes have work)
    on_error: str  # "fail" | "skip"
    kwargs: bool  # a fan-in function with parameters named after its predecessors
    max_visits: int = 10


@dataclass(frozen=True)
class Spec:
    nodes: tuple[NodeSpec, ...]
    edges: tuple[tuple[int, int, Cond], ...]  # (u, v, cond), u < v; or a loop's: u == v, or back

    def name(self, i: int) -> str:
        return f"n{i}"

    def out_edges(self, u: int) -> list[tuple[int, Cond]]:
        return [(v, c) for (a, v, c) in self.edges if a == u]

    def in_edges(self, v: int) -> list[tuple[int, Cond]]:
        """Forward in-edges (a self-loop is a back edge)."""
        return [(u, c) for (u, b, c) in self.edges if b == v and u != v and c.kind != "back"]

    def loop(self, u: int) -> tuple[Cond, int | None] | None:
        """The loop ``u`` drives: its condition, and its body node (None: a self-loop)."""
        return next(((c, None if a == b else b) for a, b, c in self.edges if a == u and c.kind == "loop"), None)

    def back(self, body: int) -> Cond:
        """The condition of a loop body's edge back to its looping node."""
        return next(c for a, _, c in self.edges if a == body and c.kind == "back")

    def describe(self) -> str:
        lines = [f"n{i}: {n}" for i, n in enumerate(self.nodes)]
        lines += [f"n{u} -> n{v}: {c}" for u, v, c in self.edges]
        return "\n".join(lines)


def val(value: Any) -> int:
    """The int a node's output stands for (outputs are ints or their decimal strings)."""
    return int(value)


def combine(i: int, value: Any) -> int:
    """What node ``i`` computes from its input, whatever shape it has: keys and values
    both count, so a wrong key, a missing one or a wrong value changes the output."""
    if isinstance(value, NodeFailure):
        assert isinstance(value.error, ValueError) and value.attempts == 1
        return 7 * int(value.node[1:]) + 3 * combine(-1, value.input) + 1
    if isinstance(value, dict):
        return sum((int(k[1:]) + 2) * val(v) for k, v in sorted(value.items())) + 11 * len(value)
    return val(value)


def compute(spec: Spec, i: int, value: Any) -> Any:
    """Node ``i``'s function, shared by the library's node and the reference."""
    node = spec.nodes[i]
    x = combine(i, value)
    if node.fail_mod is not None and x % node.fail_mod == 0:
        raise ValueError(f"n{i} refuses {x}")
    y = (x * node.mult + node.add) % 1009
    return str(y) if node.as_str and y % 2 == 0 else y


def node_function(spec: Spec, i: int, preds: list[str]) -> Callable[..., Any]:
    if spec.nodes[i].kwargs and len(preds) > 1:
        def by_keyword(**kw: Any) -> Any:
            return compute(spec, i, {k: v for k, v in kw.items() if v is not None})
        by_keyword.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=None) for p in preds])
        return by_keyword

    def single(value: Any) -> Any:
        return compute(spec, i, value)
    return single


def build(spec: Spec) -> Formation:
    f = Formation("prop")
    for i, node in enumerate(spec.nodes):
        preds = [spec.name(u) for u, c in spec.in_edges(i)]
        f.add_function(spec.name(i), node_function(spec, i, preds), on_error=node.on_error,
                       max_visits=node.max_visits)
    for u, v, c in spec.edges:
        a, b = spec.name(u), spec.name(v)
        if c.kind == "plain" or (c.kind == "back" and not c.k):
            f.connect(a, b)
        elif c.kind == "otherwise":
            f.connect(a, b, otherwise=True)
        elif c.kind == "error":
            f.connect(a, b, on_error=True)
        elif c.kind == "type":
            f.connect(a, b, when=c.typ)
        else:
            f.connect(a, b, when=c.holds)
    return f


# ---------------------------------------------------------------------------------------
# The reference interpreter: nodes in topological (index) order, one visit each.


@dataclass
class Outcome:
    status: dict[str, str] = field(default_factory=dict)  # succeeded | failed | skipped | blocked
    output: dict[str, Any] = field(default_factory=dict)
    # nodes that may fail the run first (each failure found, with dependents blocked), and
    # how: "raised", "no route" or "visits" (past max_visits)
    failures: dict[str, str] = field(default_factory=dict)
    loop_outputs: dict[str, list[Any]] = field(default_factory=dict)  # every visit's, in order
    sinks: list[str] = field(default_factory=list)
    endings: dict[str, str] = field(default_factory=dict)  # how each loop ended

    def sink_outputs(self) -> dict[str, Any]:
        return {s: self.output[s] for s in self.sinks if s in self.output}


def fired(spec: Spec, u: int, value: Any) -> set[int]:
    """The out-edges of a succeeded node ``u`` that fire for ``value``."""
    outs = [(v, c) for v, c in spec.out_edges(u) if c.kind != "error" and v != u]
    conditional = [(v, c) for v, c in outs if c.kind in ("mod", "type", "exit")]
    taken = {v for v, c in outs if c.kind == "plain"}
    taken |= {v for v, c in conditional if c.holds(value)}
    if not any(c.holds(value) for _, c in conditional):
        taken |= {v for v, c in outs if c.kind == "otherwise"}
    return taken


def no_route(spec: Spec, u: int, value: Any) -> bool:
    outs = [c for _, c in spec.out_edges(u) if c.kind != "error"]
    return bool(outs) and all(c.kind in ("mod", "type", "exit", "loop") for c in outs) and not any(
        c.holds(value) for c in outs)


def reference(spec: Spec, run_input: Any) -> Outcome:
    out = Outcome()
    delivered: dict[int, dict[str, Any]] = {i: {} for i in range(len(spec.nodes))}
    blocked: set[int] = set()
    for i in range(len(spec.nodes)):
        name, node, ins = spec.name(i), spec.nodes[i], spec.in_edges(i)
        if all(c.kind == "error" for _, c in spec.out_edges(i)):
            out.sinks.append(name)  # the library's reading: an error edge alone leaves a sink
        if name in out.status:  # a loop's body node: its loop ran it
            continue
        if i in blocked:
            out.status[name] = "blocked"
            continue
        if not ins:
            value: Any = run_input
        elif not delivered[i]:
            out.status[name] = "skipped"
            continue
        elif len(ins) == 1:
            value = next(iter(delivered[i].values()))
        else:
            value = dict(delivered[i])
        if spec.loop(i) is not None:
            blocked |= run_loop(spec, i, value, out, delivered)
            continue
        error_edges = [v for v, c in spec.out_edges(i) if c.kind == "error"]
        try:
            result = compute(spec, i, value)
        except ValueError as exc:
            if error_edges:
                out.status[name] = "failed"
                for v in error_edges:
                    delivered[v][name] = NodeFailure(name, exc, value, 1, "ref")
            elif node.on_error == "skip":
                out.status[name] = "skipped"
            else:
                out.status[name] = "failed"
                out.failures[name] = "raised"
                blocked |= descendants(spec, i)
            continue
        out.status[name], out.output[name] = "succeeded", result
        if no_route(spec, i, result):
            if node.on_error == "skip":  # the library's reading (test_routes.py): skip the rest
                continue
            out.failures[name] = "no route"
            blocked |= descendants(spec, i)
            continue
        for v in fired(spec, i, result):
            delivered[v][name] = result
    return out


def run_loop(spec: Spec, i: int, value: Any, out: Outcome, delivered: dict[int, dict[str, Any]]) -> set[int]:
    """Node ``i``'s loop, visit after visit, each on the last (body's) output, until a
    visit leaves it by its exit edges, a visit would pass ``max_visits`` (the run fails),
    or the body ends it: raising (``on_error`` or its error edge decides) or leaving by
    its own edge out. The nodes after the loop hear of it once, when it ends (DESIGN:
    joins are per visit, and nothing is lost): the looping node's exit edges carry its
    last output if that visit left through them, else they count as not taken (a join
    after the loop fires without that predecessor); so do the body's edges out. Returns
    the nodes a failure blocks."""
    loop, body = spec.loop(i)  # type: ignore[misc]
    name, node = spec.name(i), spec.nodes[i]
    outputs: list[Any] = []
    ran: list[Any] = []
    out.loop_outputs[name] = outputs
    x, failure = value, None
    while True:
        if len(outputs) == node.max_visits:
            ending = "visits"
            break
        outputs.append(compute(spec, i, x))
        if not loop.holds(outputs[-1]):
            ending = "exit"
            break
        if body is None:
            x = outputs[-1]
            continue
        try:
            x = compute(spec, body, outputs[-1])
        except ValueError as exc:
            ending, failure = "body raised", NodeFailure(spec.name(body), exc, outputs[-1], 1, "ref")
            break
        ran.append(x)
        if not spec.back(body).holds(x):
            ending = "body left"
            break
    out.endings[name] = ending
    out.status[name], out.output[name] = "succeeded", outputs[-1]
    blocked: set[int] = set()
    if ending == "visits":  # one visit more than max_visits: the run fails
        out.failures[name] = "visits"
        blocked |= descendants(spec, i)
    elif ending == "exit":
        for v in fired(spec, i, outputs[-1]):
            delivered[v][name] = outputs[-1]
    if body is None:
        return blocked
    bname = spec.name(body)
    out.status[bname] = "succeeded" if ran else "skipped"  # a later skipped visit leaves it succeeded
    if ran:
        out.loop_outputs[bname], out.output[bname] = ran, ran[-1]
    handlers = [v for v, c in spec.out_edges(body) if c.kind == "error"]
    if failure is not None and handlers:
        out.status[bname] = "failed"  # DESIGN: its trace says failed, the run goes on
        for v in handlers:
            delivered[v][bname] = failure
    elif failure is not None and spec.nodes[body].on_error == "fail":
        out.status[bname] = "failed"
        out.failures[bname] = "raised"
        blocked |= descendants(spec, body)
    elif ending == "body left":
        for v, c in spec.out_edges(body):
            if c.kind in ("otherwise", "exit"):  # the back edge did not fire: both do
                delivered[v][bname] = x
    return blocked


def descendants(spec: Spec, u: int) -> set[int]:
    seen: set[int] = set()
    todo = [u]
    while todo:
        for v, _ in spec.out_edges(todo.pop()):
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return seen


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
                                  "max_visits": draw(st.integers(1, 4))}) if i == u else nd
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
                          "on_error": "skip" if ends == "skip" else "fail"}),)
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


def conditions() -> st.SearchStrategy[Cond]:
    return st.one_of(
        st.just(Cond("plain")), st.just(Cond("plain")), st.just(Cond("plain")),
        st.builds(lambda k, r: Cond("mod", k, r % k), st.integers(2, 3), st.integers(0, 2)),
        st.sampled_from([Cond("type", typ=int), Cond("type", typ=str)]),
        st.just(Cond("otherwise")),
    )


inputs = st.integers(0, 10_000)


def loop_ended_by_its_body(handled: bool) -> Spec:
    """A formation whose loop's body often ends it (shown to every run of the tests, and
    on Ray): n1 loops through n2 while its output % 4 != 0; n2 fails on multiples of 3,
    into a handler n3 (``handled``), else skipped, and turns back only while its output
    % 5 != 0, else leaves to n3; n4 joins n1's exit, n3 and n0."""
    def node(mult: int, add: int, **kw: Any) -> NodeSpec:
        return NodeSpec(**{"mult": mult, "add": add, "fail_mod": None, "as_str": False, "on_error": "fail",
                           "kwargs": False, **kw})

    body = node(2, 1, fail_mod=3, on_error="fail" if handled else "skip")
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
    for name, status in ref.status.items():
        trace = result.nodes[name]
        assert trace.status == status, f"{name}: {trace.status} (reference {status})"
        visits = ref.loop_outputs.get(name, [ref.output[name]] if name in ref.output else [])
        assert trace.outputs == visits, name


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
    check_result(spec, ref, lambda: build(spec).run(run_input, timeout=5))


@settings(SETTINGS, max_examples=EXAMPLES // 3)
@given(spec=formations(), batch=st.lists(inputs, min_size=20, max_size=20))
@example(spec=loop_ended_by_its_body(handled=True), batch=list(range(20)))
@example(spec=loop_ended_by_its_body(handled=False), batch=list(range(20)))
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

