"""More behaviours ported from Haystack's own test suite (deepset-ai/haystack,
``test/core/pipeline/features/test_run.py`` and ``pipeline_run.feature``, and the async,
breakpoint, drawing and validation tests beside it), translated to formations. The first
batch is ``test_peer_haystack.py``; this one takes the scenarios it left out: the really
complex pipeline, variadic joins whose branches are skipped, loops in the middle, a loop
whose first node is fed back, pipelines run twice or at once through one started
formation, async branches, breakpoints in a loop, drawing and setup errors.

Haystack's sockets become conditional edges (``when=``); a variadic joiner is a fan-in
node (a dict keyed by the predecessors that delivered). Haystack's stateful sample
components (a generator that answers differently the second time) are replaced by
functions of their input, so a formation run twice gives the same answer."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.support.peers import Accumulate, Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError
from wingman_actors.store import RunStore


def add(n: int) -> Any:
    return lambda x: x + n


def double(x: int) -> int:
    return 2 * x


def total(values: dict[str, int]) -> int:
    """Haystack's Sum: the sum of whatever the variadic input received."""
    return sum(values.values())


def complex_pipeline() -> Formation:
    """Haystack's 'really complex' pipeline: two sources, a parity fork whose even branch
    is never taken, a loop through a joiner, a node with two outputs (Repeat) feeding a
    variadic sum, a diff after the loop, a replicate at the end."""
    f = Formation("complex")
    for name, fn in [
        ("greet_first", lambda x: x), ("accumulate_1", Accumulate()), ("add_two", add(2)), ("parity", lambda x: x),
        ("add_one", add(1)), ("accumulate_2", Accumulate()), ("branch_joiner", lambda x: x),
        ("below_10", lambda x: x), ("double", double), ("greet_again", lambda x: x), ("sum", total),
        ("greet_enumerator", lambda x: x), ("enumerate", lambda x: x), ("add_three", add(3)),
        ("diff", lambda sum, accumulate_2: sum - accumulate_2), ("greet_one_last_time", lambda x: x),
        ("replicate", lambda x: x), ("add_five", add(5)), ("add_four", add(4)), ("accumulate_3", Accumulate()),
    ]:
        f.add_function(name, fn)
    return (f.connect("greet_first", "accumulate_1", "add_two", "parity")
            .connect("parity", "greet_again", when=lambda x: x % 2 == 0).connect("greet_again", "sum", "diff")
            .connect("diff", "greet_one_last_time", "replicate", "add_five").connect("replicate", "add_four", "accumulate_3")
            .connect("parity", "add_one", when=lambda x: x % 2 == 1).connect("add_one", "branch_joiner", "below_10")
            .connect("below_10", "double", when=lambda x: x < 10).connect("double", "branch_joiner")
            .connect("below_10", "accumulate_2", otherwise=True).connect("accumulate_2", "diff")
            .connect("greet_enumerator", "enumerate", "sum").connect("enumerate", "add_three", "sum"))


def test_the_really_complex_pipeline_gives_both_outputs_after_its_loop_and_skipped_branch() -> None:
    # haystack features: 'a pipeline that is really complex with lots of components, forks, and loops'
    result = complex_pipeline().run(1)
    assert result.outputs == {"accumulate_3": -7, "add_five": -6}
    assert result.nodes["greet_again"].status == "skipped"
    assert result.nodes["sum"].output == 5  # enumerate's 1 and add_three's 4; greet_again was skipped
    assert result.nodes["branch_joiner"].outputs == [4, 8, 16]
    assert result.nodes["double"].visits == 2
    assert result.nodes["diff"].visits == 1


def variadic_sum() -> Formation:
    """add_one → remainder; even → add_ten, odd → double and add_four → add_one_again; all
    of them and add_one itself meet in one variadic sum."""
    return (Formation("variadic").add_function("add_one", add(1)).add_function("parity", lambda x: x)
            .add_function("add_ten", add(10)).add_function("double", double).add_function("add_four", add(4))
            .add_function("add_one_again", add(1)).add_function("sum", total)
            .connect("add_one", "parity").connect("add_one", "sum")
            .connect("parity", "add_ten", when=lambda x: x % 2 == 0).connect("add_ten", "sum")
            .connect("parity", "double", when=lambda x: x % 2 == 1).connect("double", "sum")
            .connect("parity", "add_four", when=lambda x: x % 2 == 1).connect("add_four", "add_one_again", "sum"))


