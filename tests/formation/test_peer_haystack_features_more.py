"""More behaviours ported from Haystack's pipeline tests (deepset-ai/haystack): the file
conversion scenarios of ``test/core/pipeline/features/test_run.py`` (a router sending to
several converters, joiners whose branches are skipped, a loop after the joiners), the
loop that passes its values out of the cycle, the self loop of
``test/core/pipeline/test_self_loop.py``, ``max_runs_per_component`` (ours:
``max_visits``), and the connection errors of ``test/core/pipeline/test_pipeline_base.py``.

A Haystack FileTypeRouter sends each mime type out of its own socket; here each converter
hangs on a conditional edge (``when=``) of the router, and a DocumentJoiner is a fan-in
node (a dict keyed by the predecessors that delivered)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.peers import Order, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError

Doc = dict[str, Any]


def joined(d: dict[str, list[Doc]]) -> list[Doc]:
    """Haystack's DocumentJoiner (concatenate): every list received, in predecessor order."""
    return [doc for docs in d.values() for doc in docs]


def converter(kind: str) -> Any:
    return lambda sources: [{"content": s["text"].strip(), "file_type": kind} for s in sources if s["type"] == kind]


def routes(f: Formation, kinds: list[str]) -> Formation:
    f.add_function("router", lambda sources: sources)
    for kind in kinds:
        f.add_function(f"{kind}_converter", converter(kind))
        f.connect("router", f"{kind}_converter", when=lambda s, k=kind: any(x["type"] == k for x in s))
    return f


