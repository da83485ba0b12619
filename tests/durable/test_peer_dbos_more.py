"""More behaviours ported from DBOS Transact's test suite (dbos-inc/dbos-transact-py):
listing and introspecting runs (``test_workflow_introspection.py``,
``test_workflow_cmds.py``), forks (``test_workflow_management.py``, ``test_rewind.py``),
waiting for messages (``recv``/``send``: our interrupts and answers), concurrency limits
(``test_queue.py``), and recovery after the process died (``test_dbos.py``), on both
stores where the behaviour is the store's. (The module docstring of ``test_peer_dbos.py``
maps DBOS's names onto ours and lists what we do differently.)

Deliberately different (DESIGN.md documents ours):
- ``rewind`` rewrites a workflow in place; ``fork`` starts a new run and leaves the
  original unchanged.
- ``list_workflow_steps`` lists failed steps with their errors; ``history`` lists what
  the journal holds (succeeded, skipped and suspended visits): a failed visit is in the
  run's error and in ``runs show``.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from tests.durable.test_peer_dbos import chain, counted, gated
from tests.support.peers import Counter, Gate, InFlight
from tests.support.store_fixtures import until_the_server_has_seen_dead_owners_go
from wingman_actors import Formation, interrupt
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import ForkPointError
from wingman_actors.store import NoPendingInterruptError, RunNotResumableError, RunStore

# --- listing and introspection ----------------------------------------------------------


def test_runs_lists_every_run_oldest_first_with_its_formation_and_status(location: str) -> None:
    # DBOS test_workflow_introspection.py::test_list_workflow / test_workflow_cmds.py::test_list_workflows
    with RunStore(location) as store:
        chain(Counter(), "a", name="first").run("x", store=store, run_id="r1")
        with pytest.raises(FormationRuntimeError):
            Formation("second").add_function("boom", lambda x: 1 / 0).run("x", store=store, run_id="r2")
        Formation("third").add_function("ask", lambda x: interrupt("ok?")).run("x", store=store, run_id="r3")
        runs = store.runs()
        assert [(r.id, r.formation, r.status) for r in runs] == [
            ("r1", "first", "succeeded"), ("r2", "second", "failed"), ("r3", "third", "suspended")]
        assert all(r.created <= r.updated for r in runs)
        assert runs[0].created <= runs[1].created <= runs[2].created


def test_runs_with_a_status_lists_only_the_runs_with_it(location: str) -> None:
    # DBOS test_workflow_cmds.py::test_list_workflows_status (status filter)
    with RunStore(location) as store:
        f = chain(Counter(), "a")
        for k in range(3):
            f.run("x", store=store, run_id=f"ok{k}")
        Formation("waits").add_function("ask", lambda x: interrupt("ok?")).run("x", store=store, run_id="w")
        assert [r.id for r in store.runs("succeeded")] == ["ok0", "ok1", "ok2"]
        assert [r.id for r in store.runs("suspended")] == ["w"]
        assert store.runs("cancelled") == []
        with pytest.raises(ValueError, match=r"status must be one of running, succeeded.*got 'SUCCESS'"):
            store.runs("SUCCESS")  # type: ignore[arg-type]


def test_get_gives_a_runs_input_status_and_error(location: str) -> None:
    # DBOS test_workflow_introspection.py::test_get_workflow_status (input, status, error of one workflow)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError):
            Formation("fails").add_function("boom", lambda x: 1 / 0).run({"k": [1, 2]}, store=store, run_id="g")
        record = store.get("g")
        assert (record.id, record.formation, record.status, record.input) == ("g", "fails", "failed", {"k": [1, 2]})
        assert record.error is not None and "node 'boom'" in record.error and "ZeroDivisionError" in record.error
        assert record.created <= record.updated


def test_get_of_a_suspended_run_carries_its_pending_interrupt(store: RunStore) -> None:
    # DBOS test_workflow_introspection.py (a workflow waiting in recv is listed with what it waits for)
    f = chain(Counter(), "a").add_function("ask", lambda x: interrupt({"approve": x})).connect("a", "ask")
    f.run("x", store=store, run_id="waiting")
    pending = store.get("waiting").interrupt
    assert pending is not None and (pending.node, pending.payload, pending.answered) == ("ask", {"approve": "xa"}, False)


def test_history_lists_each_visit_in_order_with_its_output_cycles_included(store: RunStore) -> None:
    # DBOS test_workflow_introspection.py::test_list_workflow_steps (each step in order, with its output)
    f = (Formation("loop").add_function("start", lambda x: x).add_function("inc", lambda x: x + 1)
         .add_function("end", lambda x: f"end {x}").connect("start", "inc")
         .connect("inc", "inc", when=lambda x: x < 3).connect("inc", "end", when=lambda x: x >= 3))
    run_id = f.run(0, store=store).run_id
    history = store.history(run_id)
    assert [(v.node, v.visit, v.output, v.status) for v in history] == [
        ("start", 1, 0, "succeeded"), ("inc", 1, 1, "succeeded"), ("inc", 2, 2, "succeeded"),
        ("inc", 3, 3, "succeeded"), ("end", 1, "end 3", "succeeded")]
    assert all(v.finished is not None for v in history)


def test_history_of_a_suspended_run_ends_with_the_visit_waiting_at_its_interrupt(store: RunStore) -> None:
    # DBOS test_workflow_introspection.py::test_list_workflow_steps of a workflow blocked in recv
    f = chain(Counter(), "a").add_function("ask", lambda x: interrupt({"approve": x})).connect("a", "ask")
    run_id = f.run("x", store=store).run_id
    assert [(v.node, v.output, v.status) for v in store.history(run_id)] == [
        ("a", "xa", "succeeded"), ("ask", {"approve": "xa"}, "suspended")]


def test_history_shows_a_skipped_visit_with_its_reason(store: RunStore) -> None:
    # DBOS test_workflow_introspection.py::test_list_workflow_steps_error (a step that failed is listed);
    # ours lists a visit skipped by on_error="skip" (a failed visit is in the run's error instead)
    f = (Formation("skips").add_function("a", lambda x: x).add_function("boom", lambda x: 1 / 0, on_error="skip")
         .connect("a", "boom"))
    run_id = f.run("x", store=store).run_id
    history = store.history(run_id)
    assert [(v.node, v.status) for v in history] == [("a", "succeeded"), ("boom", "skipped")]
    assert "ZeroDivisionError" in str(history[1].output)


def test_prune_deletes_old_finished_runs_and_keeps_runs_still_waiting_for_an_answer(location: str) -> None:
    # DBOS test_workflow_management.py::test_garbage_collection (old completed workflows deleted, pending kept)
    with RunStore(location) as store:
        chain(Counter(), "a").run("x", store=store, run_id="old")
        Formation("waits").add_function("ask", lambda x: interrupt("ok?")).run("x", store=store, run_id="waiting")
        time.sleep(0.05)
        assert store.prune(older_than=0.01) == 1
        assert [r.id for r in store.runs()] == ["waiting"]
        assert store.prune(older_than=3600) == 0


# --- fork -------------------------------------------------------------------------------


def test_a_fork_at_a_node_reruns_it_and_what_follows_but_nothing_before(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_restart_fromsteps_stepsonly (fork at step 3: steps 1-2 not rerun)
    counter = Counter()
    f = chain(counter, "one", "two", "three", "four", "five")
    run_id = f.run("x", store=store).run_id
    forked = f.fork(run_id, store=store, at="three", input="y")
    assert forked != run_id and store.load(forked).visits["five"] == {1: "ythreefourfive"}
    assert counter.calls == {"one": 1, "two": 1, "three": 2, "four": 2, "five": 2}
    f.fork(run_id, store=store, at="five", output="replaced")
    assert counter.calls == {"one": 1, "two": 1, "three": 2, "four": 2, "five": 2}  # output= runs nothing at five


def test_a_fork_at_the_first_node_with_the_input_reruns_the_whole_run(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_restart (restart_workflow: same result, new id)
    counter = Counter()
    f = chain(counter, "a", "b")
    run_id = f.run("x", store=store).run_id
    forked = f.fork(run_id, store=store, at="a", input="x")
    assert forked != run_id
    assert store.load(forked).visits["b"] == store.load(run_id).visits["b"] == {1: "xab"}
    assert counter.calls == {"a": 2, "b": 2}


def test_a_fork_leaves_the_original_run_unchanged_and_is_listed_as_a_run_of_its_own(store: RunStore) -> None:
    # DBOS test_rewind.py (rewind rewrites in place); ours forks: the original keeps its history
    f = chain(Counter(), "a", "b", "c")
    run_id = f.run("x", store=store).run_id
    before = [(v.node, v.output) for v in store.history(run_id)]
    forked = f.fork(run_id, store=store, at="b", output="B")
    assert [(v.node, v.output) for v in store.history(run_id)] == before
    assert [(v.node, v.output) for v in store.history(forked)] == [("a", "xa"), ("b", "B"), ("c", "Bc")]
    assert [(r.id, r.formation, r.status) for r in store.runs()] == [
        (run_id, "chain", "succeeded"), (forked, "chain", "succeeded")]


def test_a_fork_of_a_fork_reuses_the_forks_journal(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_restart_fromsteps_childwf (fork of a forked workflow)
    counter = Counter()
    f = chain(counter, "a", "b", "c")
    first = f.fork(f.run("x", store=store).run_id, store=store, at="b", output="B")
    second = f.fork(first, store=store, at="c", input="C")
    assert store.load(second).visits == {"a": {1: "xa"}, "b": {1: "B"}, "c": {1: "Cc"}}
    assert counter.calls == {"a": 1, "b": 1, "c": 3}


def test_a_fork_at_a_visit_the_run_never_made_is_refused_naming_its_history(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_restart_fromsteps_steps_tr ("Cannot fork workflow" past its steps)
    counter = Counter()
    f = chain(counter, "a", "b")
    run_id = f.run("x", store=store).run_id
    with pytest.raises(ForkPointError, match=r"never made visit 7 of node 'b' \(it made 1\).*store.history"):
        f.fork(run_id, store=store, at=("b", 7), output="y")
    with pytest.raises(ForkPointError, match=r"no node 'seven' to fork at; its nodes are 'a', 'b'"):
        f.fork(run_id, store=store, at="seven", output="y")
    assert [r.id for r in store.runs()] == [run_id] and counter.calls == {"a": 1, "b": 1}


def test_a_fork_after_a_nested_formation_reuses_its_inner_visits(store: RunStore) -> None:
    # DBOS test_rewind.py::test_rewound_parent_adopts_its_existing_child (the child is not run again)
    counter = Counter()
    inner = chain(counter, "i1", "i2", name="inner")
    outer = (Formation("outer").add_formation("child", inner).add_function("after", counted(counter, "after"))
             .connect("child", "after"))
    run_id = outer.run("x", store=store).run_id
    forked = outer.fork(run_id, store=store, at="after", input="again")
    assert store.load(forked).visits["after"] == {1: "again"}
    assert counter.calls == {"i1": 1, "i2": 1, "after": 2}


def test_resuming_an_outer_run_whose_inner_node_failed_reruns_only_that_inner_node(store: RunStore) -> None:
    # DBOS test_rewind.py::test_rewind_child_then_parent_to_repair_a_failure
    counter, broken = Counter(), [True]

    def bogus(x: str) -> str:
        counter.hit("bogus")
        if broken[0]:
            raise ValueError("child is bogus")
        return x + "fixed"

    inner = chain(counter, "i1", name="inner").add_function("bogus", bogus).connect("i1", "bogus")
    outer = Formation("outer").add_formation("child", inner)
    with pytest.raises(FormationRuntimeError, match=r"child is bogus"):
        outer.run("x", store=store, run_id="repair")
    broken[0] = False
    assert outer.resume("repair", store=store).output == "xi1fixed"
    assert counter.calls == {"i1": 1, "bogus": 2}


# --- waiting for a message: interrupts and answers -------------------------------------


def test_two_interrupts_in_one_visit_are_answered_in_turn_and_a_resume_without_answer_waits_on(store: RunStore) -> None:
    # DBOS test_dbos.py::test_send_recv (two recv calls in one workflow, each gets its message)
    counter = Counter()

    def receiver(x: str) -> str:
        counter.hit("receiver")
        return f"{interrupt('first?')}{interrupt('second?')}:{x}"

    f = Formation("mailbox").add_function("receiver", receiver)
    assert f.run("x", store=store, run_id="rx").interrupt == {"node": "receiver", "payload": "first?"}
    assert f.resume("rx", store=store, answer="a").interrupt == {"node": "receiver", "payload": "second?"}
    assert f.resume("rx", store=store).interrupt == {"node": "receiver", "payload": "second?"}  # no answer: waits on
    result = f.resume("rx", store=store, answer="b")
    assert (result.status, result.output) == ("succeeded", "ab:x")
    assert store.load("rx").answers("receiver", 1) == ["a", "b"]
    assert counter.calls == {"receiver": 4}  # a function visit reruns; its interrupt() calls return the answers


def test_an_answer_to_a_run_waiting_for_none_is_refused_and_changes_nothing(store: RunStore) -> None:
    # DBOS test_dbos.py::test_send_recv (send to a workflow that does not wait); ours refuses the answer
    counter = Counter()
    f = chain(counter, "a").add_function("boom", lambda x: 1 / 0).connect("a", "boom")
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, run_id="nobody-waits")
    with pytest.raises(NoPendingInterruptError, match=r"no pending interrupt to answer: resume it without answer="):
        f.resume("nobody-waits", store=store, answer="hello")
    assert store.get("nobody-waits").status == "failed" and store.load("nobody-waits").interrupts == ()


def test_a_run_suspended_past_the_stores_suspend_ttl_expires_and_is_not_resumed(path: Path) -> None:
    # DBOS test_dbos.py::test_recv_timeout (a recv that times out); ours: the suspended run expires
    f = Formation("ttl").add_function("ask", lambda x: interrupt("ok?"))
    with RunStore(path, suspend_ttl=0.1) as store:
        f.run("x", store=store, run_id="late")
        time.sleep(0.3)
        assert store.get("late").status == "expired" and [r.id for r in store.runs("expired")] == ["late"]
        with pytest.raises(RunNotResumableError, match=r"it expired.*suspend_ttl; start a new run"):
            f.resume("late", store=store, answer="yes")


# --- concurrency limits -----------------------------------------------------------------


def test_a_node_with_concurrency_one_runs_one_visit_at_a_time_across_runs(store: RunStore) -> None:
    # DBOS test_queue.py::test_queue_concurrency / test_worker_concurrency (concurrency=1: one at a time)
    flight = InFlight()

    def limited(x: int) -> int:
        with flight:
            time.sleep(0.05)
        return x * 10

    f = Formation("queue").add_function("pre", lambda x: x).add_function("limited", limited, concurrency=1)
    with f.connect("pre", "limited").start(store=store) as running:
        futures = [running.submit(k, run_id=f"q{k}") for k in range(5)]
        assert [fu.result(10).output for fu in futures] == [0, 10, 20, 30, 40]
    assert flight.peak == 1
    assert [(r.id, r.status) for r in store.runs()] == [(f"q{k}", "succeeded") for k in range(5)]


def test_cancelled_queued_runs_are_journalled_cancelled_and_resume_later(store: RunStore) -> None:
    # DBOS test_queue.py::test_cancelling_queued_workflows (cancelled while enqueued; resumable)
    counter = Counter()
    gate = Gate(counter, suffix="wait")
    f = Formation("queued").add_function("wait", gate, concurrency=1)
    with f.start(store=store) as running:
        first = running.submit("x", run_id="q0")
        assert gate.reached.wait(5)
        queued = [running.submit(k, run_id=f"q{k}") for k in (1, 2)]
        assert [fu.cancel() for fu in queued] == [True, True]
        gate.opened.set()
        assert first.result(5).output == "xwait"
        for fu in queued:
            with pytest.raises(CancelledError):
                fu.result(5)
        assert [r.id for r in store.runs("cancelled")] == ["q1", "q2"]
        assert counter.calls == {"wait": 1}  # the queued runs never reached the node
        assert [running.resume(f"q{k}").result(5).output for k in (1, 2)] == ["1wait", "2wait"]
    assert [r.status for r in store.runs()] == ["succeeded"] * 3


def test_a_run_timing_out_while_queued_is_journalled_failed_within_its_limit_and_resumes(store: RunStore) -> None:
    # DBOS test_queue.py::test_timeout_queue (a workflow's timeout counts while it waits in the queue)
    counter = Counter()
    gate = Gate(counter, suffix="wait")
    with Formation("queued").add_function("wait", gate, concurrency=1).start(store=store) as running:
        first = running.submit("x", run_id="t0")
        assert gate.reached.wait(5)
        started = time.monotonic()
        late = running.submit("y", run_id="t1", timeout=0.3)
        with pytest.raises(FormationRuntimeError, match=r"run t1 of formation 'queued' timed out after 0.3s"):
            late.result(5)
        assert time.monotonic() - started < 0.3 + 0.5
        assert store.get("t1").status == "failed"
        gate.opened.set()
        assert first.result(5).output == "xwait"
        assert running.resume("t1").result(5).output == "ywait"
    assert counter.calls == {"wait": 2}


# --- the CLI ----------------------------------------------------------------------------


def test_cli_runs_lists_runs_by_status_with_their_run_ids(location: str, capsys: pytest.CaptureFixture[str]) -> None:
    # DBOS test_workflow_cmds.py::test_list_workflows (`dbos workflow list --status`)
    with RunStore(location) as store:
        chain(Counter(), "a").run("x", store=store, run_id="ok")
        with pytest.raises(FormationRuntimeError):
            Formation("fails").add_function("boom", lambda x: 1 / 0).run("x", store=store, run_id="bad")
    assert main(["runs", "--store", location, "--status", "failed", "--json"]) == 0
    assert [(r["run_id"], r["status"]) for r in json.loads(capsys.readouterr().out)] == [("bad", "failed")]
    assert main(["runs", "--store", location, "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == ["ok", "bad"]


def test_cli_runs_show_names_a_failed_runs_node_and_error(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # DBOS test_workflow_cmds.py::test_get_workflow (`dbos workflow get`: status and error)
    with pytest.raises(FormationRuntimeError):
        chain(Counter(), "a").add_function("boom", lambda x: 1 / 0).connect("a", "boom").run(
            "x", store=path, run_id="bad")
    assert main(["runs", "show", "bad", "--store", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["run_id"] == "bad" and shown["status"] == "failed"
    assert "ZeroDivisionError" in json.dumps(shown)


def test_cli_cancel_of_a_suspended_run_sticks_until_resume_continues_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # DBOS test_workflow_cmds.py::test_cancel_workflow then `dbos workflow resume`
    module = tmp_path / "approve.py"
    module.write_text(APPROVE)
    path = tmp_path / "runs.sqlite"
    assert main(["run", str(module), "--input", "topic", "--store", str(path)]) == 0
    capsys.readouterr()
    with RunStore(path) as store:
        (run,) = store.runs("suspended")
    assert main(["runs", "cancel", run.id, "--store", str(path)]) == 0
    assert "cancelled" in capsys.readouterr().out
    with RunStore(path) as store:
        assert store.get(run.id).status == "cancelled"  # still so in a new store
    assert main(["resume", run.id, "--store", str(path), "--answer", '"yes"']) == 0
    capsys.readouterr()
    with RunStore(path) as store:
        assert store.get(run.id).status == "succeeded"
        assert store.load(run.id).visits["approve"] == {1: "draft about topic: yes"}


def test_cli_cancel_of_a_finished_run_says_there_is_nothing_to_cancel(
        path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # DBOS test_workflow_cmds.py (cancel of a completed workflow leaves it completed)
    chain(Counter(), "a").run("x", store=path, run_id="done")
    assert main(["runs", "cancel", "done", "--store", str(path)]) == 1
    assert "already finished (succeeded): nothing to cancel" in capsys.readouterr().err
    with RunStore(path) as store:
        assert store.get("done").status == "succeeded"


APPROVE = '''
from wingman_actors import Formation, interrupt

formation = Formation("approve").add_function("draft", lambda t: f"draft about {t}")
formation.add_function("approve", lambda text: f"{text}: {interrupt({'approve?': text})}")
formation.connect("draft", "approve")
'''


# --- recovery after the process died ----------------------------------------------------


def test_a_run_whose_store_closed_mid_run_is_listed_interrupted_and_resumes_anywhere(location: str) -> None:
    # DBOS test_dbos.py::test_recovery_workflow (PENDING workflows of a gone executor are recovered)
    counter = Counter()
    f = chain(counter, "a", "b")
    gone = RunStore(location)  # an owner that journalled one visit, then went away
    gone.begin_run("chain", f.graph, "x", run_id="orphan")
    gone.record_visit("orphan", "a", 1, "xa")
    gone.close()
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        assert [(r.id, r.status) for r in store.runs()] == [("orphan", "interrupted")]
        assert f.resume("orphan", store=store).output == "xab"
    assert counter.calls == {"b": 1}


def _killed_worker(location: str, ready: str) -> None:
    """The child of the kill test: runs ``one -> wait -> two`` as ``k1``; ``wait`` never returns."""
    f = (Formation("killed").add_function("one", lambda x: x + "1")
         .add_function("wait", lambda x: (Path(ready).touch(), time.sleep(60))[1])
         .add_function("two", lambda x: x + "2").connect("one", "wait").connect("wait", "two"))
    with RunStore(location) as store:
        f.run("x", store=store, run_id="k1")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_whose_process_was_killed_is_interrupted_and_resumes_without_its_journalled_visits(
        location: str, tmp_path: Path) -> None:
    # DBOS test_dbos.py::test_recovery_thread / test_queue.py::test_queue_recovery (recovery after a crash)
    ctx = multiprocessing.get_context("forkserver")
    ready = tmp_path / "ready"
    child = ctx.Process(target=_killed_worker, args=(location, str(ready)))
    child.start()
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.is_alive() and time.monotonic() < deadline, "the child never reached its wait node"
        time.sleep(0.01)
    with RunStore(location, recover=False) as look:  # (a visit's output is journalled soon after it is sent on)
        while "one" not in look.load("k1").visits:
            assert time.monotonic() < deadline, "the child never journalled its first visit"
            time.sleep(0.01)
    child.kill()
    child.join(10)
    until_the_server_has_seen_dead_owners_go(location)
    counter = Counter()
    f = (Formation("killed").add_function("one", counted(counter, "one", lambda x: x + "1"))
         .add_function("wait", counted(counter, "wait", lambda x: x + "w"))
         .add_function("two", counted(counter, "two", lambda x: x + "2")).connect("one", "wait").connect("wait", "two"))
    with RunStore(location) as store:
        assert [(r.id, r.status) for r in store.runs()] == [("k1", "interrupted")]
        assert f.resume("k1", store=store).output == "x1w2"
        assert store.get("k1").status == "succeeded"
    assert counter.calls == {"wait": 1, "two": 1}


def test_a_cancel_requested_for_a_run_whose_process_died_is_refused_and_the_run_stays_resumable(
        location: str) -> None:
    # DBOS test_workflow_management.py::test_cancel_resume for a workflow no executor runs
    f = chain(Counter(), "a", "b")
    gone = RunStore(location)
    gone.begin_run("chain", f.graph, "x", run_id="dead")
    gone.close()
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        assert store.request_cancel("dead") is False
        assert store.get("dead").status == "interrupted"
        assert f.resume("dead", store=store).output == "xab"


def test_a_run_nobody_cancels_runs_every_step_once(store: RunStore) -> None:
    # DBOS test_workflow_cancel.py::test_basic (an uncancelled workflow runs all its steps)
    counter = Counter()
    gate = Gate(counter, suffix="wait")
    gate.opened.set()
    assert gated(counter, gate).run("x", store=store).output == "xonewaittwo"
    assert counter.calls == {"one": 1, "wait": 1, "two": 1}


_DIES = """
import os, sys
from wingman_actors import Formation
from wingman_actors.store import RunStore