def test_branches_merging_into_one_variadic_input_sum_only_the_branches_taken() -> None:
    # haystack features: 'a pipeline that has multiple branches that merge into a component with a single variadic input'
    f = variadic_sum()
    assert [f.run(1).output, f.run(2).output] == [14, 17]


def test_runs_in_flight_at_once_through_one_formation_skip_their_own_branches_only() -> None:
    # haystack features: the same variadic pipeline, its two inputs submitted at once (test_pipeline.py: runs share no state)
    with variadic_sum().start() as running:
        futures = [running.submit(x) for x in (1, 2, 1, 2, 1, 2)]
        results = [fut.result(timeout=30) for fut in futures]
    assert [r.output for r in results] == [14, 17, 14, 17, 14, 17]
    assert [r.nodes["add_ten"].status for r in results[:2]] == ["succeeded", "skipped"]
    assert [r.nodes["double"].status for r in results[:2]] == ["skipped", "succeeded"]


def test_branches_of_different_lengths_meet_in_the_variadic_join_once() -> None:
    # haystack features: 'a pipeline that has multiple branches of different lengths that merge into ... a single variadic input'
    seen: list[dict[str, int]] = []

    def sum_seen(values: dict[str, int]) -> int:
        seen.append(values)
        return total(values)

    def slow_add(x: int) -> int:
        time.sleep(0.2)  # the short branches deliver long before this one
        return x + 2

    f = (Formation("lengths").add_function("first_addition", add(2)).add_function("second_addition", slow_add)
         .add_function("third_addition", add(2)).add_function("sum", sum_seen).add_function("fourth_addition", add(1))
         .connect("first_addition", "second_addition", "sum").connect("first_addition", "sum")
         .connect("third_addition", "sum", "fourth_addition"))
    assert f.run(1).output == 12
    assert seen == [{"first_addition": 3, "second_addition": 5, "third_addition": 3}]


def test_a_loop_keeps_every_visits_output_of_every_node_in_it() -> None:
    # haystack features: 'a pipeline that has a loop and returns intermediate outputs from it'
    f = (Formation("loop_outputs").add_function("add_one", add(1)).add_function("branch_joiner", lambda x: x)
         .add_function("below_10", lambda x: x).add_function("accumulator", Accumulate())
         .add_function("below_5", lambda x: x).add_function("add_three", add(3)).add_function("add_two", add(2))
         .connect("add_one", "branch_joiner", "below_10")
         .connect("below_10", "accumulator", when=lambda x: x < 10).connect("below_10", "add_two", otherwise=True)
         .connect("accumulator", "below_5")
         .connect("below_5", "branch_joiner", when=lambda x: x < 5).connect("below_5", "add_three", otherwise=True)
         .connect("add_three", "branch_joiner"))
    result = f.run(3)
    assert {n: t.outputs for n, t in result.nodes.items()} == {
        "add_one": [4], "branch_joiner": [4, 4, 11], "below_10": [4, 4, 11], "accumulator": [4, 8],
        "below_5": [4, 8], "add_three": [11], "add_two": [13],
    }
    assert {n: t.output for n, t in result.nodes.items()} == {
        "add_one": 4, "branch_joiner": 11, "below_10": 11, "accumulator": 8, "below_5": 8, "add_three": 11,
        "add_two": 13,
    }


def guarded_search() -> Formation:
    """A router sends a legit query to three retrieval nodes that meet in two joins, an
    injection to an empty retriever; the final joiner takes whichever side ran."""
    return (Formation("guarded").add_function("router", lambda q: q)
            .add_function("text_embedder", lambda q: [1.0, 2.0])
            .add_function("retriever", lambda emb: ["another document"])
            .add_function("bm25retriever", lambda q: ["a document"])
            .add_function("joinerhybrid", lambda d: sorted(doc for docs in d.values() for doc in docs))
            .add_function("ranker", lambda router, joinerhybrid: joinerhybrid)
            .add_function("emptyretriever", lambda q: [])
            .add_function("joinerfinal", lambda d: d)
            .connect("router", "text_embedder", when=lambda q: "injection" not in q)
            .connect("router", "bm25retriever", when=lambda q: "injection" not in q)
            .connect("router", "ranker", when=lambda q: "injection" not in q)
            .connect("router", "emptyretriever", when=lambda q: "injection" in q)
            .connect("text_embedder", "retriever", "joinerhybrid").connect("bm25retriever", "joinerhybrid", "ranker")
            .connect("ranker", "joinerfinal").connect("emptyretriever", "joinerfinal"))


