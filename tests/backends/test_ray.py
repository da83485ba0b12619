"""The formation behaviours on both backends, and what only the Ray backend does.

Node code runs in Ray worker processes, so a test that needs state across attempts keeps
it in a file under ``tmp_path`` (closures are shipped by value).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.providers import new_provider
from wingman_actors.testing import ScriptedProvider


def _double(x: int) -> int:
    return x * 2


def _inc(x: int) -> int:
    return x + 1


def test_a_linear_formation_runs_on_each_backend(backend: str) -> None:
    formation = Formation("line").add_function("double", _double).add_function("inc", _inc)
    formation.connect("double", "inc")
    result = formation.run(20, backend=backend)
    assert result.output == 41
    assert result.nodes["inc"].attempts == 1


def test_a_fan_in_joins_its_predecessors_by_keyword_on_each_backend(backend: str) -> None:
    def total(double: int, inc: int) -> int:
        return double + inc

    formation = Formation("fan").add_function("src", lambda x: x).add_function("double", _double)
    formation.add_function("inc", _inc).add_function("total", total)
    formation.connect("src", "double", "total").connect("src", "inc", "total")
    assert formation.run(5, backend=backend).output == 16


def test_the_formation_language_routes_the_same_on_each_backend(backend: str) -> None:
    # a per-visit join inside a loop, type routes with otherwise, join='any', NoRouteError
    def step(n: int) -> int:
        return n + 1

    def meet(left: int, right: int) -> int:
        assert left == right, (left, right)  # one iteration's values
        return left

    loop = (
        Formation("loop").add_function("entry", lambda n: n).add_function("step", step).add_function("left", lambda n: n)
        .add_function("right", lambda n: time.sleep(0.01) or n).add_function("meet", meet)
        .add_function("done", lambda n: f"done {n}")
        .connect("entry", "step", "left", "meet").connect("step", "right", "meet")
        .connect("meet", "step", when=lambda n: n < 4).connect("meet", "done", otherwise=True)
    )
    result = loop.run(0, backend=backend)
    assert (result.output, result.nodes["meet"].visits) == ("done 4", 4)
    typed = (
        Formation("typed").add_function("src", lambda x: x).add_function("text", lambda s: s.upper())
        .add_function("other", lambda x: x).add_function("first", lambda values: values, join="any")
        .connect("src", "text", when=str).connect("src", "other", otherwise=True)
        .connect("text", "first").connect("other", "first")
    )
    assert typed.run("hi", backend=backend).output == {"text": "HI"}
    assert typed.run(7, backend=backend).output == {"other": 7}
    nowhere = Formation("nowhere").add_function("src", lambda x: x).add_function("big", lambda x: x)
    nowhere.connect("src", "big", when=lambda x: x > 10)
    with pytest.raises(NoRouteError, match="node 'src' output 3"):
        nowhere.run(3, backend=backend)


def test_join_any_cancels_the_rest_of_a_slower_branch_on_each_backend(backend: str, tmp_path: Path) -> None:
    marks, fast_done = tmp_path / "ran", tmp_path / "fast-done"

    def fast(x: int) -> int:
        fast_done.touch()
        return x + 1

    def slow_1(x: int) -> int:
        # still running when 'fast' fires the join: it waits for fast (whose Ray worker may
        # start seconds later on a loaded machine), then a while more (runs in a Ray worker:
        # files are the shared state)
        deadline = time.monotonic() + 20
        while not fast_done.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)
        return x

    def slow_2(x: int) -> int:
        with open(marks, "a") as f:  # runs in a Ray worker: a file is the shared state
            f.write("slow_2\n")
        return x

    race = (
        Formation("race").add_function("start", lambda x: x).add_function("fast", fast)
        .add_function("slow_1", slow_1).add_function("slow_2", slow_2)
        .add_function("first", lambda values: values, join="any")
        .connect("start", "fast", "first").connect("start", "slow_1", "slow_2", "first")
    )
    result = race.run(1, backend=backend)
    assert result.output == {"fast": 2}
    assert result.nodes["slow_2"].status == "cancelled"  # DESIGN: the other branches are cancelled
    assert not marks.exists()


def test_conditional_edges_route_and_skip_on_each_backend(backend: str) -> None:
    formation = Formation("cond").add_function("src", lambda x: x)
    formation.add_function("big", lambda x: f"big {x}").add_function("small", lambda x: f"small {x}")
    formation.connect("src", "big", when=lambda x: x > 10).connect("src", "small", when=lambda x: x <= 10)
    result = formation.run(50, backend=backend)
    assert result.outputs == {"big": "big 50"}
    assert result.nodes["small"].status == "skipped"


def test_a_bounded_loop_runs_until_its_condition_fails_on_each_backend(backend: str) -> None:
    formation = Formation("loop").add_function("start", lambda x: x).add_function("step", _inc, max_visits=10)
    formation.add_function("done", lambda x: x).connect("start", "step")
    formation.connect("step", "step", when=lambda x: x < 4).connect("step", "done", when=lambda x: x >= 4)
    result = formation.run(0, backend=backend)
    assert result.output == 4
    assert result.nodes["step"].visits == 4


def test_a_fleet_node_runs_one_session_per_item_on_each_backend(backend: str) -> None:
    agent = Agent("echo", provider=ScriptedProvider(["done"], cycle=True))
    formation = Formation("fleet").add_fleet("team", agent, max_workers=2)
    assert formation.run(["a", "b", "c"], backend=backend).output == ["done", "done", "done"]


def test_a_scripted_provider_counts_the_calls_of_every_replica_once_the_formation_stops_on_each_backend(
    backend: str,
) -> None:
    provider = ScriptedProvider(["done"], cycle=True)
    formation = Formation("count").add_agent("echo", Agent("echo", provider=provider), concurrency=2)
    with formation.start(backend=backend) as running:
        futures = [running.submit(f"q{i}") for i in range(4)]
        assert [f.result().output for f in futures] == ["done"] * 4
    assert provider.calls == 4  # on Ray: added from each replica process at stop()
    assert sorted(r.messages[-1].content[0].text or "" for r in provider.requests) == ["q0", "q1", "q2", "q3"]


def test_a_failed_attempt_is_retried_on_each_backend(backend: str, tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"

    def flaky(x: int) -> int:
        if not marker.exists():
            marker.write_text("x")
            raise ValueError("first attempt fails")
        return x + 100

    formation = Formation("retry").add_function("flaky", flaky, retries=2, backoff=0.01)
    result = formation.run(1, backend=backend)
    assert result.output == 101
    assert result.nodes["flaky"].attempts == 2


def test_a_node_that_keeps_failing_fails_the_run_naming_it_on_each_backend(backend: str) -> None:
    def broken(x: int) -> int:
        raise ValueError(f"bad input {x}")

    formation = Formation("fail").add_function("broken", broken, retries=1, backoff=0.01)
    with pytest.raises(FormationRuntimeError, match=r"'broken' failed after 2 attempt.*ValueError: bad input 3") as info:
        formation.run(3, backend=backend)
    assert info.value.node == "broken"


def test_on_error_skip_skips_the_node_on_each_backend(backend: str) -> None:
    def broken(x: int) -> int:
        raise ValueError("no")

    formation = Formation("skip").add_function("src", lambda x: x)
    formation.add_function("broken", broken, on_error="skip").add_function("ok", _inc)
    formation.connect("src", "broken").connect("src", "ok")
    result = formation.run(1, backend=backend)
    assert result.outputs == {"ok": 2}
    assert result.nodes["broken"].status == "skipped"


def _stuck_until(release: Path) -> Any:
    """A function node stuck until ``release`` exists (so a thread left behind by the
    threads backend ends when the test lets it go)."""

    def stuck(x: int) -> int:
        deadline = time.monotonic() + 30
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return x

    return stuck


def test_a_node_timeout_fails_a_stuck_attempt_on_each_backend(backend: str, tmp_path: Path) -> None:
    release = tmp_path / "release"
    stuck = _stuck_until(release)

    formation = Formation("slow").add_function("stuck", stuck, timeout=0.5)
    started = time.perf_counter()
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0\.5s"):
            formation.run(1, backend=backend)
        assert time.perf_counter() - started < 10
    finally:
        release.write_text("go")


def test_a_retry_after_a_timeout_has_its_whole_time_limit_on_each_backend(backend: str, tmp_path: Path) -> None:
    # On Ray the stuck attempt's process is killed and restarted: the retry's time limit
    # starts once the fresh process answers, not while Ray starts it (a second or more).
    release, tried = tmp_path / "release", tmp_path / "tried"

    def stuck_once(x: int) -> int:
        if not tried.exists():
            tried.write_text("x")
            deadline = time.monotonic() + 30
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return x * 2

    # (2 s, not 1: with 1 s it failed once at load ~8 and passed alone; a loaded machine eats the limit)
    formation = Formation("slow_once").add_function("stuck", stuck_once, timeout=2.0, retries=1, backoff=0.01)
    try:
        result = formation.run(4, backend=backend)
    finally:
        release.write_text("go")
    assert result.output == 8
    assert result.nodes["stuck"].attempts == 2


@pytest.mark.ray
def test_a_first_input_has_its_whole_time_limit_while_ray_starts_the_actors_process(ray_session: Any) -> None:
    # Ray starts a node's actor process as the formation starts (a second or more, many on a
    # busy machine): the first attempt's time limit starts once that process answers
    formation = Formation("cold").add_function("double", _double, timeout=0.3)
    with formation.start(backend="ray") as running:
        assert running.submit(4).result(120).output == 8


@pytest.mark.ray
def test_a_run_that_ends_while_its_retry_waits_for_the_restarting_actor_leaves_no_thread(
    ray_session: Any, tmp_path: Path
) -> None:
    # the stuck attempt's process is killed; the run's time runs out while the retry
    # waits for Ray to start a fresh one: stopping the formation ends that wait
    release = tmp_path / "release"
    formation = Formation("slow").add_function("stuck", _stuck_until(release), timeout=0.3, retries=1)
    try:
        started = time.perf_counter()
        with pytest.raises(FormationRuntimeError, match="timed out"):
            formation.run(1, backend="ray", timeout=0.6)
        assert time.perf_counter() - started < 10
    finally:
        release.write_text("go")


def test_replicas_work_in_parallel_on_each_backend(backend: str) -> None:
    def slow(x: int) -> int:
        time.sleep(1.0)
        return x

    formation = Formation("pool").add_function("slow", slow, concurrency=2)
    with formation.start(backend=backend) as running:
        running.submit(0).result()  # warm: the Ray actors are up
        started = time.perf_counter()
        futures = [running.submit(i) for i in range(4)]
        assert sorted(f.result().output for f in futures) == [0, 1, 2, 3]
        elapsed = time.perf_counter() - started
    assert elapsed < 3.5  # 4 x 1 s on 2 replicas: about 2 s, 4 s when serial


def test_a_cancelled_run_stops_its_function_and_emits_run_cancelled_on_each_backend(
    backend: str, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    stuck = _stuck_until(release)

    events: list[FormationEvent] = []
    formation = Formation("cancel").add_function("stuck", stuck)
    with formation.start(backend=backend, on_event=events.append) as running:
        future = running.submit(1)
        deadline = time.monotonic() + 20
        while not any(e.type == FormationEventType.NODE_STARTED for e in events) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result()
        release.write_text("go")
    assert any(e.type == FormationEventType.RUN_CANCELLED for e in events)


def test_agent_events_stream_back_in_order_on_each_backend(backend: str) -> None:
    agent = Agent("talker", provider=ScriptedProvider(["one two three four five six"], stream_chunk=4))
    events: list[FormationEvent] = []
    result = Formation("talk").add_agent("talker", agent).run("hi", backend=backend, on_event=events.append)
    text = "".join(e.data["text"] for e in events if e.type == FormationEventType.AGENT_TEXT)
    assert text == result.output == "one two three four five six"
    kinds = [e.type for e in events]
    assert kinds.index(FormationEventType.NODE_STARTED) < kinds.index(FormationEventType.AGENT_TEXT)
    assert kinds.index(FormationEventType.AGENT_TEXT) < kinds.index(FormationEventType.NODE_FINISHED)


@pytest.mark.ray
def test_a_cancelled_agent_on_ray_stops_at_its_next_boundary(ray_session: Any) -> None:
    agent = Agent("slow", provider=ScriptedProvider(["never"], latency_s=20))
    formation = Formation("cancel-agent").add_agent("slow", agent)
    events: list[FormationEvent] = []
    with formation.start(backend="ray", on_event=events.append) as running:
        future = running.submit("go")
        deadline = time.monotonic() + 20
        while not any(e.type == FormationEventType.NODE_STARTED for e in events) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert running.cancel(future.run_id)
        with pytest.raises(CancelledError):
            future.result()
    assert [e.type for e in events][-1] == FormationEventType.RUN_CANCELLED


@pytest.mark.ray
def test_a_node_process_killed_mid_run_is_restarted_and_the_run_completes(ray_session: Any, tmp_path: Path) -> None:
    pids = tmp_path / "pids"

    def work(x: int) -> int:
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        if len(pids.read_text().split()) == 1:
            time.sleep(30)  # the first attempt waits to be killed
        return x * 3

    formation = Formation("kill").add_function("work", work, retries=1)
    with formation.start(backend="ray") as running:
        future = running.submit(7)
        deadline = time.monotonic() + 30
        while not (pids.exists() and pids.read_text().split()) and time.monotonic() < deadline:
            time.sleep(0.05)  # the file exists from open() on; wait for the pid written into it
        first = int(pids.read_text().split()[0])
        os.kill(first, signal.SIGKILL)
        result = future.result(timeout=40)
    assert result.output == 21
    assert result.nodes["work"].attempts == 2
    second = int(pids.read_text().split()[1])
    assert second != first


@pytest.mark.ray
def test_a_node_that_cannot_be_pickled_is_a_setup_error_naming_it(ray_session: Any) -> None:
    lock = threading.Lock()

    def locked(x: int) -> int:
        with lock:
            return x

    formation = Formation("pickle").add_function("locked", locked)
    with pytest.raises(FormationSetupError, match=r"node 'locked' cannot be pickled for the Ray backend"):
        formation.start(backend="ray")


@pytest.mark.ray
def test_a_delegating_agent_whose_registry_holds_a_live_provider_is_refused_naming_the_factory_fix(
    ray_session: Any,
) -> None:
    registry = AgentRegistry()
    live = new_provider("openai", {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "m"})
    registry.register(Agent("helper", provider=live), description="helps")
    lead = Agent("lead", provider=ScriptedProvider(["ok"]), delegates=registry)
    formation = Formation("team").add_agent("lead", lead)
    with pytest.raises(FormationSetupError, match=r"node 'lead' cannot be pickled.*agents registered in its "
                                                  r"delegates.*registry.register\(lambda: Agent"):
        formation.start(backend="ray")


@pytest.mark.ray
def test_unknown_ray_options_are_a_setup_error_listing_the_known_ones(ray_session: Any) -> None:
    with pytest.raises(FormationSetupError, match=r"unknown backend_options \['adress'\].*address, num_cpus"):
        Formation("o").add_function("inc", _inc).start(backend="ray", backend_options={"adress": "auto"})


def test_backend_ray_without_ray_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    formation = Formation("noray").add_function("inc", _inc)
    with pytest.raises(FormationSetupError, match=r'pip install "wingman-actors\[ray\]"'):
        formation.run(1, backend="ray")


def test_the_threads_backend_takes_no_backend_options() -> None:
    with pytest.raises(FormationSetupError, match="backend 'threads' takes no backend_options"):
        Formation("t").add_function("inc", _inc).start(backend_options={"address": "auto"})


_CLUSTER_DRIVER = """
import ray
from wingman_actors import Formation

