"""A smoke run of the benchmark command: it runs and reports the documented JSON shape.
(Benchmarks measure; the suite never asserts on their timings.)"""

from __future__ import annotations

import json

import pytest

from wingman_actors._bench import SCENARIOS
from wingman_actors.cli import main


def test_bench_lists_the_scenarios_of_the_targets_table() -> None:
    assert list(SCENARIOS) == [
        "pipeline_throughput", "run_overhead", "cold_run", "hop_latency",
        "fleet_makespan", "fleet_node_makespan", "map_makespan", "dag_makespan", "inflight_runs", "actor_memory",
        "store_journal", "durable_pipeline_throughput", "durable_overhead", "resume_latency",
        "cancel_latency", "timeout_overshoot", "ray_cpu_stage", "ray_hop_overhead", "ray_agent_makespan",
        "nested_overhead",
    ]


def test_map_makespan_reports_the_thread_floor_of_the_same_run() -> None:
    result = SCENARIOS["map_makespan"](True)
    assert (result.name, result.unit) == ("map_makespan", "x ideal")
    assert result.baseline is not None and result.baseline > 0 and result.value > 0
    assert result.meets == (round(result.value - result.baseline, 3) <= 0.02)
    assert len(result.details["node_runs"]) == len(result.details["floor_runs"]) == 3


def test_fleet_node_makespan_reports_the_bare_fleet_of_the_same_run() -> None:
    result = SCENARIOS["fleet_node_makespan"](True)
    assert (result.name, result.unit) == ("fleet_node_makespan", "x ideal")
    assert result.baseline is not None and result.baseline > 0 and result.value > 0
    assert result.meets == (result.value <= 1.05 and round(result.value - result.baseline, 3) <= 0.02)
    assert len(result.details["node_runs"]) == len(result.details["bare_runs"]) == 3


def test_bench_json_has_machine_and_scenario_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--json", "--scenario", "cold_run", "--scenario", "hop_latency"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["machine"]["python"] and doc["machine"]["cpus"] >= 1
    assert [s["name"] for s in doc["scenarios"]] == ["cold_run", "hop_latency"]
    for s in doc["scenarios"]:
        assert {"name", "value", "unit", "target", "meets"} <= set(s)
        assert isinstance(s["meets"], bool) and s["value"] > 0


def test_bench_refuses_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--scenario", "warp_speed"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_a_missing_peer_is_reported_as_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from wingman_actors._bench.peers import NOT_INSTALLED, langgraph_overhead, langgraph_throughput

    monkeypatch.setitem(sys.modules, "langgraph.graph", None)  # makes the import fail
    assert langgraph_overhead([abs], 10, 1) == NOT_INSTALLED
    assert langgraph_throughput([abs], 10, 1) == NOT_INSTALLED
    assert "pip install" in NOT_INSTALLED


def test_peer_lines_compare_with_ours() -> None:
    from wingman_actors._bench.cli import _peer_lines

    lines = _peer_lines("run_overhead", 50.0, {"langgraph": {"version": "1.2", "invoke_us": 1000.0}})
    assert lines == ["run_overhead: langgraph 1.2: 1000 µs per invoke (20.0 x ours)"]
    lines = _peer_lines("pipeline_throughput", 30000, {"langgraph": {"version": "1.2", "batch_inputs_per_s": 750}})
    assert lines == ["pipeline_throughput: langgraph 1.2: 750 inputs/s with batch() (ours 40.0 x faster)"]
    assert _peer_lines("x", 1.0, {"langgraph": "not installed"}) == ["x: langgraph not installed"]


def test_the_ray_scenarios_report_ray_not_installed_without_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from wingman_actors._bench.ray_backend import (
        NOT_INSTALLED,
        ray_agent_makespan,
        ray_cpu_stage,
        ray_hop_overhead,
    )

    monkeypatch.setitem(sys.modules, "ray", None)  # makes the import fail
    for scenario in (ray_cpu_stage, ray_hop_overhead, ray_agent_makespan):
        measured = scenario(True)
        assert measured.details == {"skipped": NOT_INSTALLED} and not measured.meets
    assert "ray not installed" in NOT_INSTALLED


def test_resume_latency_resumes_journalled_runs_to_their_outputs() -> None:
    result = SCENARIOS["resume_latency"](True)
    assert result.unit == "ms beyond the last node's work"
    assert result.details["runs"] == 10
    assert result.value > 0
