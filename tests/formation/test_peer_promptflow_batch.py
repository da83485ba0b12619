"""Batch runs and aggregation, ported from Microsoft Prompt flow's own tests (microsoft/promptflow,
``src/promptflow/tests/executor/e2etests/test_batch_engine.py``, ``test_batch_timeout.py``,
``test_executor_timeout.py``, ``test_executor_happypath.py`` (``exec_bulk``) and
``test_activate.py::test_aggregate_bypassed_nodes``, with the flows they run:
``python_tool_partial_failure``, ``one_line_of_bulktest_timeout``,
``conditional_flow_with_aggregate_bypassed``, ``aggregation_node_failed``).

A batch is either many runs submitted to one started formation (a line is a run, its future
its line result) or one run whose map node runs the line formation once per item
(``add_map(name, formation=line)``) with an aggregation node after it.

Deliberately different (docs/formations.md "Maps"):
- A line that fails inside a map fails the map node (``MapItemsError``, its ``errors`` by
  item), so its aggregation does not run; Prompt flow aggregates over the completed lines.
  An error edge inside the line formation turns a failed line into a value, and the batch goes
  on (:func:`test_an_error_edge_inside_the_line_keeps_the_batch_going_and_aggregates_the_good_lines`).
- An empty batch is refused by Prompt flow (``EmptyInputsData``); a map over ``[]`` gives ``[]``.
- Prompt flow's ``batch_timeout_sec`` leaves the lines finished in time completed; a map
  node's ``timeout`` bounds the whole visit and fails the node, the finished lines' outputs
  kept in its inner traces.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter, Gate, InFlight
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def my_python_tool_with_failed_line(idx: int, mod: int) -> int:
    if idx % mod == 0:
        raise Exception("Failed")
    return idx


def partial_failure() -> Formation:
    """python_tool_partial_failure: tool 1 on ``idx`` and ``mod``, tool 2 on tool 1's output
    and ``mod_2``."""

    def tool_1(inputs: dict[str, int]) -> int:
        return my_python_tool_with_failed_line(inputs["idx"], inputs["mod"])

    def tool_2(inputs: dict[str, int], tool_1: int) -> int:
        return my_python_tool_with_failed_line(tool_1, inputs["mod_2"])

    return (Formation("python_tool_partial_failure").add_function("inputs", lambda x: x)
            .add_function("tool_1", tool_1).add_function("tool_2", tool_2)
            .connect("inputs", "tool_1", "tool_2").connect("inputs", "tool_2"))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    s = RunStore(tmp_path / "runs.db")
    yield s
    s.close()


def test_a_batch_of_lines_gives_one_result_per_line_in_line_order() -> None:
    """From test_batch_engine.py::test_batch_run (``completed_lines == nlines``; output i has
    ``line_number == i``), with the first line finishing last."""
    first = Gate()

    def classify(x: int) -> str:
        if x == 0:
            first(x)
        return f"line {x}"

    f = Formation("web_classification").add_function("classify", classify, concurrency=2)
    with f.start() as running:
        futures = [running.submit(i) for i in range(4)]
        assert first.reached.wait(5)
        assert [fu.result(5).output for fu in futures[1:]] == ["line 1", "line 2", "line 3"]
        assert not futures[0].done()
        first.opened.set()
        assert [fu.result(5).output for fu in futures] == [f"line {i}" for i in range(4)]


def test_failed_lines_fail_alone_and_the_node_status_summary_counts_them() -> None:
    """From test_batch_engine.py::test_batch_with_partial_failure (10 lines: 5 completed, 5
    failed; ``tool_1.completed: 7, tool_1.failed: 3, tool_2.completed: 5, tool_2.failed: 2``)."""
    summary = Counter()
    completed: list[int] = []
    with partial_failure().start() as running:
        futures = [running.submit({"idx": i, "mod": 3, "mod_2": 5}) for i in range(1, 11)]
        for future in futures:
            try:
                result = future.result(10)
            except FormationRuntimeError as err:
                nodes = err.nodes
            else:
                completed.append(result.output)
                nodes = result.nodes
            for name in ("tool_1", "tool_2"):
                if nodes[name].status != "skipped":
                    summary.hit(f"{name}.{nodes[name].status.value}")
    assert completed == [1, 2, 4, 7, 8]
    assert summary.calls == {"tool_1.succeeded": 7, "tool_1.failed": 3, "tool_2.succeeded": 5, "tool_2.failed": 2}


def test_a_failed_lines_error_names_its_node_and_keeps_its_inputs_output() -> None:
    """From test_batch_engine.py::test_batch_with_line_number (only lines 0 and 6 complete;
    the others are failed lines with their error)."""
    with partial_failure().start() as running:
        future = running.submit({"idx": 3, "mod": 3, "mod_2": 5})
        with pytest.raises(FormationRuntimeError) as info:
            future.result(10)
    err = info.value
    assert err.node == "tool_1" and err.run_id == future.run_id and str(err.__cause__) == "Failed"
    assert err.outputs == {"inputs": {"idx": 3, "mod": 3, "mod_2": 5}}


def test_a_line_past_its_timeout_fails_alone_its_stuck_node_cancelled(held: Gate) -> None:
    """From test_batch_timeout.py::test_batch_with_one_line_timeout (3 lines, line 2 times out:
    ``my_python_tool.completed: 3``, ``my_python_tool_with_failed_line.canceled: 1``, "Line 2
    execution timeout for exceeding 5 seconds")."""

    def with_failed_line(x: int) -> int:
        return held(x) if x == 2 else x

    f = (Formation("one_line_of_bulktest_timeout").add_function("my_python_tool", lambda x: x)
         .add_function("my_python_tool_with_failed_line", with_failed_line)
         .connect("my_python_tool", "my_python_tool_with_failed_line"))
    with f.start() as running:
        futures = [running.submit(i, timeout=0.3) for i in range(3)]
        assert [futures[i].result(5).output for i in (0, 1)] == [0, 1]
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.3s; unfinished: my_python_tool_with_failed_line"):
            futures[2].result(5)
    err = futures[2].exception()
    assert isinstance(err, FormationRuntimeError) and err.node is None and err.outputs == {"my_python_tool": 2}
    assert err.nodes["my_python_tool"].status == "succeeded"
    assert err.nodes["my_python_tool_with_failed_line"].status == "cancelled"


def test_every_line_past_its_timeout_fails_and_none_is_left_waiting(held: Gate) -> None:
    """From test_batch_timeout.py::test_batch_with_line_timeout (samples_all_timeout: both
    lines fail, ``completed_lines == 0``) and test_executor_timeout.py (each line's error says
    it timed out)."""
    f = (Formation("one_line_of_bulktest_timeout").add_function("my_python_tool", lambda x: x)
         .add_function("my_python_tool_with_failed_line", held).connect("my_python_tool", "my_python_tool_with_failed_line"))
    started = time.monotonic()
    with f.start() as running:
        futures = [running.submit(i, timeout=0.3) for i in range(2)]
        errors = [fu.exception(5) for fu in futures]
    assert time.monotonic() - started < 4
    assert all(isinstance(e, FormationRuntimeError) and "timed out after 0.3s" in str(e) for e in errors)


def test_lines_run_at_once_up_to_the_maps_workers() -> None:
    """From test_batch_engine.py (the batch engine's worker count bounds the lines in flight)."""
    flight = InFlight()
    three_in = threading.Barrier(3, timeout=5)

    def line(x: int) -> int:
        with flight:
            three_in.wait()
            return x

    result = Formation("batch").add_map("lines", formation=Formation("line").add_function("line", line), max_workers=3) \
        .run(list(range(6)))
    assert result.output == list(range(6)) and flight.peak == 3


def test_an_aggregation_node_runs_once_over_every_lines_output() -> None:
    """From test_executor_happypath.py::test_executor_exec_bulk_with_metrics and
    classification_accuracy_evaluation (``grade`` per line, ``calculate_accuracy`` once over
    the batch: ``{"accuracy": ...}``)."""
    calls = Counter()

    def grade(row: dict[str, str]) -> str:
        return "Correct" if row["groundtruth"] == row["prediction"] else "Incorrect"

    def calculate_accuracy(grades: list[str]) -> dict[str, float]:
        calls.hit("aggregate")
        return {"accuracy": round(grades.count("Correct") / len(grades), 2)}

    line = Formation("line").add_function("grade", grade)
    f = (Formation("classification_accuracy_evaluation").add_map("grade", formation=line)
         .add_function("calculate_accuracy", calculate_accuracy).connect("grade", "calculate_accuracy"))
    rows = [{"groundtruth": g, "prediction": p} for g, p in (("App", "App"), ("Pdf", "App"), ("Channel", "Channel"))]
    result = f.run(rows)
    assert result.output == {"accuracy": 0.67} and calls.count("aggregate") == 1
    assert result.nodes["grade"].output == ["Correct", "Incorrect", "Correct"]
    assert result.nodes["grade/grade"].visits == 3


def aggregate_bypassed() -> Formation:
    """conditional_flow_with_aggregate_bypassed: each line doubles or squares its value by its
    case; the aggregations average what each branch gave, over the lines it ran in."""
    line = (Formation("line").add_function("inputs", lambda x: x)
            .add_function("double", lambda x: x["value"] * 2).add_function("square", lambda x: x["value"] ** 2)
            .add_function("collect_node", lambda double=None, square=None: {"double": double, "square": square})
            .connect("inputs", "double", when=lambda x: x["case"] == "double")
            .connect("inputs", "square", when=lambda x: x["case"] == "square")
            .connect("double", "collect_node").connect("square", "collect_node"))

    def average(of: str) -> Any:
        def aggregation(rows: list[dict[str, int | None]]) -> float:
            values = [v for r in rows if (v := r[of]) is not None]
            return sum(values) / len(values)
        return aggregation

    return (Formation("conditional_flow_with_aggregate_bypassed").add_map("lines", formation=line)
            .add_function("aggregation_double", average("double")).add_function("aggregation_square", average("square"))
            .connect("lines", "aggregation_double").connect("lines", "aggregation_square"))


def test_aggregations_see_each_lines_bypassed_branch_as_none() -> None:
    """From test_activate.py::test_aggregate_bypassed_nodes (expected outputs ``{"double": 2,
    "square": ""}`` ... ``{"double": null, "square": 16}``; ``aggregation_double == 3``,
    ``aggregation_square == 12.5``)."""
    rows = [{"case": "double", "value": 1}, {"case": "double", "value": 2},
            {"case": "square", "value": 3}, {"case": "square", "value": 4}]
    result = aggregate_bypassed().run(rows)
    assert result.nodes["lines"].output == [{"double": 2, "square": None}, {"double": 4, "square": None},
                                            {"double": None, "square": 9}, {"double": None, "square": 16}]
    assert result.outputs == {"aggregation_double": 3, "aggregation_square": 12.5}


def test_a_branch_bypassed_in_some_lines_counts_only_the_lines_it_ran_in() -> None:
    """From test_activate.py::assert_activate_bulk_run_result (``node_status``: per node, the
    lines it completed in; the others bypassed)."""
    rows = [{"case": "double", "value": 1}, {"case": "double", "value": 2},
            {"case": "square", "value": 3}, {"case": "square", "value": 4}]
    nodes = aggregate_bypassed().run(rows).nodes
    assert (nodes["lines/double"].visits, nodes["lines/double"].outputs) == (2, [2, 4])
    assert (nodes["lines/square"].visits, nodes["lines/square"].outputs) == (2, [9, 16])
    assert nodes["lines/collect_node"].visits == 4


def test_a_failing_aggregation_fails_the_run_but_keeps_every_lines_output() -> None:
    """From test_batch_engine.py::test_batch_run_with_aggregation_failure (aggregation_node_failed:
    every line completed, ``failed_lines == 0``; the aggregation's error "(ZeroDivisionError)
    division by zero")."""

    def aggregate(processed: list[int]) -> float:
        return sum(processed) / 0

    line = Formation("line").add_function("passthrough", lambda x: x * 2)
    f = (Formation("aggregation_node_failed").add_map("lines", formation=line).add_function("aggregate", aggregate)
         .connect("lines", "aggregate"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run([1, 2, 3])
    err = info.value
    assert err.node == "aggregate" and isinstance(err.__cause__, ZeroDivisionError)
    assert err.outputs == {"lines": [2, 4, 6]} and err.nodes["lines/passthrough"].outputs == [2, 4, 6]


def test_a_failing_line_in_a_map_fails_the_map_naming_the_line() -> None:
    """From test_batch_engine.py::test_batch_with_partial_failure (a line's failure does not fail
    the batch in Prompt flow). Ours: the map fails, its ``MapItemsError`` naming each failed line
    (module docstring)."""
    line = Formation("line").add_function("tool", lambda x: my_python_tool_with_failed_line(x, 3))
    f = Formation("batch").add_map("lines", formation=line).add_function("aggregate", sum).connect("lines", "aggregate")
    with pytest.raises(FormationRuntimeError) as info:
        f.run([1, 2, 3, 4, 5, 6])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and sorted(cause.errors) == [2, 5]
    assert info.value.nodes["aggregate"].status == "skipped"
    assert info.value.nodes["lines/tool"].outputs == [1, 2, 4, 5]


def test_an_error_edge_inside_the_line_keeps_the_batch_going_and_aggregates_the_good_lines() -> None:
    """From test_batch_engine.py::test_batch_with_partial_failure (failed lines do not fail the
    batch; the completed lines' outputs are aggregated)."""

    def failed(failure: NodeFailure) -> dict[str, str]:
        return {"error": f"{failure.node}: {failure.error}"}

    line = (Formation("line").add_function("tool", lambda x: my_python_tool_with_failed_line(x, 3))
            .add_function("failed", failed).connect("tool", "failed", on_error=True))

    def aggregate(lines: list[Any]) -> dict[str, Any]:  # a line's one output: the tool's, or its handler's
        return {"completed": [r for r in lines if not isinstance(r, dict)],
                "failed_lines": sum(isinstance(r, dict) for r in lines)}

    f = Formation("batch").add_map("lines", formation=line).add_function("aggregate", aggregate).connect("lines", "aggregate")
    result = f.run([1, 2, 3, 4, 5, 6])
    assert result.output == {"completed": [1, 2, 4, 5], "failed_lines": 2}
    assert result.nodes["lines"].output[2] == {"error": "tool: Failed"}


def test_a_line_timeout_inside_a_map_is_a_failed_line_an_error_edge_takes(held: Gate) -> None:
    """From test_batch_timeout.py::test_batch_with_one_line_timeout (line 2 is cancelled for its
    timeout; the other lines complete), with the line's node ``timeout`` inside a map."""

    def with_failed_line(x: int) -> int:
        return held(x) if x == 2 else x

    line = (Formation("line").add_function("my_python_tool_with_failed_line", with_failed_line, timeout=0.3)
            .add_function("timed_out", lambda f: f"timeout: {type(f.error).__name__}")
            .connect("my_python_tool_with_failed_line", "timed_out", on_error=True))
    result = Formation("batch").add_map("lines", formation=line).run([0, 1, 2])
    assert result.output == [0, 1, "timeout: NodeTimeoutError"]


def test_a_batch_timeout_keeps_the_traces_of_every_line_the_finished_and_the_cut(held: Gate) -> None:
    """From test_batch_timeout.py::test_batch_timeout (``batch_timeout_sec``: lines 0 and 1
    completed, line 2 canceled, ``node_status`` counting all three lines' nodes)."""

    def with_failed_line(x: int) -> int:
        return held(x) if x == 2 else x

    line = (Formation("line").add_function("my_python_tool", lambda x: x)
            .add_function("my_python_tool_with_failed_line", with_failed_line)
            .connect("my_python_tool", "my_python_tool_with_failed_line"))
    f = Formation("batch").add_map("lines", formation=line, timeout=0.3)
    with pytest.raises(FormationRuntimeError) as info:
        f.run([0, 1, 2])
    nodes = info.value.nodes
    assert nodes["lines"].status == "failed" and "timed out after 0.3s" in (nodes["lines"].error or "")
    assert (nodes["lines/my_python_tool"].visits, nodes["lines/my_python_tool"].outputs) == (3, [0, 1, 2])
    cut = nodes["lines/my_python_tool_with_failed_line"]
    assert (cut.status, cut.visits, cut.outputs) == ("cancelled", 3, [0, 1])


def test_a_resumed_batch_runs_only_the_lines_that_had_failed(store: RunStore) -> None:
    """From test_batch_engine.py::test_batch_resume and test_batch_resume_aggregation (a batch
    resumed from an earlier run: ``completed_lines == 3``, ``grade.completed: 3``,
    ``calculate_accuracy.completed: 1``; only what had not completed runs again)."""
    calls = Counter()
    broken = threading.Event()
    broken.set()

    def grade(x: int) -> int:
        calls.hit(x)
        if x == 2 and broken.is_set():
            raise ConnectionError("rate limited")
        return x * 10

    line = Formation("line").add_function("grade", grade)
    f = (Formation("classification_accuracy_evaluation").add_map("grade", formation=line, max_workers=2)
         .add_function("calculate_accuracy", sum).connect("grade", "calculate_accuracy"))
    with pytest.raises(FormationRuntimeError):
        f.run([1, 2, 3], store=store, run_id="web_classification_default")
    broken.clear()
    result = f.resume("web_classification_default", store=store)
    assert result.output == 60 and calls.calls == {1: 1, 2: 2, 3: 1}
    assert store.get("web_classification_default").status == "succeeded"


def test_a_batch_resumed_after_its_timeout_reruns_only_the_cut_lines_unfinished_node(store: RunStore) -> None:
    """From test_batch_engine.py::test_batch_resume (resume from a run whose line 2 had not
    completed: ``completed_lines == 3``), the earlier run cut by its batch timeout: the lines
    that finished and the cut line's finished node are not run again."""
    calls = Counter()
    stuck, released = threading.Event(), threading.Event()
    stuck.set()

    def my_python_tool(x: int) -> int:
        calls.hit(("my_python_tool", x))
        return x

    def with_failed_line(x: int) -> int:
        calls.hit(("with_failed_line", x))
        if x == 2 and stuck.is_set():
            released.wait(5)
        return x * 10

    line = (Formation("line").add_function("my_python_tool", my_python_tool)
            .add_function("with_failed_line", with_failed_line).connect("my_python_tool", "with_failed_line"))
    f = Formation("batch").add_map("lines", formation=line, timeout=0.3).add_function("total", sum).connect("lines", "total")
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.3s"):
            f.run([0, 1, 2], store=store, run_id="batch")
        stuck.clear()
        result = f.resume("batch", store=store)
    finally:
        released.set()
    assert result.output == 30
    assert calls.calls == {("my_python_tool", 0): 1, ("my_python_tool", 1): 1, ("my_python_tool", 2): 1,
                           ("with_failed_line", 0): 1, ("with_failed_line", 1): 1, ("with_failed_line", 2): 2}


def test_every_line_of_a_stored_batch_is_a_run_in_the_store(store: RunStore) -> None:
    """From test_batch_engine.py::test_batch_storage (every line's flow run is persisted, with
    its status)."""
    with partial_failure().start(store=store) as running:
        futures = [running.submit({"idx": i, "mod": 3, "mod_2": 5}) for i in range(1, 5)]
        for future in futures:
            future.exception(10)
    by_id = {r.id: r.status for r in store.runs()}
    assert [by_id[f.run_id] for f in futures] == ["succeeded", "succeeded", "failed", "succeeded"]


def test_an_empty_batch_is_an_empty_list_for_the_aggregation() -> None:
    """From test_batch_engine.py::test_batch_run_failure (empty_inputs.jsonl: Prompt flow raises
    ``EmptyInputsData``). Ours maps ``[]`` to ``[]`` (module docstring)."""
    line = Formation("line").add_function("grade", lambda x: x)
    f = Formation("batch").add_map("grade", formation=line).add_function("count", len).connect("grade", "count")
    assert f.run([]).output == 0


def test_a_batch_runs_from_inside_a_running_event_loop() -> None:
    """From test_batch_engine.py::test_batch_run_in_existing_loop (``asyncio.run`` of a coroutine
    that submits a batch run)."""
    f = Formation("prompt_tools").add_map("lines", formation=Formation("line").add_function("echo", str.upper))

    async def main() -> tuple[list[str], list[str]]:
        blocking = f.run(["a", "b"]).output   # the sync API blocks this loop, and works
        awaited = await f.arun(["c", "d"])
        return blocking, awaited.output

    assert asyncio.run(main()) == (["A", "B"], ["C", "D"])


def test_a_batchs_token_usage_is_the_sum_of_its_lines() -> None:
    """From test_batch_engine.py::test_batch_with_openai_metrics (``system_metrics.total_tokens``,
    ``prompt_tokens`` and ``completion_tokens`` > 0 over the batch)."""
    model = ScriptedProvider([lambda request: f"class of {request.messages[-1].text}"], cycle=True)
    line = Formation("line").add_agent("classify_with_llm", Agent("classify", provider=model))
    result = Formation("web_classification").add_map("lines", formation=line).run(["u1", "u2", "u3"])
    assert result.output == ["class of u1", "class of u2", "class of u3"]
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.usage.total_tokens == result.nodes["lines/classify_with_llm"].usage.total_tokens
