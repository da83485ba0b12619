"""``RunStore.request_cancel``: a run owned by another process (a child running a formation
with the store, on SQLite and on PostgreSQL) is cancelled by a request written into the
store, as ``RunningFormation.cancel`` cancels it; and the request's answers and errors."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.store import RunStore, StoreError, UnknownRunError

from .conftest import chain_shape

ROOT = Path(__file__).parents[2]

# A formation whose `wait` node waits (20 s at most) for the file `<gates>/<input>.open`.
# It runs two runs, `victim` and `bystander`, prints "started", then how each ended, and
# the run events that ended runs.
_OWNER = """
import sys, time
from concurrent.futures import CancelledError
from pathlib import Path
from wingman_actors import Formation

location, gates = sys.argv[1], Path(sys.argv[2])

def wait(text):
    deadline = time.monotonic() + 20
    while not (gates / f"{text}.open").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return text.upper()

ended = []
f = Formation("slow").add_function("clean", str.strip).add_function("wait", wait).connect("clean", "wait")
with f.start(store=location, on_event=lambda e: ended.append(f"{e.type.value} {e.run_id}")
             if e.type.value in ("run_cancelled", "run_finished", "run_failed") else None) as running:
    runs = {name: running.submit(f" {name} ", run_id=name) for name in ("victim", "bystander")}
    print("started", flush=True)
    for name, future in runs.items():
        try:
            print(name, future.result(timeout=30).output, flush=True)
        except CancelledError:
            print(name, "cancelled", flush=True)
print(*sorted(ended), sep="\\n", flush=True)
"""


@pytest.fixture
def gates(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "gates"
    folder.mkdir()
    yield folder
    for name in ("victim", "bystander"):  # abandoned or waiting attempts end
        (folder / f"{name}.open").touch()


def _until(store: RunStore, run_id: str, status: str, within: float = 15.0) -> float:
    """Seconds until ``run_id`` has ``status`` in ``store`` (fails after ``within``)."""
    t0 = time.monotonic()
    while (now := store.get(run_id).status) != status:
        assert time.monotonic() - t0 < within, f"run {run_id} is {now}, not {status}, after {within} s"
        time.sleep(0.01)
    return time.monotonic() - t0


def test_a_run_of_another_process_is_cancelled_by_a_request_and_its_other_run_goes_on(
        location: str, gates: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", _OWNER, location, str(gates)], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started", child.stderr.read() if child.stderr else ""
        with RunStore(location) as store:
            _until(store, "victim", "running")
            assert store.request_cancel("victim") is True
            assert store.get("victim").cancel_requested is not None or store.get("victim").status == "cancelled"
            latency = _until(store, "victim", "cancelled")
            print(f"a cancel requested from another process took effect in {latency * 1000:.0f} ms")
            assert store.get("victim").cancel_requested is None  # the owner took the request
            assert store.get("bystander").status == "running"
            (gates / "bystander.open").touch()
            out, err = child.communicate(timeout=30)
            assert child.returncode == 0, err
            assert out.split("\n")[:4] == ["victim cancelled", "bystander BYSTANDER", "run_cancelled victim",
                                          "run_finished bystander"], out
            assert (store.get("victim").status, store.get("bystander").status) == ("cancelled", "succeeded")
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()


def test_a_request_for_a_run_of_the_same_store_cancels_it(location: str, gates: Path) -> None:
    import concurrent.futures

    def wait(text: str) -> str:
        deadline = time.monotonic() + 20
        while not (gates / f"{text}.open").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return text

    with RunStore(location) as store:
        formation = Formation("slow").add_function("wait", wait)
        with formation.start(store=store) as running:
            future = running.submit("victim")
            _until(store, future.run_id, "running")
            assert store.request_cancel(future.run_id) is True
            with pytest.raises(concurrent.futures.CancelledError):
                future.result(timeout=10)
            _until(store, future.run_id, "cancelled")


def test_a_request_for_an_unknown_run_is_an_unknown_run_error(store: RunStore) -> None:
    with pytest.raises(UnknownRunError, match="no run 'nope'"):
        store.request_cancel("nope")


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled", "suspended", "interrupted"])
def test_a_request_for_a_run_that_is_not_running_returns_false_and_changes_nothing(
        store: RunStore, status: str) -> None:
    run_id = store.begin_run("chain", chain_shape(), 0)
    store.set_status(run_id, status)  # type: ignore[arg-type]
    assert store.request_cancel(run_id) is False
    record = store.get(run_id)
    assert (record.status, record.cancel_requested) == (status, None)


def test_a_request_for_an_inner_run_names_its_outer_run(store: RunStore) -> None:
    outer = store.begin_run("outer", chain_shape(), 0)
    inner = store.begin_run("inner", chain_shape(), 0, run_id=f"{outer}/sub/1", parent=outer)
    with pytest.raises(StoreError, match=rf"inner run of run '{outer}'.*request_cancel\('{outer}'\)"):
        store.request_cancel(inner)


def test_a_pending_request_is_cleared_when_the_run_is_resumed_elsewhere(location: str) -> None:
    with RunStore(location) as owner:  # journals a run without a formation: nobody takes the request
        run_id = owner.begin_run("chain", chain_shape(), 0)
        with RunStore(location) as other:
            assert other.request_cancel(run_id) is True
            assert other.get(run_id).cancel_requested is not None
            owner.set_status(run_id, "interrupted", wait=True)
            other.claim_run(run_id, chain_shape())
            assert other.get(run_id).cancel_requested is None
