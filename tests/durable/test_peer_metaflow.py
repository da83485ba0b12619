"""``resume`` behaviours ported from Metaflow's own test suite (Netflix/metaflow,
``test/core/tests/resume_*.py``): a Metaflow flow whose step raised ``ResumeFromHere`` is
resumed, the steps before the failure cloned from the first run and the failed one and
everything after it run again, with the code as it is now. Here that is a journalled run
(``RunStore``) that failed, continued with ``Formation.resume``: the journalled visits (map
items included) are not run again. Resuming from a step that *succeeded*
(``resume_succeeded_step``, ``RESUME_STEP``) is ``Formation.fork(run_id, at=node, input=...)``.
(``tests/formation/test_peer_metaflow.py``'s module docstring maps the rest of Metaflow.)

Deliberately different (DESIGN.md "Durable runs", "Time travel"):
- ``resume`` makes a new Metaflow run with ``origin-run-id``; ours continues the same run
  (same id); a fork is a new run and leaves the original unchanged.
- Metaflow re-runs a whole foreach (every task) when a step inside it is resumed from; ours
  re-runs only the items the journal does not hold.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunNotResumableError, RunStore


class ResumeFromHere(Exception):
    """Metaflow's ``metaflow_test.ResumeFromHere``: raised by the first run's step, not by the resumed one."""


class Switch:
    """``is_resumed()``: False in the first run, True once flipped before the resume."""

    def __init__(self) -> None:
        self.resumed = False

    def __bool__(self) -> bool:
        return self.resumed


def step(counter: Counter, name: str, fail: Switch | None = None, *, data: str | None = None) -> Any:
    """A step that counts its calls, raises ``ResumeFromHere`` in the first run when ``fail`` is
    given, and appends its name (or ``data``) to a string input."""

    def node(x: Any) -> Any:
        counter.hit(name)
        if fail is not None and not fail:
            raise ResumeFromHere(name)
        return f"{x}>{data or name}"

    node.__name__ = name
    return node


def linear(counter: Counter, fail_at: str, switch: Switch) -> Formation:
    """start → a → end, the step ``fail_at`` raising in the first run."""
    f = Formation("linear")
    for name in ("start", "a", "end"):
        f.add_function(name, step(counter, name, switch if name == fail_at else None))
    return f.connect("start", "a", "end")


def test_resuming_from_the_start_step_runs_every_step_with_the_runs_own_input(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_start_step.py (``start`` raises ``ResumeFromHere``;
    the resumed run sees the original parameters): no input is given to ``resume``."""
    counter, switch = Counter(), Switch()
    f = linear(counter, "start", switch)
    with pytest.raises(FormationRuntimeError, match=r"node 'start'") as info:
        f.run("p=123", store=store)
    assert counter.calls == {"start": 1}
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == "p=123>start>a>end"
    assert counter.calls == {"start": 2, "a": 1, "end": 1}


