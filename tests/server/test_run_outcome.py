"""A succeeded run's record built from its result (``_run_outcome.settled``), and a failed
run's built from its events and its error (``_run_outcome.failed``) before the run's own
``run_failed`` event is in."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from tests.support.peers import until
from wingman_actors.core import Usage
from wingman_actors.errors import RunTimeoutError
from wingman_actors.formation import Formation
from wingman_actors.formation._result import FormationResult, NodeStatus, NodeTrace
from wingman_actors.formation.events import FormationEventType
from wingman_actors.server._live import RunLog
from wingman_actors.server._run_outcome import Tracker, failed, settled
from wingman_actors.server._schemas import RunOut


class _Reply(BaseModel):
    text: str


class _Opaque:
    def __str__(self) -> str:
        return "opaque"


def _as_json(trace: NodeTrace) -> dict[str, Any]:
    """What a trace's record is: its dict as JSON, its times in RFC 3339."""
    data = json.loads(json.dumps(trace.to_dict(), default=lambda v: v.model_dump() if isinstance(v, BaseModel)
                                 else str(v)))
    for key in ("started_at", "finished_at"):
        if data[key] is not None:
            data[key] = datetime.fromtimestamp(data[key], UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return data


def test_a_succeeded_runs_node_traces_are_its_results_traces_as_json_with_rfc3339_times() -> None:
    traces = {
        "a": NodeTrace("a", NodeStatus.SUCCEEDED, 1, 2, 1_795_728_114.0755658, 1_795_728_114.9999996, 0.25,
                       Usage(input_tokens=3, output_tokens=4), None, None, _Reply(text="hi"), [_Reply(text="hi")]),
        "b": NodeTrace("b", NodeStatus.SKIPPED, error="a failed before it"),
        "c": NodeTrace("c", NodeStatus.SUCCEEDED, 1, 1, 1_795_728_115.5, 1_795_728_115.75, 0.01,
                       output={"n": [1, 2.5, None]}, outputs=[_Opaque()]),
    }
    result = FormationResult("r1", {"n": [1, 2.5, None]}, {"c": {"n": [1, 2.5, None]}}, traces, 1.5)
    run = RunOut(id="r1", status="running", outputs={}, nodes={}, usage={}, created_at="2026-11-26T00:00:00Z")
    record = settled(run, result)
    assert record.nodes == {name: _as_json(trace) for name, trace in traces.items()}
    assert record.nodes["a"]["finished_at"] == "2026-11-26T21:21:55.000Z"  # rounded to the microsecond first
    assert record.usage == {"input_tokens": 3, "output_tokens": 4, "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 0, "reasoning_tokens": 0, "total_tokens": 7}
    assert (record.status, record.output, record.duration_s) == ("succeeded", {"n": [1, 2.5, None]}, 1.5)


def test_a_failed_runs_record_built_before_its_run_failed_event_cuts_a_node_when_its_traces_do() -> None:
    gate = threading.Event()

    def held(text: str) -> str:
        gate.wait(10)
        return text

    formation = Formation("held").add_function("clean", str.strip).add_function("held", held).connect("clean", "held")
    log = RunLog("r1")
    with formation.start() as running:
        try:
            error = running.submit(" x ", timeout=0.3, on_event=log).exception(10)
            assert until(lambda: any(e.type is FormationEventType.RUN_FAILED for e in log.events()), within=10)
        finally:
            gate.set()
    assert isinstance(error, RunTimeoutError)
    early = RunLog("r1")  # the run's events as the record is built when its future fails first
    for event in log.events():
        if event.type is not FormationEventType.RUN_FAILED:
            early(event)
    cut = error.nodes["held"]
    end = cut.finished_at
    assert cut.status is NodeStatus.CANCELLED and end is not None
    assert until(lambda: time.time() > end + 0.005)  # the record is built later than that, to the millisecond
    run = RunOut(id="r1", status="running", outputs={}, nodes={}, usage={}, created_at="2026-11-28T00:00:00Z")

    record = failed(run, error, Tracker(formation, early), time.perf_counter(), timed_out=True)

    node = record.nodes["held"]
    assert (node["status"], node["finished_at"]) == ("cancelled", _as_json(cut)["finished_at"])
    assert record.nodes["clean"]["status"] == "succeeded"