def test_conditional_branching_into_two_levels_of_joins_fires_the_final_join_either_way() -> None:
    # haystack features: 'a pipeline that is linear with conditional branching and multiple joins'
    f = guarded_search()
    legit = f.run("I'm a legit question")
    assert legit.output == {"ranker": ["a document", "another document"]}
    assert legit.nodes["emptyretriever"].status == "skipped"
    injected = f.run("I'm a nasty prompt injection")
    assert injected.output == {"emptyretriever": []}
    assert {n for n, t in injected.nodes.items() if t.status == "skipped"} == {
        "text_embedder", "retriever", "bm25retriever", "joinerhybrid", "ranker"}


def test_a_variadic_join_waits_for_a_slow_conditional_branch_to_be_skipped() -> None:
    # haystack features: 'a pipeline that has variadic component that receives a conditional input'
    seen: list[dict[str, list[str]]] = []

    def slow(docs: list[str]) -> list[str]:
        time.sleep(0.2)  # the router decides long after the other branches delivered
        return docs

    def joiner(d: dict[str, list[str]]) -> list[str]:
        seen.append(d)
        return [doc for docs in d.values() for doc in docs]

    f = (Formation("conditional_input").add_function("noop2", lambda d: d).add_function("noop3", slow)
         .add_function("conditional_router", lambda d: d).add_function("short", lambda d: d)
         .add_function("empty_lines_cleaner", lambda d: [doc.strip() for doc in d])
         .add_function("comma_splitter", lambda d: [p for doc in d for p in doc.split(",")])
         .add_function("document_cleaner", lambda d: [p.strip() for p in d]).add_function("document_joiner", joiner)
         .connect("noop2", "noop3", "conditional_router")
         .connect("conditional_router", "empty_lines_cleaner", when=lambda d: len(d) > 1)
         .connect("conditional_router", "short", otherwise=True)
         .connect("empty_lines_cleaner", "document_joiner")
         .connect("comma_splitter", "document_cleaner", "document_joiner").connect("comma_splitter", "document_joiner"))
    short = f.run(["a, b"])
    # the joiner's dict is keyed in its predecessors' order (empty_lines_cleaner, document_cleaner, comma_splitter)
    assert short.outputs == {"short": ["a, b"], "document_joiner": ["a", "b", "a", " b"]}
    assert set(seen[0]) == {"comma_splitter", "document_cleaner"}
    long = f.run(["a, b", " c "])
    assert long.outputs == {"document_joiner": ["a, b", "c", "a", "b", "c", "a", " b", " c "]}
    assert set(seen[1]) == {"comma_splitter", "document_cleaner", "empty_lines_cleaner"}


def test_a_loop_in_the_middle_sends_the_rejected_reply_back_and_ends_with_the_valid_one() -> None:
    # haystack features: 'a pipeline that has a loop in the middle' (the llm answers from its prompt, not from state)
    f = (Formation("middle").add_function("prompt_cleaner", str.strip)
         .add_function("prompt_builder", lambda x: f"retry after {x}" if isinstance(x, list) else x)
         .add_function("llm", lambda prompt: ["42"] if prompt.startswith("retry") else ["No answer"])
         .add_function("answer_validator", lambda replies: replies)
         .add_function("answer_builder", lambda replies: {"answer": replies[0]})
         .connect("prompt_cleaner", "prompt_builder", "llm", "answer_validator")
         .connect("answer_validator", "prompt_builder", when=lambda r: "No answer" in r)
         .connect("answer_validator", "answer_builder", otherwise=True))
    order = Order()
    first, second = f.run("  What is the answer?  ", on_event=order), f.run("What is the answer?")
    assert first.output == second.output == {"answer": "42"}
    assert first.nodes["prompt_builder"].outputs == ["What is the answer?", "retry after ['No answer']"]
    assert order.nodes == ["prompt_cleaner", "prompt_builder", "llm", "answer_validator",
                           "prompt_builder", "llm", "answer_validator", "answer_builder"]