def split(docs: list[Doc]) -> list[Doc]:
    """Haystack's DocumentSplitter by three words."""
    out = []
    for doc in docs:
        words = doc["content"].split()
        out += [{**doc, "content": " ".join(words[i:i + 3]), "split_id": i // 3} for i in range(0, len(words), 3)]
    return out


SOURCES = [{"type": "csv", "text": "some,header,row"}, {"type": "txt", "text": "Text file content for testing this."},
           {"type": "json", "text": "Some test content"}]


def test_a_router_feeding_three_converters_meets_them_again_in_two_joiners() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_converts_files
    ('a file conversion pipeline with two joiners')."""
    order = Order()
    f = (routes(Formation("two_joiners"), ["txt", "json", "csv"])
         .add_function("b_joiner", joined).add_function("splitter", split).add_function("a_joiner", joined)
         .connect("txt_converter", "b_joiner").connect("json_converter", "b_joiner")
         .connect("csv_converter", "a_joiner").connect("b_joiner", "splitter", "a_joiner"))
    result = f.run(SOURCES, on_event=order)
    assert result.output == [
        {"content": "some,header,row", "file_type": "csv"},
        {"content": "Text file content", "file_type": "txt", "split_id": 0},
        {"content": "for testing this.", "file_type": "txt", "split_id": 1},
        {"content": "Some test content", "file_type": "json", "split_id": 0},
    ]
    assert result.nodes["b_joiner"].visits == result.nodes["a_joiner"].visits == 1
    assert order.nodes.index("a_joiner") > order.nodes.index("splitter") > order.nodes.index("b_joiner")


def three_joiners(f: Formation, join: Any = lambda name: joined) -> Formation:
    """txt and json meet in joiner → splitter; csv and html in DocumentJoiner_1 → page_splitter;
    both splitters meet in DocumentJoiner_2."""
    return (routes(f, ["txt", "json", "csv", "html"])
            .add_function("joiner", join("joiner")).add_function("DocumentJoiner_1", join("DocumentJoiner_1"))
            .add_function("splitter", split).add_function("page_splitter", lambda docs: [{**d, "page": 1} for d in docs])
            .add_function("DocumentJoiner_2", join("DocumentJoiner_2"))
            .connect("txt_converter", "joiner").connect("json_converter", "joiner")
            .connect("csv_converter", "DocumentJoiner_1").connect("html_converter", "DocumentJoiner_1")
            .connect("joiner", "splitter", "DocumentJoiner_2").connect("DocumentJoiner_1", "page_splitter", "DocumentJoiner_2"))


TXT_AND_HTML = [{"type": "txt", "text": "Text file content"}, {"type": "html", "text": "Some content"}]


def test_joiners_whose_other_converter_was_skipped_run_once_with_the_one_that_ran() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_converts_files_with_three_joiners
    (a skipped converter must tell the joiners downstream, or they wait)."""
    seen: dict[str, list[str]] = {}

    def spy(name: str) -> Any:
        def join(d: dict[str, list[Doc]]) -> list[Doc]:
            seen[name] = list(d)
            return joined(d)

        return join

    result = three_joiners(Formation("three_joiners"), spy).run(TXT_AND_HTML)
    assert result.output == [{"content": "Text file content", "file_type": "txt", "split_id": 0},
                             {"content": "Some content", "file_type": "html", "page": 1}]
    assert seen == {"joiner": ["txt_converter"], "DocumentJoiner_1": ["html_converter"],
                    "DocumentJoiner_2": ["splitter", "page_splitter"]}
    assert {n for n, t in result.nodes.items() if t.status == "skipped"} == {"json_converter", "csv_converter"}
    assert all(t.visits == 1 for n, t in result.nodes.items() if t.status == "succeeded")


def test_a_loop_after_three_joiners_goes_round_twice_and_the_joiners_run_once() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_converts_files_with_three_joiners_and_a_loop."""

    def metadata_generator(docs: list[Doc]) -> list[Doc]:
        return [{**d, "iteration": d.get("iteration", 0) + 1} for d in sorted(docs, key=lambda d: d["file_type"])]

    f = (three_joiners(Formation("joiners_loop")).add_function("branch_joiner", lambda docs: docs)
         .add_function("metadata_generator", metadata_generator).add_function("extraction_router", lambda docs: docs)
         .add_function("stop", lambda docs: docs)
         .connect("DocumentJoiner_2", "branch_joiner", "metadata_generator", "extraction_router")
         .connect("extraction_router", "branch_joiner", when=lambda docs: docs[0]["iteration"] == 1)
         .connect("extraction_router", "stop", when=lambda docs: docs[0]["iteration"] == 2))
    result = f.run(TXT_AND_HTML)
    assert result.output == [{"content": "Some content", "file_type": "html", "page": 1, "iteration": 2},
                             {"content": "Text file content", "file_type": "txt", "split_id": 0, "iteration": 2}]
    assert {n: result.nodes[n].visits for n in ("DocumentJoiner_2", "branch_joiner", "metadata_generator",
                                                 "extraction_router", "joiner", "DocumentJoiner_1")} == {
        "DocumentJoiner_2": 1, "branch_joiner": 2, "metadata_generator": 2, "extraction_router": 2,
        "joiner": 1, "DocumentJoiner_1": 1}


def test_a_node_outside_a_loop_joins_the_loops_exit_with_the_oldest_value_the_loop_sent_it() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::passes_outputs_outside_cycle.
    Haystack's answer_builder gets the concatenator's latest prompt (its socket keeps the last value);
    ours queues what a predecessor sends before the join fires and takes the oldest first (DESIGN,
    'Joins are per visit'), so the prompt of the first round meets the router's pass of the third."""

    def llm(prompt: str) -> Doc:
        return {"prompt": prompt, "code": "valid code" if prompt.count("FAIL") >= 2 else "invalid code"}

    def router(c: Doc) -> Doc:
        return {"pass": c["code"]} if c["code"] == "valid code" else {**c, "feedback": "FAIL"}

    order = Order()
    f = (Formation("outside").add_function("entry", lambda x: x).add_function("joiner", lambda x: x)
         .add_function("code_prompt", lambda x: x).add_function("code_llm", llm).add_function("router", router)
         .add_function("concatenator", lambda r: f"{r['prompt']}\n{r['code']}\n{r['feedback']}")
         .add_function("answer_builder", lambda router, concatenator: {"data": router["pass"], "prompt": concatenator})
         .connect("entry", "joiner", "code_prompt", "code_llm", "router")
         .connect("router", "concatenator", when=lambda r: "pass" not in r).connect("concatenator", "joiner")
         .connect("router", "answer_builder", when=lambda r: "pass" in r).connect("concatenator", "answer_builder"))
    task = "Generate code to generate christmas ascii-art"
    result = f.run(task, on_event=order)
    assert result.output == {"data": "valid code", "prompt": f"{task}\ninvalid code\nFAIL"}
    assert result.nodes["concatenator"].outputs == [f"{task}\ninvalid code\nFAIL",
                                                    f"{task}\ninvalid code\nFAIL\ninvalid code\nFAIL"]
    assert result.nodes["code_llm"].visits == 3
    assert order.nodes.count("answer_builder") == 1 and order.nodes[-1] == "answer_builder"


def test_a_greedy_joiner_in_a_loop_takes_the_fast_branch_every_round_and_drops_the_slow_one() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_a_greedy_and_variadic_component_after_a_component_with_default_input
    (a greedy variadic joiner runs with the first input it gets), placed inside a loop: each round's race is
    its own (``join="any"``)."""
    order = Order()
    f = (Formation("greedy_loop").add_function("entry", lambda x: x).add_function("body", lambda x: x)
         .add_function("fast", lambda x: x + 1).add_function("slow", lambda x: (time.sleep(0.2), x + 1000)[1])
         .add_function("first", lambda d: next(iter(d.values())), join="any").add_function("done", lambda x: x)
         .connect("entry", "body").connect("body", "fast", "first").connect("body", "slow", "first")
         .connect("first", "body", when=lambda x: x < 3).connect("first", "done", otherwise=True))
    result = f.run(0, on_event=order)
    assert result.output == 3
    assert result.nodes["first"].outputs == [1, 2, 3]
    assert result.nodes["slow"].outputs == []
    assert order.nodes.count("first") == 3 and order.nodes[-1] == "done"


def test_a_node_that_sends_to_itself_runs_until_its_condition_stops_it() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_self_loop.py (a component connected to itself)."""
    order = Order()
    f = (Formation("self").add_function("entry", lambda x: x).add_function("self_loop", lambda x: x + 1)
         .add_function("done", lambda x: x)
         .connect("entry", "self_loop").connect("self_loop", "self_loop", when=lambda x: x < 5)
         .connect("self_loop", "done", otherwise=True))
    result = f.run(0, on_event=order)
    assert result.output == 5
    assert result.nodes["self_loop"].outputs == [1, 2, 3, 4, 5]
    assert order.nodes == ["entry", *["self_loop"] * 5, "done"]


def test_a_self_loop_without_a_condition_is_refused_naming_the_cycle() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_self_loop.py; Haystack runs a self loop
    until max_runs_per_component; ours refuses a cycle that no condition can end, before it runs."""
    f = (Formation("self").add_function("entry", lambda x: x).add_function("self_loop", lambda x: x)
         .connect("entry", "self_loop", "self_loop"))
    with pytest.raises(FormationSetupError, match=r"cycle self_loop → self_loop has no conditional edge; add when="):
        f.validate()


def bounded_loop(limit: int) -> Formation:
    return (Formation("bounded").add_function("entry", lambda x: x)
            .add_function("body", lambda x: x + 1, max_visits=limit).add_function("done", lambda x: x)
            .connect("entry", "body").connect("body", "body", when=lambda x: x < 3).connect("body", "done", otherwise=True))


def test_a_loop_that_needs_exactly_max_visits_rounds_finishes() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline.py (max_runs_per_component: a
    component may run exactly that many times)."""
    result = bounded_loop(3).run(0)
    assert (result.output, result.nodes["body"].visits) == (3, 3)


def test_one_visit_over_max_visits_fails_the_run_naming_the_node_and_the_limit() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline.py (PipelineMaxComponentRuns
    names the component and its limit)."""
    with pytest.raises(FormationRuntimeError, match=r"node 'body' was visited more than max_visits=3 times") as info:
        bounded_loop(3).run(-1)
    assert info.value.node == "body"
    assert "raise its max_visits" in str(info.value)


def test_max_visits_counts_the_visits_of_one_run_not_of_every_run_in_flight() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline.py (the run counter is reset per
    run): runs submitted at once through one started formation each get the whole budget."""
    with bounded_loop(3).start() as running:
        futures = [running.submit(0) for _ in range(4)]
        results = [fut.result(timeout=30) for fut in futures]
    assert [(r.output, r.nodes["body"].visits) for r in results] == [(3, 3)] * 4


def test_a_node_that_fails_on_a_later_visit_of_its_loop_is_failed_in_the_errors_traces() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_crash_regular_pipeline_outputs_raised.py
    (a component that crashes mid-run: the error names it and carries what ran before)."""

    def body(x: int) -> int:
        if x >= 3:
            raise ValueError(f"cannot take {x}")
        return x + 1

    f = (Formation("crash").add_function("entry", lambda x: x).add_function("body", body)
         .add_function("done", lambda x: x)
         .connect("entry", "body").connect("body", "body", when=lambda x: x < 10).connect("body", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError, match=r"cannot take 3") as info:
        f.run(0)
    trace = info.value.nodes["body"]
    assert (info.value.node, trace.status, trace.visits, trace.outputs) == ("body", "failed", 4, [1, 2, 3])
    assert trace.error is not None and "cannot take 3" in trace.error
    assert [n for n, t in info.value.nodes.items() if t.status == "failed"] == ["body"]


def test_the_node_over_its_visit_limit_is_failed_in_the_errors_traces_naming_the_limit() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline.py (PipelineMaxComponentRuns names
    the component that ran too often)."""
    with pytest.raises(FormationRuntimeError) as info:
        bounded_loop(3).run(-1)
    trace = info.value.nodes["body"]
    assert (trace.status, trace.outputs) == ("failed", [0, 1, 2])
    assert trace.error is not None and "max_visits=3" in trace.error
    assert info.value.nodes["done"].status != "succeeded"


@pytest.mark.parametrize("bad", [0, -1, "3", True])
def test_a_max_visits_that_is_not_a_positive_int_is_refused_when_declared(bad: Any) -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_base.py (Pipeline(max_runs_per_component=...)
    is checked when the pipeline is made)."""
    with pytest.raises(FormationSetupError, match=r"node 'body': max_visits must be an int >= 1"):
        Formation("bad").add_function("body", lambda x: x, max_visits=bad)


@pytest.mark.parametrize(("names", "missing"), [(("third", "second"), "third"), (("first", "third"), "third")],
                         ids=["sender", "receiver"])
def test_connecting_an_undeclared_node_is_refused_naming_it(names: tuple[str, str], missing: str) -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_base.py::test_connect_sender_component_does_not_exist
    and ::test_connect_receiver_component_does_not_exist."""
    f = Formation("pipe").add_function("first", lambda x: x).add_function("second", lambda x: x)
    with pytest.raises(FormationSetupError, match=rf"no node named '{missing}'; declare it first"):
        f.connect(*names)
    assert list(f.graph.edges) == []


def test_a_misspelt_node_in_connect_gets_the_close_name_suggested() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_base.py::test_connect_receiver_socket_does_not_exist
    (the error says what exists)."""
    f = Formation("pipe").add_function("first", lambda x: x).add_function("second", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"no node named 'secnd' \(did you mean 'second'\?\)"):
        f.connect("first", "secnd")


def test_a_node_name_declared_twice_is_refused() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_base.py::test_add_component_with_same_name."""
    f = Formation("pipe").add_function("first", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"already has a node named 'first'; pick another name"):
        f.add_function("first", lambda x: x)


def test_two_senders_into_a_single_typed_parameter_are_refused_naming_the_fix() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_base.py::test_connect_many_outputs_to_the_same_input
    (a non-variadic socket takes one sender). Ours takes both, as a dict, and validation says the
    parameter's type does not fit it, and how to receive them."""

    def second(first: int) -> int:
        return first

    f = (Formation("pipe").add_function("first", lambda x: x).add_function("third", lambda x: x)
         .add_function("second", second).connect("first", "second").connect("third", "second"))
    with pytest.raises(FormationSetupError, match=r"'second' receives a dict \{predecessor: output\} from 'first', "
                                                  r"'third' but its parameter 'first' expects int"):
        f.validate()


def test_an_output_type_that_does_not_fit_the_receiver_is_refused_naming_both_types() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/test_pipeline_base.py::test_connect_type_mismatch."""

    def as_int(x: int) -> int:
        return x

    def as_str(x: str) -> str:
        return x

    f = Formation("pipe").add_function("first", as_int).add_function("second", as_str).connect("first", "second")
    with pytest.raises(FormationSetupError, match=r"edge 'first' → 'second': 'first' outputs int but parameter 'x' "
                                                  r"of 'second' expects str"):
        f.validate()


def test_a_loop_joining_a_value_from_outside_it_is_refused_before_it_could_wait_for_ever() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::that_has_a_cycle_that_would_get_it_stuck
    (PipelineRuntimeError when a loop's component waits for an input that never comes back): ours finds
    the join of a loop value with a value delivered once from outside when the formation is validated."""
    f = (Formation("multi").add_function("entry1", lambda x: x).add_function("entry2", lambda x: 100)
         .add_function("a", lambda x: x + 1).add_function("b", lambda d: d).add_function("done", lambda x: x)
         .connect("entry1", "a", "b").connect("entry2", "b")
         .connect("b", "a", when=lambda d: d["a"] < 3).connect("b", "done", otherwise=True))
    with pytest.raises(FormationSetupError, match=r"node 'b' joins 'a', inside the loop \(cycle a → b → a\), and "
                                                  r"'entry2', outside it") as info:
        f.validate()
    assert "feed 'entry2' to the loop's entry 'a' only" in str(info.value)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_the_joiners_and_their_loop_give_the_same_result_on_ray() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_converts_files_with_three_joiners,
    on backend="ray"."""
    with three_joiners(Formation("three_joiners")).start(backend="ray") as running:
        result = running.submit(TXT_AND_HTML, timeout=90).result(timeout=120)
    assert result.output == [{"content": "Text file content", "file_type": "txt", "split_id": 0},
                             {"content": "Some content", "file_type": "html", "page": 1}]
    assert {n for n, t in result.nodes.items() if t.status == "skipped"} == {"json_converter", "csv_converter"}
