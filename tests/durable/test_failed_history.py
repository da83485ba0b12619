"""A failed run's history, on both stores: ``RunStore.history`` lists the visit that failed
the run (status ``failed``, its error, its attempts and times), after retries, inside a map
item and inside a formation node, and before the visit a resume ran again."""

from __future__ import annotations

import collections
import datetime

import pytest

from wingman_actors import Agent, Formation, interrupt, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.store import RunStore, Visit
from wingman_actors.testing import ScriptedProvider

calls: collections.Counter[str] = collections.Counter()
broken: set[str] = set()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    calls.clear()
    broken.clear()


def inc(x: int) -> int:
    return x + 1


def flaky(x: int) -> int:
    calls["flaky"] += 1
    if "flaky" in broken:
        raise ValueError(f"no luck with {x}")
    return x * 10


def chain(**policies: object) -> Formation:
    """a (+1) → flaky (*10, raises while broken) → c (+1)."""
    return (Formation("chain").add_function("a", inc).add_function("flaky", flaky, **policies)
            .add_function("c", inc).connect("a", "flaky", "c"))


def failed_run(f: Formation, store: RunStore, value: object) -> str:
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(value, store=store)
    assert caught.value.run_id is not None
    return caught.value.run_id


def test_history_lists_the_visit_that_failed_the_run_with_its_error_and_times(location: str) -> None:
    broken.add("flaky")
    with RunStore(location) as store:
        run_id = failed_run(chain(), store, 1)
        history = store.history(run_id)
        record = store.get(run_id)
    assert [(v.node, v.visit, v.status) for v in history] == [("a", 1, "succeeded"), ("flaky", 1, "failed")]
    failed = history[1]
    assert failed.error == "ValueError: no luck with 2" and failed.attempts == 1
    assert failed.output == "failed after 1 attempt(s), which failed the run: ValueError: no luck with 2"
    assert record.error is not None and "ValueError: no luck with 2" in record.error
    assert failed.started == history[0].finished and failed.finished is not None
    assert failed.started <= failed.finished <= record.updated + datetime.timedelta(seconds=1)


def test_the_entries_of_visits_that_did_not_fail_keep_their_fields_and_carry_no_error(location: str) -> None:
    broken.add("flaky")
    with RunStore(location) as store:
        history = store.history(failed_run(chain(), store, 1))
    first = history[0]
    assert (first.node, first.visit, first.output, first.status) == ("a", 1, 2, "succeeded")
    assert (first.error, first.attempts) == (None, None)
    assert isinstance(first, Visit) and first.started is not None and first.finished is not None


def test_a_visit_that_failed_after_its_retries_is_listed_once_with_its_attempts(location: str) -> None:
    broken.add("flaky")
    with RunStore(location) as store:
        history = store.history(failed_run(chain(retries=2, backoff=0), store, 1))
    assert calls["flaky"] == 3
    assert [(v.node, v.status, v.attempts) for v in history] == [("a", "succeeded", None), ("flaky", "failed", 3)]
    assert history[1].error == "ValueError: no luck with 2"
    assert "after 3 attempt(s)" in str(history[1].output)


def test_a_map_item_that_failed_the_run_shows_as_the_failed_visit_of_its_map_node(location: str) -> None:
    def shout(word: str) -> str:
        if word == "bad":
            raise ValueError(f"cannot shout {word!r}")
        return word.upper()

    f = (Formation("m").add_function("split", str.split).add_map("up", shout, max_workers=1)
         .connect("split", "up"))
    with RunStore(location) as store:
        run_id = failed_run(f, store, "fine bad ok")
        history = store.history(run_id)
        items = store.load(run_id).items
    assert [(v.node, v.visit, v.status) for v in history] == [("split", 1, "succeeded"), ("up", 1, "failed")]
    error = history[1].error
    assert error is not None and "item 1" in error and "cannot shout 'bad'" in error
    assert items[("up", 1)] == {0: "FINE", 2: "OK"}  # the items that succeeded stay journalled


def test_a_formation_node_whose_inner_run_failed_is_the_failed_visit_and_its_inner_run_names_the_inner_node(
    location: str
) -> None:
    def boom(x: int) -> int:
        raise ValueError(f"no luck with {x}")

    inner = Formation("inner").add_function("inc", inc).add_function("boom", boom).connect("inc", "boom")
    f = Formation("outer").add_function("src", inc).add_formation("sub", inner).add_function("show", str)
    with RunStore(location) as store:
        run_id = failed_run(f.connect("src", "sub", "show"), store, 1)
        outer = store.history(run_id)
        inner_history = store.history(f"{run_id}/sub/1")
    assert [(v.node, v.status) for v in outer] == [("src", "succeeded"), ("sub", "failed")]
    error = outer[1].error
    assert error is not None and "at node sub/boom" in error and "no luck with 3" in error  # by its path
    assert [(v.node, v.status, v.error) for v in inner_history] == [
        ("inc", "succeeded", None), ("boom", "failed", "ValueError: no luck with 3")]