def test_resuming_from_the_end_step_clones_every_step_before_it(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_end_step.py (the end step fails; the resumed run
    takes the earlier steps' data from the first run)."""
    counter, switch = Counter(), Switch()
    f = linear(counter, "end", switch)
    with pytest.raises(FormationRuntimeError, match=r"node 'end'") as info:
        f.run("x", store=store)
    switch.resumed = True
    result = f.resume(info.value.run_id, store=store)
    assert result.output == "x>start>a>end" and result.run_id == info.value.run_id
    assert counter.calls == {"start": 1, "a": 1, "end": 2}


def test_a_resume_runs_the_code_as_it_is_now_in_a_formation_built_again(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_end_step.py (the point of ``resume``: fix the
    failing step's code, then resume): a formation built again with the fixed function
    continues the run."""

    def broken(x: str) -> str:
        raise ValueError("bug in end")

    def build(end: Any) -> Formation:
        return (Formation("fixable").add_function("start", lambda x: f"{x}>start")
                .add_function("end", end).connect("start", "end"))

    with pytest.raises(FormationRuntimeError, match="bug in end") as info:
        build(broken).run("x", store=store)
    assert build(lambda x: f"{x}>fixed end").resume(info.value.run_id, store=store).output == "x>start>fixed end"


def test_resuming_from_a_succeeded_step_is_a_fork_that_reruns_it_and_what_follows(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_succeeded_step.py (``RESUME_STEP = "a"`` of a run
    that failed at end: start is cloned, a and end run again). A succeeded visit is forked
    at (``Formation.fork``), with the input it had: the original run is left as it was."""
    counter, switch = Counter(), Switch()
    f = Formation("succeeded_step")
    f.add_function("start", step(counter, "start")).add_function("a", step(counter, "a", data="test"))
    f.add_function("end", step(counter, "end", switch)).connect("start", "a", "end")
    with pytest.raises(FormationRuntimeError) as info:
        f.run("x", store=store)
    run_id = info.value.run_id
    switch.resumed = True
    forked = f.fork(run_id, store=store, at="a", input="x>start")
    assert forked != run_id
    assert store.load(forked).visits["end"][1] == "x>start>test>end"
    assert counter.calls == {"start": 1, "a": 2, "end": 2}
    assert "end" not in store.load(run_id).visits  # the original still failed at end


def test_resuming_a_foreach_step_reruns_only_the_items_that_failed(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_foreach_inner.py (the foreach's inner step raises
    ``ResumeFromHere``; the join and the steps after it see the resumed data). Deliberately
    different: Metaflow runs every inner task again; ours keeps the journalled items."""
    counter, switch = Counter(), Switch()

    def inner(i: int) -> str:
        counter.hit(i)
        if i == 2 and not switch:
            raise ResumeFromHere("inner")
        return f"{i}:{'resume' if switch else 'run'}"

    f = (Formation("foreach_inner").add_function("split", lambda n: list(range(n))).add_map("inner", inner)
         .add_function("join", lambda xs: xs).add_function("end", lambda xs: ",".join(xs))
         .connect("split", "inner", "join", "end"))
    with pytest.raises(FormationRuntimeError, match=r"node 'inner'") as info:
        f.run(4, store=store)
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == "0:run,1:run,2:resume,3:run"
    assert counter.calls == {0: 1, 1: 1, 2: 2, 3: 1}


def test_resuming_from_a_foreach_join_does_not_run_the_foreach_again(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_foreach_join.py (the join raises ``ResumeFromHere``;
    resumed, it joins every item's value, and the steps after it see ``data == "resume"``)."""
    counter, switch = Counter(), Switch()

    def inner(i: int) -> str:
        counter.hit("inner")
        return f"v{i}"

    def join(xs: list[str]) -> dict[str, Any]:
        counter.hit("join")
        if not switch:
            raise ResumeFromHere("join")
        return {"data": "resume", "var": sorted(xs)}

    f = (Formation("foreach_join").add_function("split", lambda n: list(range(n))).add_map("inner", inner)
         .add_function("join", join).add_function("end", lambda j: j).connect("split", "inner", "join", "end"))
    with pytest.raises(FormationRuntimeError, match=r"node 'join'") as info:
        f.run(3, store=store)
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == {"data": "resume", "var": ["v0", "v1", "v2"]}
    assert counter.calls == {"inner": 3, "join": 2}


def test_resuming_from_a_foreach_split_runs_the_split_and_the_foreach(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_foreach_split.py (the split step raises
    ``ResumeFromHere``; its foreach then runs from the resumed split)."""
    counter, switch = Counter(), Switch()

    def split(n: int) -> list[int]:
        counter.hit("split")
        if not switch:
            raise ResumeFromHere("split")
        return list(range(n))

    def inner(i: int) -> int:
        counter.hit("inner")
        return i * i

    f = (Formation("foreach_split").add_function("start", lambda n: n).add_function("split", split)
         .add_map("inner", inner).add_function("join", sum).connect("start", "split", "inner", "join"))
    with pytest.raises(FormationRuntimeError, match=r"node 'split'") as info:
        f.run(4, store=store)
    assert counter.count("inner") == 0
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == 14
    assert counter.calls == {"split": 2, "inner": 4}


def test_resuming_an_unbounded_foreach_keeps_its_width_and_its_journalled_items(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_ubf_foreach_join.py (an unbounded foreach, its
    width decided at run time, resumed at its join)."""
    counter, switch = Counter(), Switch()

    def split(_: Any) -> list[str]:
        counter.hit("split")
        return ["a", "b", "c"] if not switch else ["never", "asked"]

    def join(xs: list[str]) -> str:
        if not switch:
            raise ResumeFromHere("join")
        return "".join(xs)

    f = (Formation("ubf").add_function("split", split).add_map("inner", str.upper).add_function("join", join)
         .connect("split", "inner", "join"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(None, store=store)
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == "ABC"
    assert counter.count("split") == 1


def loop_formation(counter: Counter, switch: Switch) -> Formation:
    """Metaflow's ``recursive_switch`` graph with ``resume_recursive_switch``'s steps: the loop
    raises at ``count == 6`` in the first run."""

    def loop(state: dict[str, int]) -> dict[str, int]:
        count = state["count"] + 1
        counter.hit(count)
        if count == 6 and not switch:
            raise ResumeFromHere("loop")
        return {"count": count, "max": state["max"]}

    return (Formation("recursive_switch").add_function("start", lambda _: {"count": 0, "max": 10})
            .add_function("loop", loop).add_function("end", lambda s: s["count"])
            .connect("start", "loop")
            .connect("loop", "loop", when=lambda s: s["count"] < s["max"])
            .connect("loop", "end", when=lambda s: s["count"] >= s["max"]))


def test_resuming_a_recursive_switch_continues_the_loop_from_the_iteration_that_failed(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_recursive_switch.py (the loop fails at iteration 6;
    the resumed run clones iterations 1-5, runs 6-10 anew, and the loop step has ten tasks)."""
    counter, switch = Counter(), Switch()
    f = loop_formation(counter, switch)
    with pytest.raises(FormationRuntimeError, match=r"node 'loop'") as info:
        f.run(None, store=store)
    switch.resumed = True
    result = f.resume(info.value.run_id, store=store)
    assert result.output == 10
    assert counter.calls == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 2, 7: 1, 8: 1, 9: 1, 10: 1}
    loops = [v for v in store.history(info.value.run_id) if v.node == "loop" and v.status == "succeeded"]
    assert [v.output["count"] for v in loops] == list(range(1, 11))
    assert [v.visit for v in loops] == list(range(1, 11))


def test_resuming_a_recursive_switch_inside_a_foreach_reruns_only_the_failed_items_iterations(
        store: RunStore) -> None:
    """From metaflow test/core/tests/resume_recursive_switch_inside_foreach.py (a loop per
    foreach item; one item's loop fails mid-way): the other items and the failed item's
    earlier iterations are not run again."""
    counter, switch = Counter(), Switch()

    def body(state: dict[str, Any]) -> dict[str, Any]:
        count = state["count"] + 1
        counter.hit((state["id"], count))
        if state["id"] == "B" and count == 3 and not switch:
            raise ResumeFromHere("loop_body")
        return {**state, "count": count}

    inner = (Formation("item_loop").add_function("loop_start", lambda item: {**item, "count": 0})
             .add_function("loop_body", body).add_function("loop_exit", lambda s: f"{s['id']}:{s['count']}")
             .connect("loop_start", "loop_body")
             .connect("loop_body", "loop_body", when=lambda s: s["count"] < s["max"])
             .connect("loop_body", "loop_exit", when=lambda s: s["count"] >= s["max"]))
    f = Formation("recursive_switch_inside_foreach").add_map("each", formation=inner, max_workers=3)
    items = [{"id": "A", "max": 3}, {"id": "B", "max": 5}, {"id": "C", "max": 2}]
    with pytest.raises(FormationRuntimeError) as info:
        f.run(items, store=store)
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == ["A:3", "B:5", "C:2"]
    runs = {key: n for key, n in counter.calls.items() if n != 1}
    assert runs == {("B", 3): 2}
    assert sum(1 for key in counter.calls if key[0] == "B") == 5


def test_resuming_a_nested_foreach_reruns_only_the_inner_item_that_failed(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_foreach_inner.py on its ``nested_foreach`` graph
    (the innermost step of a foreach in a foreach fails)."""
    counter, switch = Counter(), Switch()

    def leaf(s: str) -> str:
        counter.hit(s)
        if s == "bz" and not switch:
            raise ResumeFromHere("leaf")
        return s.upper()

    inner = (Formation("inner").add_function("split", lambda x: [x + c for c in "yz"])
             .add_map("leaf", leaf).connect("split", "leaf"))
    f = Formation("nested").add_map("outer", formation=inner, max_workers=2)
    with pytest.raises(FormationRuntimeError) as info:
        f.run(["a", "b"], store=store)
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).output == [["AY", "AZ"], ["BY", "BZ"]]
    assert counter.calls == {"ay": 1, "az": 1, "by": 1, "bz": 2}


def test_resuming_after_a_switch_keeps_the_case_the_first_run_took(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_* on the ``simple_switch`` graph (a resumed switch
    step is cloned, so its condition is not evaluated again): the journalled switch output
    routes the resume, whatever the switch would say now."""
    counter, switch = Counter(), Switch()

    def start(_: Any) -> str:
        counter.hit("start")
        return "b" if switch else "a"

    def a(cond: str) -> str:
        counter.hit("a")
        if not switch:
            raise ResumeFromHere("a")
        return "took a"

    f = (Formation("switch_resume").add_function("start", start).add_function("a", a)
         .add_function("b", lambda c: "took b")
         .connect("start", "a", when=lambda c: c == "a").connect("start", "b", when=lambda c: c == "b"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(None, store=store)
    switch.resumed = True
    result = f.resume(info.value.run_id, store=store)
    assert result.outputs == {"a": "took a"} and result.nodes["b"].status == "skipped"
    assert counter.calls == {"start": 1, "a": 2}


def test_a_caught_failure_is_not_retried_on_resume_and_the_handler_runs_again(store: RunStore) -> None:
    """From metaflow test/core/tests/catch_retry.py with resume (a caught step is cloned as
    caught): the step that failed into its error edge after its retries is journalled as
    failed, and a resume after the handler failed runs the handler, not the step."""
    counter, switch = Counter(), Switch()

    def a(x: Any) -> Any:
        counter.hit("a")
        raise ValueError("always")

    def handler(failure: Any) -> str:
        counter.hit("handler")
        if not switch:
            raise ResumeFromHere("handler")
        return f"caught after {failure.attempts}"

    f = (Formation("catch_resume").add_function("a", a, retries=2, backoff=0).add_function("handler", handler)
         .connect("a", "handler", on_error=True))
    with pytest.raises(FormationRuntimeError, match=r"node 'handler'") as info:
        f.run(1, store=store)
    switch.resumed = True
    assert f.resume(info.value.run_id, store=store).outputs == {"handler": "caught after 3"}
    assert counter.calls == {"a": 3, "handler": 2}


def test_resuming_a_run_that_succeeded_is_refused_saying_where_its_outputs_are(store: RunStore) -> None:
    """From metaflow test/core/tests/resume_succeeded_step.py (a step of a run that succeeded is
    resumed from). Deliberately different: ``resume`` continues an unfinished run, so one
    that succeeded is refused (``RunNotResumableError``, its status, and where to read its
    outputs), and nothing runs; rerunning from a succeeded step is a fork (above)."""
    counter = Counter()
    f = linear(counter, "none", Switch())
    run_id = f.run("x", store=store).run_id
    with pytest.raises(RunNotResumableError, match=r"already succeeded; read its outputs with store.load") as info:
        f.resume(run_id, store=store)
    assert (info.value.run_id, info.value.status) == (run_id, "succeeded")
    assert counter.calls == {"start": 1, "a": 1, "end": 1}


def test_the_store_lists_every_run_of_a_formation_with_the_latest_among_them(store: RunStore) -> None:
    """From metaflow test/core/tests/list_runs.py (the CLI lists the flow's runs, each named
    after the flow, the latest run among them): ``RunStore.runs()``, and by status."""
    f = Formation("ListRunsFlow").add_function("step", lambda x: 1 / x)
    ok = [f.run(1, store=store).run_id for _ in range(2)]
    with pytest.raises(FormationRuntimeError) as info:
        f.run(0, store=store)
    runs = store.runs()
    assert {r.formation for r in runs} == {"ListRunsFlow"}
    assert {r.id for r in runs} == {*ok, info.value.run_id}
    assert [r.id for r in store.runs(status="failed")] == [info.value.run_id]
    assert max(runs, key=lambda r: r.created).id == info.value.run_id  # the latest run, listed


def test_each_visit_in_a_runs_history_starts_after_its_parents_finished(store: RunStore) -> None:
    """From metaflow test/core/tests/runtime_dag.py (a task's ``parent_tasks`` are the tasks its
    inputs came from, its ``child_tasks`` those that took its output): in
    ``store.history``, a join's visit starts once both branches have finished, and the
    end's once the join has."""
    f = (Formation("RuntimeDag").add_function("start", lambda x: x).add_function("a", lambda x: x + 1)
         .add_function("b", lambda x: x + 2).add_function("join", lambda a, b: a + b).add_function("end", lambda x: x)
         .connect("start", "a", "join").connect("start", "b", "join").connect("join", "end"))
    run_id = f.run(1, store=store).run_id
    visits = {v.node: v for v in store.history(run_id)}
    assert set(visits) == {"start", "a", "b", "join", "end"}
    parents = {"a": ["start"], "b": ["start"], "join": ["a", "b"], "end": ["join"]}
    for node, ups in parents.items():
        started = visits[node].started
        assert started is not None
        assert all(started >= visits[up].finished for up in ups), (node, ups)
    assert visits["join"].output == 5 and visits["end"].output == 5
