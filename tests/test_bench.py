"""A smoke run of the benchmark command: it runs and reports the documented JSON shape.
(Benchmarks measure; the suite never asserts on their timings.)"""

from __future__ import annotations

import json

import pytest

from wingman_actors.bench import SCENARIOS
from wingman_actors.cli import main


def test_bench_lists_the_eight_scenarios_of_the_targets_table() -> None:
    assert list(SCENARIOS) == [
        "pipeline_throughput", "run_overhead", "cold_run", "hop_latency",
        "fleet_makespan", "dag_makespan", "inflight_runs", "actor_memory",
    ]


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