def test_a_failed_then_resumed_run_lists_the_failed_visit_then_the_one_that_succeeded(location: str) -> None:
    broken.add("flaky")
    f = chain()
    with RunStore(location) as store:
        run_id = failed_run(f, store, 1)
        broken.clear()
        assert f.resume(run_id, store=store).output == 21
        history = store.history(run_id)
    assert [(v.node, v.visit, v.status, v.output) for v in history] == [
        ("a", 1, "succeeded", 2), ("flaky", 1, "failed", history[1].output), ("flaky", 1, "succeeded", 20),
        ("c", 1, "succeeded", 21)]
    failed, again = history[1], history[2]
    assert failed.error == "ValueError: no luck with 2" and again.error is None
    assert failed.finished is not None and again.started is not None and again.finished is not None
    assert failed.finished <= again.started <= again.finished  # run again after the failure, not before


def test_a_run_failed_twice_lists_both_failed_visits_in_order(location: str) -> None:
    broken.add("flaky")
    f = chain()
    with RunStore(location) as store:
        run_id = failed_run(f, store, 1)
        with pytest.raises(FormationRuntimeError):
            f.resume(run_id, store=store)
        history = store.history(run_id)
    assert [(v.node, v.status) for v in history] == [("a", "succeeded"), ("flaky", "failed"), ("flaky", "failed")]
    assert history[1].finished is not None and history[2].finished is not None
    assert history[1].finished <= history[2].finished


def test_a_visit_that_failed_into_its_error_edges_carries_its_error_and_attempts_too(location: str) -> None:
    def handle(failure: object) -> str:
        return "handled"

    broken.add("flaky")
    f = (Formation("edges").add_function("a", inc).add_function("flaky", flaky, retries=1, backoff=0)
         .add_function("handler", handle).connect("a", "flaky").connect("flaky", "handler", on_error=True))
    with RunStore(location) as store:
        result = f.run(1, store=store)
        history = store.history(result.run_id)
    assert [(v.node, v.status, v.error, v.attempts) for v in history] == [
        ("a", "succeeded", None, None), ("flaky", "failed", "ValueError: no luck with 2", 2),
        ("handler", "succeeded", None, None)]


@tool
def charge(amount: int) -> str:
    """Charge an amount after a person approves it."""
    return "charged" if interrupt({"charge": amount}) == "ok" else "refused"


def test_an_agent_visit_that_failed_its_run_after_an_answer_resumes_from_its_journalled_responses(
    location: str
) -> None:
    """The record of the visit that failed the run is no model response: a resume of an agent
    visit that asked, was answered, then failed replays the journalled responses only."""
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "charge", {"amount": 5})]),
                                 AgentError("model down", kind=ErrorKind.AGENT), "done"])
    f = Formation("clerk").add_agent("clerk", Agent("clerk", provider=provider, tools=[charge]))
    with RunStore(location) as store:
        asked = f.run("charge 5", store=store)
        assert asked.status == "suspended"
        with pytest.raises(FormationRuntimeError, match="model down"):
            f.resume(asked.run_id, store=store, answer="ok")
        done = f.resume(asked.run_id, store=store)
        history = store.history(asked.run_id)
    assert done.output == "done" and len(provider.requests) == 3  # the tool call came from the journal
    assert provider.requests[-1].messages[-1].content[0].content == "charged"
    assert [(v.node, v.visit, v.status, v.error) for v in history] == [
        ("clerk", 1, "failed", "AgentError: model down [kind=agent]"), ("clerk", 1, "succeeded", None)]


def test_a_visit_whose_journalled_output_matched_no_route_is_listed_then_its_failure(location: str) -> None:
    """The output was journalled (it succeeded) before routing found no edge for it: the
    history lists the visit, then its failure, which is what failed the run (a resume
    replays the output and fails the same way)."""
    f = (Formation("routes").add_function("a", inc).add_function("big", inc)
         .connect("a", "big", when=lambda x: x > 100))
    with RunStore(location) as store:
        history = store.history(failed_run(f, store, 1))
    assert [(v.node, v.visit, v.status, v.output if v.status == "succeeded" else None) for v in history] == [
        ("a", 1, "succeeded", 2), ("a", 1, "failed", None)]
    error = history[1].error
    assert error is not None and error.startswith("NoRouteError: ")


def test_a_loop_node_that_failed_on_a_later_visit_is_listed_under_that_visit_number(location: str) -> None:
    def count(n: int) -> int:
        if n == 2:
            raise ValueError("two")
        return n + 1

    f = (Formation("loop").add_function("start", inc).add_function("count", count).add_function("done", inc)
         .connect("start", "count").connect("count", "count", when=lambda n: n < 5)
         .connect("count", "done", when=lambda n: n >= 5))
    with RunStore(location) as store:
        history = store.history(failed_run(f, store, -1))
    assert [(v.node, v.visit, v.status) for v in history] == [
        ("start", 1, "succeeded"), ("count", 1, "succeeded"), ("count", 2, "succeeded"), ("count", 3, "failed")]
    assert history[3].started == history[2].finished  # its input: the visit before it


class Unnamed(Exception):
    """An error raised without a message."""


def test_an_error_without_a_message_is_named_by_its_class_alone_as_in_the_run_s_traces(location: str) -> None:
    def silent(x: int) -> int:
        raise Unnamed()

    f = Formation("quiet").add_function("silent", silent)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run(1, store=store)
        assert caught.value.run_id is not None
        [failed] = store.history(caught.value.run_id)
    assert failed.error == "Unnamed" == caught.value.nodes["silent"].error
    assert failed.output == "failed after 1 attempt(s), which failed the run: Unnamed"
