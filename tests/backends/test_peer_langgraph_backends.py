"""LangGraph ports (see tests/formation/test_peer_langgraph_more.py) on each backend: joins
in loops, error handlers that loop, Send inside a loop, and resumes that do not repeat
journalled work behave on Ray as on threads. Nodes are module-level functions (Ray
pickles them); calls are counted in a file, as a Ray node runs in another process."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def _identity(x: Any) -> Any:
    return x


def _times_100(n: int) -> int:
    return n * 100


def _meet(d: dict[str, int]) -> dict[str, int]:
    return d


def _next_round(d: dict[str, int]) -> int:
    return d["always"] + 1


def _is_even(n: int) -> bool:
    return n % 2 == 0


def _below_3(n: int) -> bool:
    return n < 3


def _below_10(n: int) -> bool:
    return n < 10


def test_a_join_in_a_loop_fires_with_one_branch_in_the_rounds_the_other_is_skipped_on_each_backend(
    backend: str,
) -> None:
    # langgraph test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge_via_branch, in a cycle
    f = (Formation("skip_round").add_function("entry", _identity).add_function("fork", _identity)
         .add_function("always", _identity).add_function("even_only", _times_100)
         .add_function("meet", _meet).add_function("next", _next_round).add_function("done", _identity)
         .connect("entry", "fork").connect("fork", "always", "meet")
         .connect("fork", "even_only", when=_is_even).connect("even_only", "meet").connect("meet", "next")
         .connect("next", "fork", when=_below_3).connect("next", "done", otherwise=True))
    result = f.run(0, backend=backend)
    assert result.output == 3
    assert result.nodes["meet"].outputs == [{"always": 0, "even_only": 0}, {"always": 1},
                                            {"always": 2, "even_only": 200}]


def _fetch_from_two(n: int) -> int:
    if n < 2:
        raise TimeoutError(f"attempt {n} timed out")
    return n


def _handle(failure: NodeFailure) -> int:
    return int(failure.input) + 1


def _report(fetch: int | None = None, handler: int | None = None) -> str:
    return f"fetched {fetch}" if handler is None else f"gave up at {handler}"


def test_a_join_after_an_error_handler_loop_gets_the_value_that_leaves_it_on_each_backend(backend: str) -> None:
    # langgraph test_error_handler_parallel.py, the handler's loop and the node's success meeting after it
    f = (Formation("retry_loop").add_function("entry", _identity).add_function("fetch", _fetch_from_two)
         .add_function("handler", _handle).add_function("report", _report)
         .connect("entry", "fetch", "report").connect("fetch", "handler", on_error=True)
         .connect("handler", "fetch", when=_below_10).connect("handler", "report", otherwise=True))
    result = f.run(0, backend=backend)
    assert result.outputs == {"report": "fetched 2"}
    assert result.nodes["handler"].outputs == [1, 2]


def _plan(n: int) -> list[int]:
    return list(range(n))


def _times_10(i: int) -> int:
    return i * 10


def _size_plus_one(xs: list[int]) -> int:
    return len(xs) + 1


def _below_4(n: int) -> bool:
    return n < 4


def test_send_inside_a_loop_maps_each_rounds_list_on_each_backend(backend: str) -> None:
    # langgraph test_pregel.py::test_send_sequences (Send packets issued again in later steps)
    f = (Formation("send_loop").add_function("entry", _identity).add_function("plan", _plan)
         .add_map("work", _times_10, max_workers=2).add_function("reduce", _size_plus_one)
         .add_function("done", _identity)
         .connect("entry", "plan", "work", "reduce")
         .connect("reduce", "plan", when=_below_4).connect("reduce", "done", otherwise=True))
    result = f.run(1, backend=backend)
    assert result.output == 4
    assert result.nodes["work"].outputs == [[0], [0, 10], [0, 10, 20]]


def _calls(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _logged_step(log: Path, broken: Path, x: int) -> int:
    with log.open("a") as out:
        out.write(f"step:{x}\n")
    if x == 1 and broken.exists():
        raise ConnectionError("flaky")
    return x + 1


def test_a_run_that_failed_in_its_second_round_resumes_from_there_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    # langgraph test_pregel.py::test_checkpoint_recovery
    log, broken = tmp_path / "calls.txt", tmp_path / "broken"
    broken.touch()
    f = (Formation("recover").add_function("start", _identity)
         .add_function("step", functools.partial(_logged_step, log, broken)).add_function("done", _identity)
         .connect("start", "step").connect("step", "step", when=_below_3).connect("step", "done", otherwise=True))
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError):
            f.run(0, store=store, run_id="recover-1", backend=backend)
        broken.unlink()
        result = f.resume("recover-1", store=store, backend=backend)
    assert result.output == 3
    assert sorted(_calls(log)) == ["step:0", "step:1", "step:1", "step:2"]


def _generate(log: Path, subject: str) -> str:
    with log.open("a") as out:
        out.write(f"{subject}\n")
    return f"joke about {subject}"


def _review(joke: str) -> str:
    return f"{joke} ({interrupt(joke)})" if "dogs" in joke else joke


def test_an_interrupt_in_one_item_of_a_map_over_a_subgraph_reruns_only_that_item_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    # langgraph test_pregel.py::test_send_to_nested_graphs (the subgraph per Send interrupts; resume)
    log = tmp_path / "generated.txt"
    inner = (Formation("joke").add_function("generate", functools.partial(_generate, log))
             .add_function("review", _review).connect("generate", "review"))
    f = Formation("jokes").add_map("jokes", formation=inner, max_workers=2)
    with RunStore(tmp_path / "runs.sqlite") as store:
        first = f.run(["cats", "dogs", "owls"], store=store, backend=backend)
        assert first.interrupt is not None and first.interrupt["payload"] == "joke about dogs"
        done = f.resume(first.run_id, store=store, answer="approved", backend=backend)
    assert done.output == ["joke about cats", "joke about dogs (approved)", "joke about owls"]
    assert sorted(_calls(log)) == ["cats", "dogs", "owls"]


def _stuck_unless_zero(x: int) -> int:
    if x:
        time.sleep(30)
    return x


@pytest.mark.ray
@pytest.mark.xfail(strict=True, reason="on Ray an abandoned attempt kills its replica's process and new work "
                   "waits ~1-2 s for Ray to restart it; DESIGN: its node takes new work at once")
def test_a_node_takes_new_work_at_once_after_an_attempt_stuck_in_blocking_code_timed_out_on_ray(
    ray_session: Any,
) -> None:
    # langgraph test_pregel_async.py::test_step_timeout_on_stream_hang (the graph stays usable after a step timeout)
    f = Formation("stuck").add_function("work", _stuck_unless_zero, timeout=0.3)
    with f.start(backend="ray") as running:
        assert running.submit(0).result(60).output == 0  # the replica is up
        with pytest.raises(FormationRuntimeError, match=r"timed out"):
            running.submit(1).result(60)
        t0 = time.perf_counter()
        assert running.submit(0).result(60).output == 0
        took = time.perf_counter() - t0
    assert took < 0.4


async def _hang_marked(marker: Path, x: int) -> int:
    marker.with_suffix(".started").touch()
    try:
        await asyncio.sleep(30)
    finally:
        marker.with_suffix(".unwound").touch()
    return x


def _first_logged(log: Path, x: int) -> int:
    with log.open("a") as out:
        out.write("first\n")
    return x + 1


def _times_ten(x: int) -> int:
    return x * 10


async def _appears(path: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def test_cancelling_the_task_awaiting_asubmit_keeps_the_journal_and_unwinds_the_async_node_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    # langgraph test_pregel_async.py::test_checkpoint_put_after_cancellation
    log, marker = tmp_path / "calls.txt", tmp_path / "hang"
    f = (Formation("cancel_kept").add_function("first", functools.partial(_first_logged, log))
         .add_function("second", functools.partial(_hang_marked, marker)).connect("first", "second"))

    async def main(store: RunStore) -> bool:
        async with f.astart(backend=backend, store=store) as running:
            task = asyncio.ensure_future(running.asubmit(1, run_id="cancel-kept-1"))
            assert await _appears(marker.with_suffix(".started"), 60)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await _appears(marker.with_suffix(".unwound"), 5)

    with RunStore(tmp_path / "runs.sqlite") as store:
        assert asyncio.run(main(store))
        assert store.get("cancel-kept-1").status == "cancelled"
        f.graph.nodes["second"]["fn"] = _times_ten
        assert f.resume("cancel-kept-1", store=store, backend=backend).output == 20
    assert _calls(log) == ["first"]
