"""Resuming a journalled run: journalled visits and fleet items are not run again, what
was in flight runs again, loops and fan-in joins continue where they were."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import FormationMismatchError, RunNotResumableError, RunStore
from wingman_actors.testing import ScriptedProvider


class Flaky:
    """A node function that counts its calls and fails while ``broken`` is set."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.calls: Counter[Any] = Counter()
        self.broken = False

    def __call__(self, x: Any) -> Any:
        self.calls[repr(x)] += 1
        if self.broken:
            raise RuntimeError("provider outage")
        return self.fn(x)


def test_a_failed_run_resumes_without_rerunning_journalled_visits(store: RunStore) -> None:
    a, b, c = Flaky(lambda x: x + 1), Flaky(lambda x: x * 2), Flaky(lambda x: f"={x}")
    c.broken = True
    f = (Formation("chain").add_function("a", a).add_function("b", b).add_function("c", c)
         .connect("a", "b").connect("b", "c"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    run_id = info.value.run_id or ""
    c.broken = False
    result = f.resume(run_id, store=store)
    assert (result.status, result.output, result.run_id) == ("succeeded", "=4", run_id)
    assert (sum(a.calls.values()), sum(b.calls.values()), sum(c.calls.values())) == (1, 1, 2)
    assert store.get(run_id).status == "succeeded"
    assert result.nodes["a"].attempts == 0  # fed from the journal, not run


def test_a_succeeded_run_cannot_be_resumed(store: RunStore) -> None:
    f = Formation("one").add_function("a", lambda x: x)
    result = f.run(1, store=store)
    with pytest.raises(RunNotResumableError, match="already succeeded"):
        f.resume(result.run_id, store=store)


def test_a_cancelled_run_resumes_from_what_it_had(store: RunStore) -> None:
    gate = threading.Event()
    first = Flaky(lambda x: x + 1)
    f = (Formation("c").add_function("a", first).add_function("b", lambda x: gate.wait(5) and x * 10)
         .connect("a", "b"))
    with f.start(store=store) as running:
        future = running.submit(1)
        while "a" not in store.load(future.run_id).visits:
            threading.Event().wait(0.01)
        future.cancel()
        gate.set()
        assert running.resume(future.run_id).result().output == 20
    assert sum(first.calls.values()) == 1


def test_a_loop_resumes_at_the_visit_it_had_reached(store: RunStore) -> None:
    inc = Flaky(lambda x: x + 1)
    f = (Formation("loop").add_function("inc", inc).add_function("out", Flaky(lambda x: x))
         .connect("inc", "inc", when=lambda x: x < 5).connect("inc", "out", when=lambda x: x >= 5))
    original = f.graph.nodes["out"]["fn"]
    original.broken = True
    with pytest.raises(FormationRuntimeError) as info:
        f.run(0, store=store)
    original.broken = False
    assert f.resume(info.value.run_id or "", store=store).output == 5
    assert sum(inc.calls.values()) == 5  # visits 1..5 ran once, in the first process


def test_a_fan_in_join_resumes_with_the_inputs_it_had(store: RunStore) -> None:
    left, right = Flaky(lambda x: x + 1), Flaky(lambda x: x + 2)
    right.broken = True
    f = (Formation("fan").add_function("src", lambda x: x).add_function("left", left)
         .add_function("right", right).add_function("join", lambda left, right: left + right)
         .connect("src", "left").connect("src", "right").connect("left", "join").connect("right", "join"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    right.broken = False
    assert f.resume(info.value.run_id or "", store=store).output == 5
    assert sum(left.calls.values()) == 1


def test_a_fleet_resumes_running_only_the_items_not_journalled(store: RunStore) -> None:
    seen: list[str] = []
    lock = threading.Lock()
    broken = {"on": True}

    def reply(request: Any) -> str:
        text = request.messages[-1].content[0].text
        with lock:
            seen.append(text)
        if broken["on"] and text == "q":
            raise RuntimeError("outage")
        return text.upper()

    agent = Agent("w", provider=ScriptedProvider([reply], cycle=True))
    f = Formation("fl").add_function("split", lambda s: s.split()).add_fleet("fleet", agent, max_workers=3)
    f.connect("split", "fleet")
    with pytest.raises(FormationRuntimeError) as info:
        f.run("p q r", store=store)
    broken["on"] = False
    seen.clear()
    result = f.resume(info.value.run_id or "", store=store)
    assert result.output == ["P", "Q", "R"]
    assert seen == ["q"]


def test_a_formation_of_another_shape_is_refused_naming_the_difference(store: RunStore) -> None:
    f = Formation("shape").add_function("a", lambda x: x).add_function("b", Flaky(lambda x: x)).connect("a", "b")
    f.graph.nodes["b"]["fn"].broken = True
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store)
    other = Formation("shape").add_function("a", lambda x: x).add_function("z", lambda x: x).connect("a", "z")
    with pytest.raises(FormationMismatchError, match="'z'"):
        other.resume(info.value.run_id or "", store=store)


def test_resume_without_a_store_is_refused() -> None:
    with Formation("x").add_function("a", lambda x: x).start() as running, \
            pytest.raises(ValueError, match="needs the run's store"):
        running.resume("some-run")


def test_formation_resume_without_a_store_names_the_store_argument_it_needs() -> None:
    # the hint used to be "start the formation with formation.start(store=...)", which
    # Formation.resume does not do
    with pytest.raises(ValueError, match=r"Formation.resume\(\) needs the run's store: pass store="):
        Formation("x").add_function("a", lambda x: x).resume("some-run", store=None)  # type: ignore[arg-type]


def test_a_run_id_without_a_store_names_the_store_argument_of_run() -> None:
    with pytest.raises(ValueError, match=r"run_id='mine' names a journalled run: give Formation.run\(\) a store"):
        Formation("x").add_function("a", lambda x: x).run(1, run_id="mine")


def test_many_threads_submit_and_resume_against_one_store(store: RunStore) -> None:
    fail = Flaky(lambda x: x * 3)
    f = Formation("par").add_function("a", lambda x: x + 1).add_function("b", fail).connect("a", "b")
    failed: list[str] = []
    with f.start(store=store) as running:
        fail.broken = True
        for i in range(20):
            with pytest.raises(FormationRuntimeError) as info:
                running.submit(i).result()
            failed.append(info.value.run_id or "")
        fail.broken = False
        results: dict[str, Any] = {}
        errors: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                futures = [running.resume(failed[k])] + [running.submit(100 * k + j) for j in range(10)]
                for fut in futures:
                    results[fut.run_id] = fut.result().output
            except BaseException as exc:  # collected: asserted below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert errors == []
    assert [results[failed[k]] for k in range(20)] == [(k + 1) * 3 for k in range(20)]
    assert len(results) == 20 * 11
    statuses = Counter(r.status for r in store.runs())
    assert statuses == {"succeeded": 220}


def test_a_join_inside_a_loop_resumes_pairing_each_iteration(store: RunStore) -> None:
    pairs: list[tuple[int, int]] = []
    one, two = Flaky(lambda n: n), Flaky(lambda n: n)

    def decide(one: int, two: int) -> int:
        pairs.append((one, two))
        if len(pairs) == 2 and two == 1 and not pairs_failed:
            pairs_failed.append(True)
            raise RuntimeError("decider outage on the second iteration")
        return one + 1

    pairs_failed: list[bool] = []
    f = (Formation("loop").add_function("start", lambda n: n).add_function("rewrite", lambda n: n)
         .add_function("one", one).add_function("two", two).add_function("decide", decide)
         .add_function("done", lambda n: n)
         .connect("start", "rewrite", "one", "decide").connect("rewrite", "two", "decide")
         .connect("decide", "rewrite", when=lambda n: n < 3).connect("decide", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(0, store=store)
    result = f.resume(info.value.run_id or "", store=store)
    assert result.output == 3
    assert pairs == [(0, 0), (1, 1), (1, 1), (2, 2)]  # the failed second visit ran again
    assert (sum(one.calls.values()), sum(two.calls.values())) == (3, 3)  # journalled visits did not
