"""Behaviours ported from Apache Airflow's own test suite (apache/airflow,
``airflow-core/tests/unit/models/test_mappedoperator.py`` and
``task-sdk/tests/task_sdk/definitions/test_taskgroup.py``): dynamic task mapping and task
groups, some of them on ``backend="ray"``. (Trigger rules and branches are in
``test_peer_airflow.py``.)

``task.expand(x=upstream)`` is ``add_map``: one call per item, the outputs in item order (an
Airflow ``map_index`` is our item index, the key of ``MapItemsError.errors``);
``partial(...)`` is ``functools.partial``; ``expand_kwargs`` maps a function of a dict; a
mapped task group is ``add_map(name, formation=group)``. A ``TaskGroup`` is a nested
formation (``add_formation``): its tasks are named with the group's name as a prefix
(``"group/task"``) in traces and events, as Airflow prefixes ``group_id.task_id``.

Deliberately different (DESIGN.md documents ours):
- A task mapped over an empty list is skipped in Airflow; our map node outputs ``[]``
  (DESIGN "An empty list gives an empty list") and its downstream runs on it.
- A failed map index fails only that task instance in Airflow (the others stay
  succeeded); our map node fails as one node (``MapItemsError`` listing the failed items by
  index), after retrying only those items.
"""

from __future__ import annotations

import functools
import time
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, MapItemsError
from wingman_actors.formation.events import FormationEvent


def double(x: int) -> int:
    return 2 * x


# --- dynamic task mapping ------------------------------------------------------------------


def test_a_mapped_task_runs_once_per_item_and_outputs_the_results_in_item_order() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance."""
    calls = Counter()

    def task(x: int) -> int:
        calls.hit(x)
        return x * 10

    assert Formation("dag").add_map("task", task).run([3, 1, 2]).output == [30, 10, 20]
    assert calls.calls == {3: 1, 1: 1, 2: 1}


def test_a_task_mapped_over_an_upstreams_output_gets_its_list() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance (``expand(arg2=task1.output)``)."""
    f = (Formation("dag").add_function("make_list", lambda n: list(range(n))).add_map("double", double)
         .add_function("total", sum).connect("make_list", "double", "total"))
    assert f.run(4).output == 12


def test_a_task_mapped_over_an_empty_list_outputs_an_empty_list_and_its_downstream_runs() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance_skipped_on_zero.
    Airflow skips a task mapped over zero items (and its downstream); ours outputs ``[]``."""
    calls = Counter()
    f = (Formation("dag").add_function("make_list", lambda _: []).add_map("mapped", lambda x: calls.hit("item"))
         .add_function("count", len).connect("make_list", "mapped", "count"))
    result = f.run(None)
    assert result.output == 0 and result.nodes["mapped"].output == [] and calls.count("item") == 0


def test_a_partial_argument_is_shared_by_every_mapped_item() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance (``MockOperator.partial(...).expand(...)``)."""

    def add(x: int, *, offset: int) -> int:
        return x + offset

    assert Formation("dag").add_map("add", functools.partial(add, offset=100)).run([1, 2]).output == [101, 102]


