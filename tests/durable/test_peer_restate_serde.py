"""Restate's serialisation and invocation-identity behaviours (restatedev/sdk-python:
``tests/serde.py``, ``examples/pydantic_greeter.py``, ``examples/msgspec_greeter.py``, the
docstrings of ``restate.serde`` and of ``Context.run``; restatedev/e2e: ``Proxy`` and the
idempotent-invocation tests) on our journal: a side effect's result is journalled with its
type and a resumed run gets it back as it was; a run id is the invocation id, and a second
invocation under it never runs the handler twice.

Deliberately different: an idempotency key that Restate has already seen returns the
recorded response (or attaches to the invocation in flight); a ``run_id`` already in the
store is refused, naming the fix (``store.load`` reads the recorded outputs, ``resume``
continues an unfinished run).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, until
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunNotResumableError, RunStore, StoreError


@dataclasses.dataclass
class Greeting:
    """A dataclass result (sdk-python's dataclass serde)."""

    name: str
    times: int


class Mood(enum.Enum):
    HAPPY = "happy"
    GRUMPY = "grumpy"


class GreetingRequest(BaseModel):
    """examples/pydantic_greeter.py's request model."""

    name: str


def failed_then_resumed(store: RunStore, value: Any) -> tuple[Any, Any, int]:
    """Run ``make`` (returning ``value``) -> ``use`` (failing once); resume; what ``use``
    got on the resume, the output, and how often ``make`` ran."""
    counter, got = Counter(), []

    def make(_: Any) -> Any:
        counter.hit("make")
        return value

    def use(x: Any) -> Any:
        if counter.hit("use") == 1:
            raise ConnectionError("down")
        got.append(x)
        return x

    f = Formation("serde").add_function("make", make).add_function("use", use).connect("make", "use")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("go", store=store)
    run_id = caught.value.run_id
    assert run_id is not None
    output = f.resume(run_id, store=store).output
    return got[0], output, counter.count("make")


def test_bytes_from_a_side_effect_come_back_as_the_same_bytes_on_resume(store: RunStore) -> None:
    """From restate sdk-python tests/serde.py::test_bytes_serde."""
    got, output, made = failed_then_resumed(store, bytes(range(20)))
    assert got == output == bytes(range(20)) and isinstance(got, bytes) and made == 1


def test_a_pydantic_result_comes_back_as_the_model_on_resume(store: RunStore) -> None:
    """From restate sdk-python examples/pydantic_greeter.py (PydanticJsonSerde)."""
    got, _, made = failed_then_resumed(store, GreetingRequest(name="bob"))
    assert got == GreetingRequest(name="bob") and type(got) is GreetingRequest and made == 1


def test_a_dataclass_enum_and_datetime_come_back_with_their_types_on_resume(store: RunStore) -> None:
    """From restate sdk-python restate.serde (dataclass and msgspec serdes keep the types)."""
    value = {"greeting": Greeting("bob", 2), "mood": Mood.GRUMPY,
             "at": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), "pair": (1, "a")}
    got, _, made = failed_then_resumed(store, value)
    assert got == value and made == 1
    assert type(got["greeting"]) is Greeting and got["mood"] is Mood.GRUMPY and type(got["pair"]) is tuple


def test_a_side_effect_that_returns_none_is_journalled_and_not_run_again(store: RunStore) -> None:
    """From restate sdk-python docstring of Context.run (a None result is journalled too)."""
    got, output, made = failed_then_resumed(store, None)
    assert (got, output, made) == (None, None, 1)


def test_an_awakeables_pydantic_answer_reaches_the_step_as_the_model(store: RunStore) -> None:
    """From restate sdk-python examples/pydantic_greeter.py with an awakeable (the
    resolved payload is deserialised to the awaited type)."""

    def wait(x: str) -> Any:
        return interrupt("who?")

    f = Formation("typed").add_function("wait", wait)
    f.run("x", store=store, run_id="typed-1")
    assert f.resume("typed-1", store=store, answer=GreetingRequest(name="ann")).output == GreetingRequest(name="ann")


# --- invocation identity ------------------------------------------------------------------


def test_a_second_submit_under_a_finished_run_id_is_refused_and_nothing_runs(store: RunStore) -> None:
    """From restatedev/e2e idempotent invocation tests (the same key does not run the
    handler again); ours refuses the id (see the module docstring)."""
    counter = Counter()
    f = Formation("idem").add_function("h", lambda x: f"{x} #{counter.hit('h')}")
    with f.start(store=store) as running:
        assert running.submit("a", run_id="idem-1").result(timeout=10).output == "a #1"
        with pytest.raises(StoreError, match=r"'idem-1' already exists.*pass a new run_id"):
            running.submit("a", run_id="idem-1").result(timeout=10)
    assert counter.count("h") == 1
    assert store.load("idem-1").visits == {"h": {1: "a #1"}}


def test_two_resumes_of_one_run_at_once_run_it_once_and_the_other_says_it_is_running(store: RunStore) -> None:
    """From restatedev/e2e idempotent invocation tests (a second request while the first is
    in flight does not start a second execution)."""
    state, gate, counter = {"down": True}, threading.Event(), Counter()

    def slow(x: str) -> str:
        counter.hit("slow")
        if state["down"]:
            raise ConnectionError("down")
        gate.wait(10)
        return "ok"

    f = Formation("twice").add_function("a", str).add_function("slow", slow).connect("a", "slow")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)
    run_id = caught.value.run_id or ""
    state["down"] = False
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(f.resume, run_id, store=store)
        assert until(lambda: counter.count("slow") == 2, within=10)  # the first resume is in ``slow``
        with pytest.raises(RunNotResumableError, match="it is running"):
            f.resume(run_id, store=store)
        gate.set()
        assert first.result(timeout=10).output == "ok"
    assert counter.count("slow") == 2


def test_a_result_the_journal_cannot_keep_fails_the_step_at_once_naming_it_and_the_fix(store: RunStore) -> None:
    """From restate sdk-python restate.serde (a result its serde cannot serialise fails the
    call terminally: retrying would repeat the side effect for nothing)."""
    counter = Counter()

    def opaque(x: Any) -> Any:
        counter.hit("opaque")
        return object()

    with pytest.raises(FormationRuntimeError, match=r"output of node 'opaque'.*cannot journal.*allow_pickle=True") as caught:
        Formation("opaque").add_function("opaque", opaque, retries=3, backoff=0.001).run(1, store=store)
    assert caught.value.attempts == 1 and counter.count("opaque") == 1
    assert store.get(caught.value.run_id or "").status == "failed"


def test_an_awakeable_payload_the_journal_cannot_keep_fails_the_step_naming_it(store: RunStore) -> None:
    """From restate sdk-python restate.serde, for what an awakeable waits with."""

    def ask(x: Any) -> Any:
        return interrupt(object())

    with pytest.raises(FormationRuntimeError, match=r"interrupt payload of node 'ask'.*cannot journal") as caught:
        Formation("ask").add_function("ask", ask, retries=2, backoff=0.001).run(1, store=store)
    assert caught.value.attempts == 1
