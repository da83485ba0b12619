"""Store and resume on each backend: journalled visits and fleet items, ``interrupt()``
suspending a run from inside a node (in a Ray worker process on Ray), resuming with an
answer, and an agent's journalled model responses replayed instead of asked again.

Node code runs in Ray worker processes, so these tests count calls in files under
``tmp_path`` (closures are shipped by value), and scripted replies that must survive a
resume are chosen from the request rather than by position in the script (each Ray
replica has its own copy of the script).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.store_fixtures import APPROVAL_FORMATION
from wingman_actors import Agent, Formation, interrupt, tool
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.sqlite") as s:
        yield s


def resume(f: Formation, run_id: str, store: RunStore, backend: str, answer: Any = None) -> Any:
    """Resume ``run_id`` on ``backend`` (a started formation resumes on its backend)."""
    with f.start(store=store, backend=backend) as running:
        return running.resume(run_id, answer=answer).result(timeout=50)


class Tally:
    """Counts calls by key in a file: shared by the driver and every Ray worker process."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, key: str) -> None:
        with self.path.open("a") as f:
            f.write(key + "\n")

    def count(self, key: str | None = None) -> int:
        if not self.path.exists():
            return 0
        lines = self.path.read_text().split()
        return len(lines) if key is None else lines.count(key)


def approve(draft: str) -> str:
    verdict = interrupt({"approve?": draft})
    return f"{draft}: {verdict}"


def test_an_interrupt_in_a_function_node_suspends_and_resumes_with_the_answer_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    tally = Tally(tmp_path / "drafts")

    def draft(x: str) -> str:
        tally.add("draft")
        return x.upper()

    f = Formation("approval").add_function("draft", draft).add_function("approve", approve).connect("draft", "approve")
    suspended = f.run("memo", store=store, backend=backend)
    assert suspended.status == "suspended"
    assert suspended.interrupt == {"node": "approve", "payload": {"approve?": "MEMO"}}
    assert store.get(suspended.run_id).status == "suspended"
    assert store.load(suspended.run_id).visits["draft"] == {1: "MEMO"}

    resumed = resume(f, suspended.run_id, store, backend, "yes")
    assert (resumed.status, resumed.output) == ("succeeded", "MEMO: yes")
    assert store.get(suspended.run_id).status == "succeeded"
    assert tally.count("draft") == 1  # journalled: not run again on resume


def test_the_ith_interrupt_of_a_visit_returns_the_ith_answer_on_each_backend(backend: str, store: RunStore) -> None:
    f = Formation("two").add_function("ask", lambda x: (interrupt("first"), interrupt("second")))
    first = f.run(0, store=store, backend=backend)
    assert first.interrupt == {"node": "ask", "payload": "first"}
    second = resume(f, first.run_id, store, backend, 1)
    assert second.interrupt == {"node": "ask", "payload": "second"}
    assert resume(f, first.run_id, store, backend, 2).output == (1, 2)


