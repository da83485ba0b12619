"""LangServe's served runnables (langchain-ai/langserve ``tests/unit_tests/test_server_client.py``)
as formations on backend="ray": what the server streams and answers comes from the same run,
its events, results and input checks, whichever backend runs the nodes."""

from __future__ import annotations

import pytest

from tests.server.functions_langserve import add_one, mul_2, slow
from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, PayloadError
from wingman_actors.formation.events import FormationEventType

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def served() -> Formation:
    return Formation("served").add_function("add_one", add_one).add_function("mul_2", mul_2).connect("add_one", "mul_2")


def test_a_run_on_ray_streams_each_node_input_then_its_output() -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_astream_events
    (on_chain_start with the input, on_chain_end with the output) on backend="ray"."""
    events = list(served().run_stream(1, backend="ray", timeout=120))
    nodes = [(e.type, e.node, e.data.get("input", e.data.get("output"))) for e in events
             if e.type in (FormationEventType.NODE_STARTED, FormationEventType.NODE_FINISHED)]
    assert nodes == [(FormationEventType.NODE_STARTED, "add_one", 1), (FormationEventType.NODE_FINISHED, "add_one", 2),
                     (FormationEventType.NODE_STARTED, "mul_2", 2), (FormationEventType.NODE_FINISHED, "mul_2", 4)]
    assert events[-1].type is FormationEventType.RUN_FINISHED and events[-1].data["result"].output == 4


def test_an_input_that_does_not_fit_the_entry_node_on_ray_fails_at_once_naming_it() -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_input_validation on backend="ray"."""
    with pytest.raises(FormationRuntimeError) as caught:
        served().run("hello", backend="ray", timeout=120)
    assert caught.value.node == "add_one" and caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, PayloadError)


def test_many_inputs_through_one_started_formation_on_ray_each_get_their_own_output() -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_abatch on backend="ray"."""
    f = Formation("batch").add_function("slow", slow, concurrency=2)
    with f.start(backend="ray") as running:
        futures = [running.submit(x, timeout=120) for x in range(4)]
        assert [future.result(timeout=120).output for future in futures] == [1, 2, 3, 4]