def test_expand_kwargs_maps_a_function_over_a_list_of_argument_dicts() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_kwargs_mapped_task_instance."""

    def power(base: int, exp: int) -> int:
        return int(base**exp)

    f = Formation("dag").add_map("power", lambda kw: power(**kw))
    assert f.run([{"base": 2, "exp": 3}, {"base": 3, "exp": 2}]).output == [8, 9]


def test_a_failing_map_index_fails_the_node_naming_the_item_index() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_many_one_explicit_odd_setup_one_mapped_fails.
    Airflow fails only that map index; ours fails the map node, naming the index."""
    f = Formation("dag").add_map("div", lambda x: 10 // x)
    with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 1: ZeroDivisionError") as info:
        f.run([1, 0, 5])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and set(cause.errors) == {1}


def test_a_mapped_tasks_retries_rerun_only_the_failed_items() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_many_one_explicit_odd_setup_one_mapped_fails,
    with ``retries=1`` (Airflow retries each map index on its own: ours reruns only the failed items)."""
    calls = Counter()

    def flaky(x: int) -> int:
        if calls.hit(x) == 1 and x == 2:
            raise ValueError("transient")
        return x

    result = Formation("dag").add_map("flaky", flaky, retries=1, backoff=0.01).run([1, 2, 3])
    assert result.output == [1, 2, 3] and calls.calls == {1: 1, 2: 2, 3: 1}
    assert result.nodes["flaky"].attempts == 2


def test_a_mapped_tasks_failure_reaches_an_error_edge_with_every_failed_index() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_one_to_many_work_failed
    (a task that runs although the mapped one failed: an error edge)."""

    def handler(nf: Any) -> list[int]:
        return sorted(nf.error.errors)

    f = (Formation("dag").add_map("div", lambda x: 10 // x).add_function("report", handler)
         .connect("div", "report", on_error=True))
    assert f.run([0, 1, 0]).outputs == {"report": [0, 2]}


def test_a_mapped_task_skipped_after_its_failures_skips_what_depends_on_it() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_many_one_explicit_odd_setup_mapped_setups_fail
    (``my_work`` is ``upstream_failed``; with ``on_error="skip"``: the downstream reduce is skipped, as Airflow's ``upstream_failed``)."""
    f = (Formation("dag").add_map("div", lambda x: 10 // x, on_error="skip").add_function("total", sum)
         .connect("div", "total"))
    result = f.run([1, 0])
    assert (result.nodes["div"].status, result.nodes["total"].status) == ("skipped", "skipped")


def test_max_active_tis_per_dag_bounds_the_items_in_flight() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance, with a limit on the
    items in flight (Airflow's ``max_active_tis_per_dag`` on the mapped task)."""
    flight = InFlight()

    def work(x: int) -> int:
        with flight:
            time.sleep(0.01)
        return x

    assert Formation("dag").add_map("work", work, max_workers=2).run(list(range(8))).output == list(range(8))
    assert 1 <= flight.peak <= 2


def test_a_mapped_task_needs_a_list_and_says_which_upstream_sent_something_else() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance, with an upstream that
    pushes an int (Airflow raises ``UnmappableXComTypePushed``)."""
    f = Formation("dag").add_function("push", lambda _: 42).add_map("mapped", double).connect("push", "mapped")
    with pytest.raises(FormationRuntimeError, match=r"map node 'mapped' needs a list input .* got int from 'push'"):
        f.run(None)


def test_a_mapped_task_over_a_mapped_tasks_output_maps_each_result() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance (a mapped task's output
    expanded again)."""
    f = Formation("dag").add_map("first", double).add_map("second", lambda x: x + 1).connect("first", "second")
    assert f.run([1, 2, 3]).output == [3, 5, 7]


def test_a_mapped_task_group_runs_the_group_once_per_item() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_map_product_expansion (a mapped ``@task_group``)."""
    group = Formation("tg").add_function("t1", double).add_function("t2", lambda x: x + 1).connect("t1", "t2")
    f = Formation("dag").add_map("tg", formation=group)
    events: list[FormationEvent] = []
    assert f.run([1, 2], on_event=events.append).output == [3, 5]
    started = {e.node for e in events if e.type == "node_started"}
    assert {"tg/0/t1", "tg/1/t2"} <= started


def test_a_mapped_task_group_over_an_empty_list_outputs_an_empty_list() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::test_upstream_in_mapped_group_when_mapped_tasks_list_is_empty.
    Airflow schedules nothing of the group; ours outputs ``[]``."""
    group = Formation("tg").add_function("t1", double)
    assert Formation("dag").add_map("tg", formation=group).run([]).output == []


def test_a_mapped_task_group_after_a_skipped_upstream_is_skipped_and_never_expanded() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::test_mapped_task_group_finished_upstream_before_expand."""
    calls = Counter()
    group = Formation("tg").add_function("t3", lambda x: calls.hit("t3"))
    f = (Formation("dag").add_function("t2", lambda x: 1 / 0, on_error="skip").add_map("tg", formation=group)
         .connect("t2", "tg"))
    result = f.run([1, 2])
    assert result.nodes["tg"].status == "skipped" and calls.count("t3") == 0


def test_a_mapped_task_group_item_whose_last_task_was_skipped_is_not_a_silent_none() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::TestMappedSetupTeardown::test_many_one_explicit_odd_setup_one_mapped_fails
    (index 2 skipped, here inside a mapped group).
    An item whose group skipped its last task has no result (``add_formation`` skips its node
    for the same inner run): the item fails, naming why, rather than giving ``None`` as if
    the group had returned it."""
    group = Formation("tg").add_function("inv", lambda x: 1 / x, on_error="skip")
    f = Formation("dag").add_map("tg", formation=group)
    with pytest.raises(FormationRuntimeError, match=r"item 1: PayloadError: item 1 has no result: formation 'tg' skipped its sink 'inv'") as info:
        f.run([1, 0, 2])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and set(cause.errors) == {1}


# --- task groups ------------------------------------------------------------------------


def test_a_task_groups_tasks_are_named_with_the_group_as_a_prefix() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_build_task_group_with_task_decorator."""
    group = Formation("group234").add_function("task2", double).add_function("task3", lambda x: x + 1).connect("task2", "task3")
    f = Formation("dag").add_function("task1", lambda x: x).add_formation("group234", group).connect("task1", "group234")
    events: list[FormationEvent] = []
    result = f.run(1, on_event=events.append)
    assert result.output == 3
    assert {"group234/task2", "group234/task3"} <= set(result.nodes)
    assert [e.node for e in events if e.type == "node_started"] == ["task1", "group234", "group234/task2", "group234/task3"]


def test_nested_task_groups_prefix_every_level() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_build_task_group_context_manager (``group234.group34.task3``)."""
    inner = Formation("group34").add_function("task3", double)
    outer = Formation("group234").add_function("task2", lambda x: x + 1).add_formation("group34", inner).connect("task2", "group34")
    result = Formation("dag").add_formation("group234", outer).run(1)
    assert result.output == 4
    assert result.nodes["group234/group34/task3"].status == "succeeded"


def test_a_task_group_may_reuse_a_task_name_of_the_dag_around_it() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_dag_edges_task_group_structure
    (the group prefix keeps ``task1`` and ``group/task1`` apart)."""
    group = Formation("g").add_function("task1", lambda x: x + 10)
    f = Formation("dag").add_function("task1", lambda x: x).add_formation("g", group).connect("task1", "g")
    result = f.run(1)
    assert result.output == 11 and result.nodes["task1"].output == 1 and result.nodes["g/task1"].output == 11


def test_a_duplicate_group_id_is_refused_at_declaration() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_duplicate_group_id."""
    group = Formation("task1").add_function("t", double)
    f = Formation("dag").add_function("task1", double)
    with pytest.raises(FormationSetupError, match=r"already has a node named 'task1'"):
        f.add_formation("task1", group)


def test_a_skip_inside_a_task_group_reaches_a_join_after_it() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_dag_edges_task_group_structure
    (``[task6, task7, group_a's task5] >> task8``), with group_a's last task skipped: the join fires with the others."""
    group = Formation("g").add_function("fails", lambda x: 1 / 0, on_error="skip")
    f = (Formation("dag").add_function("start", lambda x: x).add_formation("g", group).add_function("other", lambda x: "O")
         .add_function("join", lambda d: d).connect("start", "g").connect("start", "other")
         .connect("g", "join").connect("other", "join"))
    result = f.run(1)
    assert result.output == {"other": "O"} and result.nodes["g"].status == "skipped"


def test_a_branch_inside_a_task_group_joins_inside_it() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_dag_edges_task_group_structure (``task2 >> [task3, task4]``
    inside a group), as a branch joined inside the group."""
    group = (Formation("g").add_function("branch", lambda x: x).add_function("a", lambda x: "A").add_function("b", lambda x: "B")
             .add_function("join", lambda d: d).connect("branch", "a", when=lambda x: x > 0)
             .connect("branch", "b", otherwise=True).connect("a", "join").connect("b", "join"))
    f = Formation("dag").add_formation("g", group).add_function("after", lambda d: sorted(d)).connect("g", "after")
    result = f.run(-1)
    assert result.output == ["b"] and result.nodes["g/a"].status == "skipped"


def test_a_failure_inside_a_task_group_names_the_task_by_its_path() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_build_task_group_with_task_decorator, with a failing task."""
    group = Formation("g").add_function("ok", double).add_function("broken", lambda x: 1 / 0).connect("ok", "broken")
    with pytest.raises(FormationRuntimeError) as info:
        Formation("dag").add_formation("g", group).run(1)
    assert info.value.nodes["g/broken"].status == "failed"
    assert info.value.nodes["g/ok"].output == 2


# --- backend="ray" --------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_mapped_task_on_ray_outputs_its_items_in_order_and_names_a_failing_index() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_mappedoperator.py::test_expand_mapped_task_instance on backend="ray"."""
    assert Formation("dag").add_map("double", double).run([1, 2, 3], backend="ray", timeout=120).output == [2, 4, 6]
    with pytest.raises(FormationRuntimeError, match=r"item 1: ZeroDivisionError"):
        Formation("dag").add_map("div", lambda x: 1 // x).run([1, 0], backend="ray", timeout=120)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_task_group_on_ray_skips_into_a_join_as_on_threads() -> None:
    """Ported from apache/airflow task-sdk/tests/task_sdk/definitions/test_taskgroup.py::test_dag_edges_task_group_structure (skip inside a group) on backend="ray"."""
    group = Formation("g").add_function("fails", lambda x: 1 / 0, on_error="skip")
    f = (Formation("dag").add_function("start", lambda x: x).add_formation("g", group).add_function("other", lambda x: "O")
         .add_function("join", lambda d: d).connect("start", "g").connect("start", "other")
         .connect("g", "join").connect("other", "join"))
    result = f.run(1, backend="ray", timeout=120)
    assert result.output == {"other": "O"} and result.nodes["g"].status == "skipped"