def triple(x: int) -> int:
    return x * 3

formation = Formation("cluster").add_function("triple", triple)
with formation.start(backend="ray", backend_options={"address": "auto"}) as running:
    print("output", running.submit(14).result().output)
print("connected after stop", ray.is_initialized())
"""


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_formation_joins_a_separately_started_cluster_and_only_disconnects(tmp_path: Path) -> None:
    import socket

    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_cli = str(Path(sys.executable).with_name("ray"))
    # address="auto" finds the cluster started last on this machine: this one
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    # --block: the head's processes live as long as this command, and end with it
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
         "--disable-usage-stats"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
    )
    try:
        driver = tmp_path / "driver.py"
        driver.write_text(_CLUSTER_DRIVER)
        time.sleep(8)  # the head takes a few seconds to come up
        for _ in range(3):  # and longer on a busy machine
            proc = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, env=env,
                                  timeout=60, cwd=tmp_path)
            if proc.returncode == 0:
                break
            time.sleep(3)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "output 42" in proc.stdout
        assert "connected after stop False" in proc.stdout
        assert head.poll() is None  # the cluster is still up: the formation only disconnected
    finally:
        head.terminate()
        try:
            head.wait(30)
        except subprocess.TimeoutExpired:  # its processes share its new session's group
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(10)
        # what `ray stop` would do: forget the address of the cluster now gone
        current = Path("/tmp/ray/ray_current_cluster")
        if current.exists() and current.read_text().strip().endswith(f":{port}"):
            current.unlink()


def _run_driver(tmp_path: Path, source: str, *, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``source`` as a script in a fresh interpreter (its own Ray); it must succeed."""
    pytest.importorskip("ray")
    driver = tmp_path / "driver.py"
    driver.write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


