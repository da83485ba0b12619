"""The reference interpreter of the formation language's property test
(tests/formation/test_formation_properties.py): a description of a random formation of
function nodes (``Spec``), the library's :class:`~wingman_actors.Formation` built from it
(``build``), and a small sequential interpreter written from DESIGN's rules, not from the
library's code (``reference``), whose ``Outcome`` a run of the library must agree with.
See the test module's docstring for the rules it reads and where it follows the library."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wingman_actors import Formation
from wingman_actors.formation import NestedRunError, NodeFailure

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
    inner: Spec | None = None  # a formation node (add_formation): this formation runs as the node


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
    """The int a node's output stands for (outputs are ints or their decimal strings, or
    the dict of an inner formation's sink outputs, which stands for what ``combine``
    makes of it)."""
    return combine(-1, value) if isinstance(value, dict) else int(value)


class InnerFailed(ValueError):
    """The reference's reading of a formation node whose inner run fails (the library
    fails the node with a ``NestedRunError``)."""

    def __init__(self, inner: Outcome) -> None:
        super().__init__(f"the inner run fails at {sorted(inner.failures)}")
        self.inner = inner


def combine(i: int, value: Any) -> int:
    """What node ``i`` computes from its input, whatever shape it has: keys and values
    both count, so a wrong key, a missing one or a wrong value changes the output."""
    if isinstance(value, NodeFailure):
        assert isinstance(value.error, ValueError | NestedRunError) and value.attempts == 1
        return 7 * int(value.node[1:]) + 3 * combine(-1, value.input) + 1
    if isinstance(value, dict):
        return sum((int(k[1:]) + 2) * val(v) for k, v in sorted(value.items())) + 11 * len(value)
    return val(value)


def compute(spec: Spec, i: int, value: Any, inner: dict[str, Outcome] | None = None) -> Any:
    """Node ``i``'s function, shared by the library's node and the reference; for a
    formation node, the reference's reading of its inner run on ``value`` (kept in
    ``inner`` by node name): its single sink's output, or the dict of its sinks' outputs
    (an inner formation skips no node, so every sink has one)."""
    node = spec.nodes[i]
    if node.inner is not None:
        ran = reference(node.inner, value)
        if inner is not None:
            inner[spec.name(i)] = ran
        if ran.failures:
            raise InnerFailed(ran)
        return ran.output[ran.sinks[0]] if len(ran.sinks) == 1 else ran.sink_outputs()
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


def build(spec: Spec, name: str = "prop") -> Formation:
    f = Formation(name)
    for i, node in enumerate(spec.nodes):
        if node.inner is not None:
            f.add_formation(spec.name(i), build(node.inner, f"{name}-{i}"), on_error=node.on_error,
                            max_visits=node.max_visits)
            continue
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
    inner: dict[str, Outcome] = field(default_factory=dict)  # a formation node's last inner run

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
            result = compute(spec, i, value, out.inner)
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
        if no_route(spec, i, result):  # the run fails, whatever the node's on_error (it did not fail)
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
            x = compute(spec, body, outputs[-1], out.inner)
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