def test_a_failed_run_resumes_without_rerunning_journalled_visits_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    tally = Tally(tmp_path / "calls")
    down = tmp_path / "down"
    down.write_text("x")

    def a(x: int) -> int:
        tally.add("a")
        return x + 1

    def c(x: int) -> str:
        tally.add("c")
        if down.exists():
            raise RuntimeError("provider outage")
        return f"={x}"

    f = (Formation("chain").add_function("a", a).add_function("b", lambda x: x * 2).add_function("c", c)
         .connect("a", "b").connect("b", "c"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1, store=store, backend=backend)
    run_id = info.value.run_id or ""
    down.unlink()
    result = resume(f, run_id, store, backend)
    assert (result.status, result.output) == ("succeeded", "=4")
    assert (tally.count("a"), tally.count("c")) == (1, 2)
    assert result.nodes["a"].attempts == 0  # fed from the journal


def _shouting_agent(tally: Tally, broken: Path) -> Agent:
    def reply(request: InferenceRequest) -> str:
        text = request.messages[-1].content[0].text or ""
        tally.add(text)
        if broken.exists() and text == "q":
            raise RuntimeError("outage")
        return text.upper()

    return Agent("w", provider=ScriptedProvider([reply], cycle=True))


def test_fleet_items_are_journalled_as_they_finish_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    agent = _shouting_agent(Tally(tmp_path / "seen"), tmp_path / "broken")
    f = Formation("fl").add_function("split", lambda s: s.split()).add_fleet("fleet", agent, max_workers=2)
    f.connect("split", "fleet")
    result = f.run("p q r", store=store, backend=backend)
    assert result.output == ["P", "Q", "R"]
    journal = store.load(result.run_id)
    assert journal.items[("fleet", 1)] == {0: "P", 1: "Q", 2: "R"}
    kinds = [(e.kind, e.node) for e in journal.entries]
    assert kinds.index(("visit", "fleet")) > max(i for i, k in enumerate(kinds) if k == ("item", "fleet"))


def test_a_fleet_resumes_running_only_the_items_not_journalled_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    tally, broken = Tally(tmp_path / "seen"), tmp_path / "broken"
    broken.write_text("x")
    agent = _shouting_agent(tally, broken)
    f = Formation("fl").add_function("split", lambda s: s.split()).add_fleet("fleet", agent, max_workers=3)
    f.connect("split", "fleet")
    with pytest.raises(FormationRuntimeError) as info:
        f.run("p q r", store=store, backend=backend)
    broken.unlink()
    before = {k: tally.count(k) for k in "pqr"}
    result = resume(f, info.value.run_id or "", store, backend)
    assert result.output == ["P", "Q", "R"]
    assert {k: tally.count(k) - before[k] for k in "pqr"} == {"p": 0, "q": 1, "r": 0}


def test_a_fleet_retry_reruns_only_the_items_that_failed_on_each_backend(backend: str, tmp_path: Path) -> None:
    tally, failed_once = Tally(tmp_path / "seen"), tmp_path / "failed-once"

    def reply(request: InferenceRequest) -> str:
        text = request.messages[-1].content[0].text or ""
        tally.add(text)
        if text == "q" and not failed_once.exists():
            failed_once.write_text("x")
            raise RuntimeError("outage")
        return text.upper()

    agent = Agent("w", provider=ScriptedProvider([reply], cycle=True))
    f = Formation("fl").add_fleet("fleet", agent, max_workers=3, retries=1, backoff=0.01)
    result = f.run(["p", "q", "r"], backend=backend)
    assert result.output == ["P", "Q", "R"]
    assert result.nodes["fleet"].attempts == 2
    assert {k: tally.count(k) for k in "pqr"} == {"p": 1, "q": 2, "r": 1}


def _clerk(tally: Tally) -> Formation:
    @tool
    def charge(amount: int) -> str:
        """Charge an amount after a person approves it."""
        return "charged" if interrupt({"charge": amount}) == "ok" else "refused"

    def reply(request: InferenceRequest) -> Any:
        tally.add("model")
        last = request.messages[-1].content[0]
        if last.type == "tool_result":
            return f"done: {last.content}"
        return InferenceResponse.of_tool_calls([("c1", "charge", {"amount": 5})])

    agent = Agent("clerk", provider=ScriptedProvider([reply], cycle=True), tools=[charge])
    return Formation("clerk").add_agent("clerk", agent)


def test_a_tool_interrupt_in_an_agent_resumes_without_repeating_model_calls_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    tally = Tally(tmp_path / "model-calls")
    f = _clerk(tally)
    result = f.run("charge 5", store=store, backend=backend)
    assert result.interrupt == {"node": "clerk", "payload": {"charge": 5}}
    assert tally.count() == 1
    assert len(store.load(result.run_id).progress[("clerk", 1, None)]) == 1  # the model's tool call, journalled
    resumed = resume(f, result.run_id, store, backend, "ok")
    assert resumed.output == "done: charged"
    assert tally.count() == 2  # the tool-call response came from the journal


def _reviewers(tally: Tally) -> Formation:
    @tool
    def approve_item(item: str) -> str:
        """Ask a person to approve an item."""
        return str(interrupt({"approve": item}))

    def reply(request: InferenceRequest) -> Any:
        item = request.messages[0].text
        tally.add(item)
        last = request.messages[-1].content[0]
        if last.type == "tool_result":
            return f"{item} approved: {last.content}"
        if item.startswith("ask"):
            return InferenceResponse.of_tool_calls([(f"call-{item}", "approve_item", {"item": item})])
        return f"done {item}"

    agent = Agent("reviewer", provider=ScriptedProvider([reply], cycle=True), tools=[approve_item])
    return Formation("review").add_fleet("review", agent, max_workers=3)


def test_an_interrupt_in_a_fleet_item_resumes_only_that_item_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    tally = Tally(tmp_path / "model-calls")
    f = _reviewers(tally)
    result = f.run(["a", "ask-b", "c"], store=store, backend=backend)
    assert result.status == "suspended"
    assert result.interrupt == {"node": "review", "payload": {"approve": "ask-b"}}
    assert store.load(result.run_id).items[("review", 1)] == {0: "done a", 2: "done c"}
    pending = store.get(result.run_id).interrupt
    assert pending is not None and (pending.node, pending.item) == ("review", 1)
    assert len(store.load(result.run_id).progress[("review", 1, 1)]) == 1  # ask-b's tool call, journalled
    resumed = resume(f, result.run_id, store, backend, "yes")
    assert (resumed.status, resumed.output) == ("succeeded", ["done a", "ask-b approved: yes", "done c"])
    # one more model call in all: ask-b's tool call came from the journal; a and c were journalled
    assert {k: tally.count(k) for k in ("a", "ask-b", "c")} == {"a": 1, "ask-b": 2, "c": 1}


def test_fleet_items_that_ask_at_once_are_answered_in_turn_without_repeating_model_calls_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    tally = Tally(tmp_path / "model-calls")
    f = _reviewers(tally)
    first = f.run(["ask-x", "plain", "ask-y"], store=store, backend=backend)
    assert first.interrupt == {"node": "review", "payload": {"approve": "ask-x"}}  # the lowest index is recorded
    # ask-y asked too: its tool call is journalled with the suspension, though its question is not
    assert len(store.load(first.run_id).progress[("review", 1, 2)]) == 1
    second = resume(f, first.run_id, store, backend, "ok-x")
    assert second.interrupt == {"node": "review", "payload": {"approve": "ask-y"}}
    done = resume(f, first.run_id, store, backend, "ok-y")
    assert done.output == ["ask-x approved: ok-x", "done plain", "ask-y approved: ok-y"]
    # each asking item: one call before its question, one after its answer; none repeated
    assert {k: tally.count(k) for k in ("ask-x", "plain", "ask-y")} == {"ask-x": 2, "plain": 1, "ask-y": 2}


def test_a_journalled_agent_with_listeners_streams_its_events_and_journals_its_model_replies_on_each_backend(
    backend: str, store: RunStore, tmp_path: Path
) -> None:
    events: list[FormationEvent] = []
    result = _clerk(Tally(tmp_path / "model-calls")).run("charge 5", store=store, backend=backend,
                                                         on_event=events.append)
    assert result.status == "suspended"
    calls = [e.data["name"] for e in events if e.type == FormationEventType.AGENT_TOOL_CALL]
    assert calls == ["charge"]
    assert len(store.load(result.run_id).progress[("clerk", 1, None)]) == 1


@pytest.mark.ray
def test_the_launcher_journals_a_run_on_ray_and_resumes_it_from_the_command_line(
    ray_session: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wingman_actors.cli import main

    module, path = tmp_path / "approval.py", tmp_path / "runs.sqlite"
    module.write_text(APPROVAL_FORMATION)
    assert main(["run", str(module), "--input", "cats", "--store", str(path), "--backend", "ray"]) == 0
    captured = capsys.readouterr()
    assert "is waiting at node 'approve'" in captured.err
    run_id = captured.err.split("wingman-actors resume ")[1].split()[0]
    assert main(["resume", run_id, "--store", str(path), "--answer", '"yes"']) == 0
    assert capsys.readouterr().out.strip() == "draft about cats: yes"


def test_node_outputs_events_and_a_breakpoint_work_on_each_backend(store: RunStore, backend: str) -> None:
    f = Formation("bp").add_function("a", _upper).add_function("b", _exclaim).connect("a", "b")
    events: list[FormationEvent] = []
    with f.start(store=store, backend=backend, on_event=events.append) as running:
        stopped = running.submit("hi", break_after=["a"]).result(timeout=50)
    assert stopped.interrupt == {"node": "a", "payload": {"breakpoint": "after", "output": "HI"}}
    assert [e.data["input"] for e in events if e.type is FormationEventType.NODE_STARTED] == ["hi"]
    done = resume(f, stopped.run_id, store, backend)
    assert (done.output, done.nodes["a"].output, done.nodes["b"].outputs) == ("HI!", "HI", ["HI!"])


def _upper(text: str) -> str:
    return text.upper()


def _exclaim(text: str) -> str:
    return text + "!"