_SHARED_DRIVER = """
import ray
from wingman_actors import Formation

def triple(x: int) -> int:
    return x * 3

a = Formation("a").add_function("triple", triple).start(backend="ray", backend_options={"num_cpus": 1})
b = Formation("b").add_function("triple", triple).start(backend="ray")  # shares a's Ray
a.stop()
print("b after a stopped", b.submit(5).result(60).output)
b.stop()
print("ray up after both stopped", ray.is_initialized())
"""


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_formations_share_the_ray_one_started_until_the_last_stops(tmp_path: Path) -> None:
    proc = _run_driver(tmp_path, _SHARED_DRIVER, timeout=110)
    assert "b after a stopped 15" in proc.stdout  # before: a's stop() shut down the Ray b used
    assert "ray up after both stopped False" in proc.stdout


@pytest.mark.ray
def test_the_launcher_runs_a_ready_formation_on_ray(ray_session: Any, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from wingman_actors.cli import main

    assert main(["run", "formations/research.py", "--json"]) == 0
    on_threads = json.loads(capsys.readouterr().out)
    assert main(["run", "formations/research.py", "--backend", "ray", "--json"]) == 0
    on_ray = json.loads(capsys.readouterr().out)
    assert on_ray["output"] == on_threads["output"]
    assert on_ray["outputs"] == on_threads["outputs"]


def test_the_launcher_refuses_a_ray_address_without_the_ray_backend(capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors.cli import main

    assert main(["run", "formations/research.py", "--ray-address", "auto"]) == 2
    assert "--ray-address needs --backend ray" in capsys.readouterr().err


_THREAD_DRIVER = """
import threading
import time

import ray
from wingman_actors import Formation

def triple(x: int) -> int:
    return x * 3

formation = Formation("starter-thread").add_function("triple", triple)
box = {}
starter = threading.Thread(target=lambda: box.update(running=formation.start(backend="ray",
                                                                             backend_options={"num_cpus": 1})))
starter.start()
starter.join()
time.sleep(2)  # the thread that started Ray has ended: Ray's processes must still be there
running = box["running"]
print("output", running.submit(14).result(timeout=60).output)
running.stop()
print("left", [t.name for t in threading.enumerate() if t.name.startswith("wingman")], ray.is_initialized())
"""


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_formation_started_from_a_short_lived_thread_keeps_its_ray_until_stop(tmp_path: Path) -> None:
    proc = _run_driver(tmp_path, _THREAD_DRIVER, timeout=100)
    assert "output 42" in proc.stdout
    assert "left [] False" in proc.stdout  # stop() shut that Ray down and ended its thread
