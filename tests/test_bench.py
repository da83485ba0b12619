"""A smoke run of the benchmark command: it runs and reports the documented JSON shape.
(Benchmarks measure; the suite never asserts on their timings.)"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

from tests.support.postgres import postgres_server, postgres_url
from wingman_actors._bench import SCENARIOS
from wingman_actors.cli import main

__all__ = ["postgres_server", "postgres_url"]  # fixtures


def test_bench_lists_the_scenarios_of_the_targets_table() -> None:
    assert list(SCENARIOS) == [
        "pipeline_throughput", "run_overhead", "cold_run", "large_formation", "hop_latency",
        "fleet_makespan", "fleet_node_makespan", "map_makespan", "dag_makespan", "inflight_runs", "actor_memory",
        "store_journal", "durable_pipeline_throughput", "durable_pipeline_throughput_postgres", "durable_overhead",
        "resume_latency", "lease_takeover", "fork_cost",
        "cancel_latency", "timeout_overshoot", "session_cancel_latency", "session_timeout_overshoot",
        "ray_cpu_stage", "ray_hop_overhead", "ray_agent_makespan", "nested_overhead", "async_concurrency",
        "async_sessions", "payload_isolation", "http_formation_runs",
    ]


def test_payload_isolation_switches_the_nodes_between_a_copy_and_the_payload_itself() -> None:
    from wingman_actors import Formation
    from wingman_actors._bench.payloads import isolation_replaced

    original: dict[str, list[int]] = {"tags": [1]}
    same = Formation("same").add_function("check", lambda d: d is original)
    assert same.run(original).output is False  # isolated: the node got a copy
    with isolation_replaced(lambda v: v):
        assert same.run(original).output is True  # what the bench's "before" blocks measure


def test_payload_isolation_reports_both_kinds_of_receiver_and_is_judged_on_the_worse_cpu_cost() -> None:
    result = SCENARIOS["payload_isolation"](True)
    typed, plain = result.details["typed_receivers"], result.details["unannotated_receivers"]
    assert result.value == max(typed["cpu_cost_pct"], plain["cpu_cost_pct"])
    assert result.meets == (result.value <= 5.0)
    copies, share = result.details["copies_us_per_input"], result.details["copy_share_pct"]
    assert 0 < copies < plain["after_cpu_us_per_input"]  # reported beside it: two copies' own CPU time
    assert abs(share - 100 * copies / plain["after_cpu_us_per_input"]) < 0.2


def test_payload_isolation_reports_the_quartiles_around_each_median_cost() -> None:
    result = SCENARIOS["payload_isolation"](True)
    for receivers in ("typed_receivers", "unannotated_receivers"):
        costs = result.details[receivers]
        for kind in ("cpu", "throughput"):
            q1, q3 = costs[f"{kind}_cost_quartiles"]
            assert q1 <= costs[f"{kind}_cost_pct"] <= q3


def test_map_makespan_reports_the_thread_floor_of_the_same_run() -> None:
    result = SCENARIOS["map_makespan"](True)
    assert (result.name, result.unit) == ("map_makespan", "x ideal")
    assert result.baseline is not None and result.baseline > 0 and result.value > 0
    assert result.meets == (result.details["over_floor"] <= 0.02)
    assert len(result.details["node_runs"]) == len(result.details["floor_runs"]) == 3


def test_fleet_node_makespan_is_judged_against_the_thread_floor_of_the_same_run() -> None:
    result = SCENARIOS["fleet_node_makespan"](True)
    assert (result.name, result.unit) == ("fleet_node_makespan", "x ideal")
    assert result.baseline is not None and result.baseline > 0 and result.value > 0
    assert result.meets == (result.details["over_floor"] <= 0.02)
    assert len(result.details["node_runs"]) == len(result.details["bare_runs"]) == len(result.details["floor_runs"]) == 3


def test_fleet_makespan_is_judged_against_the_thread_floor_of_the_same_run() -> None:
    result = SCENARIOS["fleet_makespan"](True)
    assert result.baseline is not None and result.baseline > 0 and result.value > 0
    assert result.meets == (result.details["over_floor"] <= 0.02)
    assert len(result.details["runs"]) == len(result.details["floor_runs"]) == 3


@pytest.mark.skipif(importlib.util.find_spec("langgraph") is None, reason="the peers extra is not installed")
def test_cold_run_is_judged_as_a_ratio_to_langgraph_in_the_same_run() -> None:
    result = SCENARIOS["cold_run"](True)
    assert result.unit == "ms" and result.baseline is not None and result.baseline > 0
    assert result.details["langgraph_ms"] and len(result.details["ratios"]) == 3
    assert result.meets == (result.details["ratio"] <= 0.8)


@pytest.mark.skipif(importlib.util.find_spec("langgraph") is None, reason="the peers extra is not installed")
def test_large_formation_reports_the_start_cost_per_node_at_100_and_500_nodes() -> None:
    result = SCENARIOS["large_formation"](True)
    assert result.unit == "ms (500 nodes)" and result.baseline is not None and result.baseline > 0
    for size in ("nodes_100", "nodes_500"):
        phases = result.details[size]
        assert phases["start_per_node_ms"] > 0 and phases["run_ms"] > 0 and phases["lg_compile_ms"] > 0
    assert result.meets == (result.details["ratio"] <= 2)


def test_a_ratio_target_without_langgraph_reports_it_missing_and_is_not_met(monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors._bench.peers import NOT_INSTALLED

    monkeypatch.setitem(sys.modules, "langgraph.graph", None)  # makes the import fail
    result = SCENARIOS["cold_run"](True)
    assert result.details["peers"] == {"langgraph": NOT_INSTALLED}
    assert result.value > 0 and result.baseline is None and not result.meets


def test_a_makespan_is_judged_on_the_median_margin_of_each_run_over_the_floor_right_after_it() -> None:
    from wingman_actors._bench.scenarios import _over_floor

    # one run slowed by a burst of load (1.30) does not move the judged margin
    assert _over_floor([1.03, 1.30, 1.04, 1.02, 1.03], [1.02, 1.03, 1.02, 1.01, 1.02]) == 0.01


def test_the_table_shows_what_each_target_was_judged_on() -> None:
    from wingman_actors._bench.cli import judged

    assert judged({"ratio": 0.62}) == "x0.62"
    assert judged({"over_floor": 0.012}) == "+0.012"
    assert judged({"over_floor": -0.004}) == "-0.004"
    assert judged({}) == ""


def test_bench_json_has_machine_and_scenario_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--json", "--scenario", "cold_run", "--scenario", "hop_latency"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["machine"]["python"] and doc["machine"]["cpus"] >= 1
    assert [s["name"] for s in doc["scenarios"]] == ["cold_run", "hop_latency"]
    for s in doc["scenarios"]:
        assert {"name", "value", "unit", "target", "meets"} <= set(s)
        assert isinstance(s["meets"], bool) and s["value"] > 0


def test_each_scenario_is_measured_in_an_interpreter_of_its_own() -> None:
    from wingman_actors._bench._child import measure_in_child

    pid, measurement = measure_in_child("hop_latency", True)
    assert pid != os.getpid()
    assert measurement.name == "hop_latency" and measurement.value > 0 and measurement.baseline


def test_every_scenario_is_defined_in_the_module_the_registry_names() -> None:
    import importlib

    from wingman_actors._bench._registry import WHERE

    assert list(WHERE) == list(SCENARIOS)
    for name, module in WHERE.items():
        assert callable(getattr(importlib.import_module(f"wingman_actors._bench.{module}"), name)), name


def test_a_scenarios_interpreter_imports_its_own_module_only() -> None:
    # what the child runs before measuring: the sessions scenario loads no formation, as
    # a service that only runs sessions does not
    code = ("import sys, importlib; import wingman_actors._bench._child as c; "
            "importlib.import_module('wingman_actors._bench.' + c.WHERE['async_sessions']); "
            "print('networkx' in sys.modules, 'wingman_actors.formation' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_a_scenario_that_fails_in_its_process_is_named_in_the_error(capfd: pytest.CaptureFixture[str]) -> None:
    from wingman_actors._bench._child import measure_in_child

    with pytest.raises(RuntimeError, match=r"bench scenario 'warp_speed' failed in its process \(exit code 1"):
        measure_in_child("warp_speed", True)
    assert "KeyError: 'warp_speed'" in capfd.readouterr().err  # the child's traceback passed through


def test_bench_in_process_runs_the_scenarios_in_this_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from wingman_actors._bench import Measurement

    here = Measurement("hop_latency", 12345.0, "µs p50", "p50 <= 1.5 x raw Pykka ask; p99 <= 1 ms", False)
    monkeypatch.setitem(SCENARIOS, "hop_latency", lambda quick: here)  # only this process sees it
    assert main(["bench", "--quick", "--json", "--in-process", "--scenario", "hop_latency"]) == 0
    assert [s["value"] for s in json.loads(capsys.readouterr().out)["scenarios"]] == [12345.0]
    assert main(["bench", "--quick", "--json", "--scenario", "hop_latency"]) == 0  # a fresh interpreter measures
    assert [s["value"] for s in json.loads(capsys.readouterr().out)["scenarios"]] != [12345.0]


def test_bench_refuses_an_unknown_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--scenario", "warp_speed"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_a_missing_peer_is_reported_as_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_dag_makespan_reports_the_thread_floor_of_its_fleet_step() -> None:
    result = SCENARIOS["dag_makespan"](True)
    assert result.meets == (result.value <= 1.05)
    assert result.details["fleet_step_thread_floor_ms"] >= 0 and len(result.details["runs"]) == 3


@pytest.mark.parametrize("name", ["session_cancel_latency", "session_timeout_overshoot"])
def test_the_session_limit_scenarios_see_every_hung_request_closed(name: str) -> None:
    result = SCENARIOS[name](True)
    runs = len(result.details["hanging_provider_s"]) if "hanging_provider_s" in result.details else 10
    assert result.details["requests_closed"] == runs
    assert result.value > 0


def test_async_sessions_reports_its_peak_threads_heartbeat_stall_and_whether_the_provider_awaits() -> None:
    result = SCENARIOS["async_sessions"](True)
    assert (result.name, result.unit, result.baseline) == ("async_sessions", "x ideal", 0.1)
    assert result.value > 0 and result.details["peak_threads"] >= 1 and result.details["max_stall_ms"] >= 0
    assert isinstance(result.details["provider_has_arun_inference"], bool)
    assert result.details["first_burst_s"] > 0  # the burst that opened the connections, apart
    assert result.details["bare_aiohttp_x_ideal"] >= 1  # the floor, measured (the dev extras install aiohttp)
    assert all(cpu > 0 for cpu in result.details["cpu_s"])
    assert result.details["tracked_objects"] > 0 and isinstance(result.details["networkx_loaded"], bool)
    assert result.meets == (result.value <= 1.3 and result.details["peak_threads"] < 30
                            and result.details["max_stall_ms"] <= 50)


@pytest.mark.parametrize("name", ["async_concurrency", "async_sessions"])
def test_the_async_scenarios_report_the_collectors_share_of_the_stall(name: str) -> None:
    details = SCENARIOS[name](True).details
    full, cpu = details["max_full_collection_ms"], details["max_full_collection_cpu_ms"]
    besides, stall = details["max_stall_besides_collector_ms"], details["max_stall_ms"]
    assert full >= 0 and cpu >= 0 and besides <= stall


def _installed(module: str) -> bool:
    try:  # find_spec of a submodule imports its parents, and raises when they are missing
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(not _installed("langgraph.checkpoint.postgres"), reason="the peers extra is not installed")
def test_the_postgres_durable_scenario_measures_on_the_server_given_and_is_judged_against_langgraph(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors._bench.durable_postgres import ENV

    monkeypatch.setenv(ENV, postgres_url.split("?")[0])
    result = SCENARIOS["durable_pipeline_throughput_postgres"](True)
    assert (result.name, result.unit) == ("durable_pipeline_throughput_postgres", "inputs/s")
    assert result.details["server"] == f"given by {ENV}" and len(result.details["runs"]) == 3
    assert result.baseline is not None and result.baseline > 0 and result.value > 0
    assert result.meets == (result.details["ratio"] >= 10)


def test_the_postgres_durable_scenario_without_psycopg_is_skipped_saying_why() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from wingman_actors._bench import SCENARIOS\n"
            "r = SCENARIOS['durable_pipeline_throughput_postgres'](True)\n"
            "print(r.meets, r.details)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "durable_pipeline_throughput_postgres: skipped: psycopg is not installed" in done.stderr
    assert done.stdout.startswith("False {'skipped': 'psycopg is not installed")


def test_lease_takeover_resumes_a_frozen_owners_run_and_is_judged_against_the_lease(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors._bench.durable_postgres import ENV

    monkeypatch.setenv(ENV, postgres_url.split("?")[0])
    result = SCENARIOS["lease_takeover"](True)
    assert (result.name, result.unit) == ("lease_takeover", "s")
    assert result.details["server"] == f"given by {ENV}" and len(result.details["runs"]) == 3
    assert result.value >= result.details["lease_s"]  # (never taken over before the lease lapsed)
    assert result.meets == (result.value <= result.details["lease_s"] + 1)


def test_lease_takeover_without_psycopg_is_skipped_saying_why() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from wingman_actors._bench import SCENARIOS\n"
            "r = SCENARIOS['lease_takeover'](True)\n"
            "print(r.meets, r.details)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "lease_takeover: skipped: psycopg is not installed" in done.stderr
    assert done.stdout.startswith("False {'skipped': 'psycopg is not installed")


def test_fork_cost_compares_the_fork_with_running_its_last_two_nodes_alone_on_both_stores(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from wingman_actors._bench.durable_postgres import ENV

    monkeypatch.setenv(ENV, postgres_url.split("?")[0])
    result = SCENARIOS["fork_cost"](True)
    assert (result.name, result.unit) == ("fork_cost", "ms")
    stores = [result.details["sqlite"], result.details["postgres"]]
    assert (result.value, result.baseline) == (stores[0]["fork_ms"], stores[0]["alone_ms"])
    for numbers in stores:
        assert numbers["fork_ms"] > 0 and numbers["alone_ms"] > 0 and numbers["fork_input_ms"] > 0
        assert numbers["meets"] == (numbers["fork_ms"] <= 2 * numbers["alone_ms"] + 10)
        assert len(numbers["fork_runs_ms"]) == len(numbers["alone_runs_ms"]) == result.details["repetitions"]
    assert result.meets == (stores[0]["meets"] and stores[1]["meets"])


def test_fork_cost_without_psycopg_measures_sqlite_and_says_why_postgresql_was_skipped() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from wingman_actors._bench import SCENARIOS\n"
            "r = SCENARIOS['fork_cost'](True)\n"
            "print(r.meets == r.details['sqlite']['meets'], r.details['postgres'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "fork_cost: on PostgreSQL: skipped: psycopg is not installed" in done.stderr
    assert done.stdout.startswith("True {'skipped': 'psycopg is not installed")


def test_pipeline_throughput_reports_the_paired_cpu_time_ratio_and_the_load_beside_the_judged_one() -> None:
    result = SCENARIOS["pipeline_throughput"](True)
    assert result.meets == (result.details["ratio"] >= 0.8)
    assert result.details["cpu_ratio"] > 0 and len(result.details["load"]) == 3


def test_the_loopback_chat_server_answers_each_request_on_a_connection_in_order_even_split_or_pipelined() -> None:
    import socket

    server = subprocess.Popen([sys.executable, "-m", "wingman_actors._bench.openai_loopback", "0.05"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        body = b'{"model": "bench", "messages": [{"role": "user", "content": "q"}]}'
        request = (b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                   b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(request[:30])  # a head split across reads
            conn.sendall(request[30:-5])  # and its body
            conn.sendall(request[-5:] + request + request)  # then two more in the same read
            received = b""
            while received.count(b"HTTP/1.1 200 OK") < 3 or not received.endswith(b"}"):
                chunk = conn.recv(65536)
                assert chunk, f"the server closed the connection after {received!r}"
                received += chunk
        answers = received.split(b"HTTP/1.1 200 OK")[1:]
        assert len(answers) == 3
        for answer in answers:
            head, _, payload = answer.partition(b"\r\n\r\n")
            assert json.loads(payload)["choices"][0]["message"]["content"] == "ok"
            assert b"content-length: " + str(len(payload)).encode() in head
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
        assert server.stdout is not None
        server.stdout.close()


def test_durable_pipeline_throughput_is_judged_on_the_median_of_ratios_paired_with_a_langgraph_repetition_each() -> None:
    # (find_spec of a submodule raises when its package is missing: look for the package first)
    if importlib.util.find_spec("langgraph") is None or importlib.util.find_spec("langgraph.checkpoint.sqlite") is None:
        pytest.skip("the peers extra is not installed")
    result = SCENARIOS["durable_pipeline_throughput"](True)
    details = result.details
    peer = details["peers"]["langgraph_sqlite"]
    assert len(details["runs"]) == len(peer["runs"]) == len(details["paired_ratios"]) == 3
    paired = [ours / theirs for ours, theirs in zip(details["runs"], peer["runs"], strict=True)]
    # (from the rounded rates: within a rounding of the reported ratios)
    assert sorted(details["paired_ratios"]) == pytest.approx(sorted(paired), rel=0.01)
    assert details["ratio"] == pytest.approx(sorted(paired)[1], rel=0.01)  # the median of three
    assert result.baseline == peer["batch_inputs_per_s"] and details["ratio_of_medians"] > 0
    assert result.meets == (details["ratio"] >= 30)


def test_durable_pipeline_throughput_without_the_sqlite_peer_says_so_and_is_not_met(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wingman_actors._bench.peers import SQLITE_NOT_INSTALLED

    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)  # makes the import fail
    result = SCENARIOS["durable_pipeline_throughput"](True)
    assert result.details["peers"] == {"langgraph_sqlite": SQLITE_NOT_INSTALLED}
    assert result.value > 0 and result.baseline is None and not result.meets


def test_the_http_scenario_reads_a_server_processes_cpu_time_growing_as_it_works() -> None:
    from wingman_actors._bench.http_runs import cpu_seconds

    before = cpu_seconds(os.getpid())
    if before is None:
        pytest.skip("no /proc: the HTTP scenario reports no CPU time here")
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    after = cpu_seconds(os.getpid())
    assert after is not None and after - before >= 0.1
    assert cpu_seconds(2**22 + 1) is None  # (above Linux's highest pid: no such process)


def test_the_http_scenario_counts_each_postgres_write_transaction_and_its_wal_but_no_read(postgres_url: str) -> None:
    import psycopg

    from wingman_actors._bench.http_runs import _pg_writes

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE counted (x INTEGER)")
        xids, wal = _pg_writes(postgres_url)
        conn.execute("SELECT count(*) FROM counted")
        assert _pg_writes(postgres_url)[0] == xids  # (the WAL may move meanwhile: a checkpoint, autovacuum)
        conn.execute("INSERT INTO counted VALUES (1)")
        conn.execute("INSERT INTO counted VALUES (2)")
        after_xids, after_wal = _pg_writes(postgres_url)
    assert after_xids - xids == 2
    assert after_wal > wal