@pytest.mark.parametrize("inner_loop", ["self_loop", "two_nodes"])
def test_a_join_after_a_loop_nested_in_another_loop_waits_for_the_inner_loop_to_exit(inner_loop: str) -> None:
    # haystack features: 'a pipeline that has a loop in the middle' placed inside the loop of 'a pipeline that is a
    # simple agent': each agent step retries its llm call until valid, and a join pairs that answer with a search
    seen: list[tuple[int, int]] = []

    def observe(llm: int, search: int) -> int:
        seen.append((llm, search))
        return llm + search

    f = (Formation("nested_loops").add_function("main_input", lambda x: x).add_function("step", lambda x: x)
         .add_function("llm", add(1)).add_function("search", lambda x: 100).add_function("observe", observe)
         .add_function("finish", lambda x: x)
         .connect("main_input", "step").connect("step", "llm").connect("step", "search", "observe")
         .connect("observe", "step", when=lambda x: x < 300).connect("observe", "finish", otherwise=True))
    if inner_loop == "self_loop":
        f.connect("llm", "llm", when=lambda x: x % 3 != 0)  # the reply is not valid yet: ask again
    else:
        f.add_function("retry", lambda x: x).connect("llm", "retry", when=lambda x: x % 3 != 0).connect("retry", "llm")
    f.connect("llm", "observe", otherwise=True)
    result = f.run(1)
    assert seen == [(3, 100), (105, 100), (207, 100)]
    assert result.output == 307


def test_breaking_before_the_join_after_a_nested_loop_stops_once_per_outer_round(store: RunStore) -> None:
    # haystack breakpoints/test_pipeline_breakpoints_loops.py, with the inner retry loop of the test above
    f = (Formation("nested_breaks").add_function("main_input", lambda x: x).add_function("step", lambda x: x)
         .add_function("llm", add(1)).connect("main_input", "step")
         .add_function("search", lambda x: 100).add_function("observe", lambda llm, search: llm + search)
         .add_function("finish", lambda x: x)
         .connect("step", "llm").connect("step", "search", "observe").connect("llm", "llm", when=lambda x: x % 3 != 0)
         .connect("llm", "observe", otherwise=True)
         .connect("observe", "step", when=lambda x: x < 300).connect("observe", "finish", otherwise=True))
    result, inputs = f.run(1, store=store, break_before=["observe"]), []
    while result.status == "suspended":
        assert result.interrupt is not None
        inputs.append(result.interrupt["payload"]["input"])
        result = f.resume(result.run_id, store=store)
    assert inputs == [{"llm": 3, "search": 100}, {"llm": 105, "search": 100}, {"llm": 207, "search": 100}]
    assert result.output == 307


def test_a_loop_with_no_entry_is_refused_naming_the_fix_and_runs_once_given_the_entry() -> None:
    # haystack features: 'a pipeline that has a component with only default inputs as first to run and receives inputs from a loop'
    # DESIGN differs on purpose: Haystack feeds the first component by name; a cycle with no node outside it has
    # no source here (any of its nodes could be the first), so validation asks for an entry node.
    def prompt_builder(x: Any) -> str:
        return f"Question: {x['question']}" if isinstance(x, dict) else f"Previously you replied {x}"

    def build(entry: bool) -> Formation:
        f = (Formation("first_in_loop").add_function("prompt_builder", prompt_builder)
             .add_function("generator", lambda p: ["Rome"] if p.startswith("Previously") else ["Paris"])
             .add_function("router", lambda replies: replies).add_function("correct_replies", lambda r: r)
             .connect("prompt_builder", "generator", "router")
             .connect("router", "prompt_builder", when=lambda r: r == ["Paris"])
             .connect("router", "correct_replies", when=lambda r: r == ["Rome"]))
        return f.add_function("start", lambda x: x).connect("start", "prompt_builder") if entry else f

    with pytest.raises(FormationSetupError, match=r"add an entry node feeding 'prompt_builder'"):
        build(entry=False).validate()
    result = build(entry=True).run({"question": "What is the capital of Italy?"})
    assert result.output == ["Rome"]
    assert result.nodes["prompt_builder"].outputs == ["Question: What is the capital of Italy?",
                                                      "Previously you replied ['Paris']"]
    assert result.nodes["router"].visits == 2


def test_async_branches_of_one_pipeline_run_at_the_same_time_under_arun() -> None:
    # haystack test_async_pipeline.py (AsyncPipeline runs ready components concurrently): two async def branches overlap
    spans: dict[str, tuple[float, float]] = {}

    def branch(name: str) -> Any:
        async def run(x: int) -> int:
            start = time.monotonic()
            await asyncio.sleep(0.4)
            spans[name] = (start, time.monotonic())
            return x + 1

        return run

    f = (Formation("async_branches").add_function("start", lambda x: x)
         .add_function("left", branch("left")).add_function("right", branch("right"))
         .add_function("join", lambda left, right: left + right)
         .connect("start", "left", "join").connect("start", "right", "join"))
    assert asyncio.run(f.arun(1)).output == 4
    (l0, l1), (r0, r1) = spans["left"], spans["right"]
    assert l0 < r1 and r0 < l1  # the two sleeps overlapped