def die(x):
    os._exit(3)  # the process ends here, its store never closed: as a crash leaves it

store = RunStore(sys.argv[1])
Formation("dies").add_function("one", lambda x: x + "1").add_function("die", die).connect("one", "die").run(
    "x", store=store, run_id="died")
"""


def test_a_store_open_before_a_process_died_lists_that_process_run_interrupted(location: str) -> None:
    # DBOS test_dbos.py::test_recovery_workflow (list_workflows of a live executor shows a dead one's run PENDING
    # for recovery); ours: a long-lived store (the run viewer's, a server's) sees the run interrupted, not running
    import subprocess
    import sys

    with RunStore(location) as viewer:
        assert viewer.runs() == []
        died = subprocess.run([sys.executable, "-c", _DIES, location], capture_output=True, text=True, timeout=60)
        assert died.returncode == 3, died.stderr
        deadline = time.monotonic() + 10  # (PostgreSQL: until the server has seen the connection go)
        while viewer.get("died").status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert viewer.get("died").status == "interrupted"
        assert [(r.id, r.status) for r in viewer.runs()] == [("died", "interrupted")]
        assert [r.id for r in viewer.runs("interrupted")] == ["died"]
        f = (Formation("dies").add_function("one", lambda x: x + "1").add_function("die", lambda x: x + "!")
             .connect("one", "die"))
        assert f.resume("died", store=viewer).output == "x1!"
