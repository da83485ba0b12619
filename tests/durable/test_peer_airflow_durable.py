"""Behaviours ported from Apache Airflow's own test suite (apache/airflow,
``airflow-core/tests/unit/models/test_dagrun.py`` and ``test_taskinstance.py``): a failed DAG
run whose failed tasks are cleared runs again from where it failed. Ours is ``resume`` of a
journalled run (SQLite, and PostgreSQL where the store decides): what the journal settled
(succeeded tasks, skips, finished map indexes) is not run again, only what failed.

Deliberately different (DESIGN.md documents ours):
- Clearing a skipped Airflow task runs it again; a journalled skip (an ``on_error="skip"``
  visit, a branch not taken) is settled, and a resume replays it as a skip.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore


def counted(counter: Counter, name: str, value: Any = None, broken: list[bool] | None = None) -> Any:
    """A node that counts its calls under ``name``, fails while ``broken[0]``, and returns
    ``value`` (its input when None)."""

    def node(x: Any) -> Any:
        counter.hit(name)
        if broken is not None and broken[0]:
            raise ValueError(f"{name} is broken")
        return x if value is None else value

    return node


def test_resuming_a_failed_run_reruns_only_the_failed_task(location: str) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dagrun.py::TestDagRun::test_clear_task_instances_for_backfill_finished_dagrun."""
    counter, broken = Counter(), [True]
    f = (Formation("dag").add_function("extract", counted(counter, "extract", "rows"))
         .add_function("load", counted(counter, "load", broken=broken)).connect("extract", "load"))
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'load'") as info:
            f.run(None, store=store)
        broken[0] = False
        result = f.resume(info.value.run_id, store=store)
    assert result.output == "rows" and result.status == "succeeded"
    assert counter.calls == {"extract": 1, "load": 2}


def test_a_resumed_run_keeps_the_branch_it_took_and_its_skips(store: RunStore) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dagrun.py::TestDagRun::test_clear_task_instances_for_backfill_finished_dagrun
    (a run with a branch and a skipped task, cleared after its last task failed)."""
    counter, broken = Counter(), [True]
    f = (Formation("dag").add_function("branch", counted(counter, "branch", 1))
         .add_function("left", counted(counter, "left", "L")).add_function("right", counted(counter, "right", "R"))
         .add_function("flaky", lambda x: 1 / 0, on_error="skip").add_function("join", lambda d: d)
         .add_function("final", counted(counter, "final", broken=broken))
         .connect("branch", "left", when=lambda x: x > 0).connect("branch", "right", otherwise=True)
         .connect("left", "join").connect("right", "join").connect("branch", "flaky").connect("flaky", "join")
         .connect("join", "final"))
    with pytest.raises(FormationRuntimeError, match=r"node 'final'") as info:
        f.run(None, store=store)
    broken[0] = False
    result = f.resume(info.value.run_id, store=store)
    assert result.output == {"left": "L"}
    assert {n: result.nodes[n].status for n in ("right", "flaky")} == {"right": "skipped", "flaky": "skipped"}
    assert counter.calls == {"branch": 1, "left": 1, "final": 2}


def test_resuming_a_failed_mapped_task_reruns_only_its_failed_map_indexes(store: RunStore) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_many_one_explicit_odd_setup_one_mapped_fails
    (the failed map index cleared and run again)."""
    counter, bad = Counter(), {2}

    def item(x: int) -> int:
        counter.hit(x)
        if x in bad:
            raise ValueError(f"index of {x} failed")
        return x * 10

    f = Formation("dag").add_map("mapped", item)
    with pytest.raises(FormationRuntimeError, match=r"item 1: ValueError") as info:
        f.run([1, 2, 3], store=store)
    bad.clear()
    assert f.resume(info.value.run_id, store=store).output == [10, 20, 30]
    assert counter.calls == {1: 1, 2: 2, 3: 1}


def test_resuming_after_a_task_timed_out_runs_it_again(store: RunStore) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling
    (a task cleared after its last attempt failed, here by its timeout)."""
    counter, stuck, release = Counter(), [True], threading.Event()

    def slow(x: Any) -> Any:
        counter.hit("slow")
        if stuck[0]:
            release.wait(4)
        return "done"

    f = Formation("dag").add_function("first", counted(counter, "first")).add_function("slow", slow, timeout=0.05)
    f.connect("first", "slow")
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out") as info:
            f.run(1, store=store)
        stuck[0] = False
        assert f.resume(info.value.run_id, store=store).output == "done"
    finally:
        release.set()
    assert counter.calls == {"first": 1, "slow": 2}


def test_a_mapped_group_item_that_skipped_its_last_task_fails_again_on_resume(store: RunStore) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_many_one_explicit_odd_setup_one_mapped_fails
    (index 2 skipped). Clearing that index in Airflow runs it again; ours journalled the inner
    skip, so the resumed run replays it, and the item fails again the same way, not as None."""
    counter = Counter()

    def inv(x: int) -> float:
        counter.hit(x)
        return 1 / x

    group = Formation("tg").add_function("inv", inv, on_error="skip")
    f = Formation("dag").add_map("tg", formation=group)
    with pytest.raises(FormationRuntimeError, match=r"item 1: PayloadError") as info:
        f.run([1, 0, 2], store=store)
    with pytest.raises(FormationRuntimeError, match=r"item 1: PayloadError: item 1 has no result"):
        f.resume(info.value.run_id, store=store)
    assert counter.calls == {1: 1, 0: 1, 2: 1}