def test_a_pipeline_run_with_arun_twice_gives_two_independent_results() -> None:
    # haystack test_async_pipeline.py::test_async_pipeline_reentrance (the same pipeline run concurrently)
    async def slow_double(x: int) -> int:
        await asyncio.sleep(0.05 * x)
        return 2 * x

    f = Formation("reentrant").add_function("add_one", add(1)).add_function("double", slow_double).connect("add_one", "double")

    async def main() -> list[Any]:
        return [r.output for r in await asyncio.gather(*(f.arun(x) for x in (3, 1, 2)))]

    assert asyncio.run(main()) == [8, 4, 6]


def test_breaking_before_a_node_in_a_loop_stops_at_each_of_its_visits(store: RunStore) -> None:
    # haystack test_breakpoint.py / breakpoints/test_pipeline_breakpoints_loops.py (a breakpoint inside a loop, visit after visit)
    f = (Formation("loop").add_function("entry", lambda x: x).add_function("body", add(1)).add_function("done", lambda x: x)
         .connect("entry", "body").connect("body", "body", when=lambda x: x < 3).connect("body", "done", otherwise=True))
    first = f.run(0, store=store, break_before=["body"])
    assert (first.status, first.interrupt) == (
        "suspended", {"node": "body", "payload": {"breakpoint": "before", "input": 0}})
    inputs = [first.interrupt["payload"]["input"]]
    result = f.resume(first.run_id, store=store)
    while result.status == "suspended":
        assert result.interrupt is not None
        inputs.append(result.interrupt["payload"]["input"])
        result = f.resume(first.run_id, store=store)
    assert (result.status, result.output) == ("succeeded", 3)
    assert inputs == [0, 1, 2]


def test_to_mermaid_keeps_an_inner_node_apart_from_an_outer_node_of_the_same_name() -> None:
    # haystack test_draw.py (every component drawn once, every connection drawn): inner names repeat outer ones
    inner = Formation("inner").add_function("a", str).add_function("b", str).connect("a", "b")
    f = (Formation("outer").add_function("a", str).add_formation("sub", inner).add_function("b", str)
         .connect("a", "sub", "b"))
    text = f.to_mermaid()
    ids = [line.split("[", 1)[0].strip() for line in text.splitlines() if '["' in line and "subgraph" not in line]
    assert len(ids) == len(set(ids)) == 4
    assert "subgraph sub" in text
    assert text.count("-->") == 3


def test_a_type_mismatch_across_a_nested_formation_names_both_sides_and_the_fix() -> None:
    # haystack test_pipeline_base.py::test_connect_*_type_mismatch (the error names both sockets and their types)
    def count(text: str) -> int:
        return len(text)

    def shout(text: str) -> str:
        return text.upper()

    inner = Formation("inner").add_function("shout", shout)
    f = Formation("outer").add_function("count", count).add_formation("sub", inner).connect("count", "sub")
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    text = str(info.value)
    assert "count" in text and "shout" in text
    assert "int" in text and "str" in text


def test_a_join_whose_parameter_misspells_a_predecessor_is_refused_naming_both_and_the_fix() -> None:
    # haystack test_pipeline_base.py::test_connect_* (a socket name that does not exist: the error lists what does)
    def diff(first_addition: int, third_adition: int) -> int:
        return first_addition - third_adition

    f = (Formation("misspelt").add_function("first_addition", add(2)).add_function("third_addition", add(2))
         .add_function("diff", diff).connect("first_addition", "diff").connect("third_addition", "diff"))
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    text = str(info.value)
    assert "'diff'" in text and "'third_adition'" in text and "'third_addition'" in text
    assert "name each parameter after a predecessor" in text


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_runs_in_flight_at_once_on_ray_skip_their_own_branches_only() -> None:
    # haystack features: 'multiple branches that merge into a component with a single variadic input', on backend="ray"
    with variadic_sum().start(backend="ray") as running:
        futures = [running.submit(x, timeout=90) for x in (1, 2, 2, 1)]
        results = [fut.result(timeout=120) for fut in futures]
    assert [r.output for r in results] == [14, 17, 17, 14]
    assert [r.nodes["add_ten"].status for r in results] == ["succeeded", "skipped", "skipped", "succeeded"]
