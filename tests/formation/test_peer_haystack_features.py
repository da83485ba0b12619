"""Behaviours ported from Haystack's pipeline feature scenarios (deepset-ai/haystack,
``test/core/pipeline/features/pipeline_run.feature`` and the ``@given`` pipelines of
``test/core/pipeline/features/test_run.py``) that the earlier ports
(``test_peer_haystack.py``, ``test_peer_haystack_more.py``) left out: routers whose
outputs go round for ever, fallback routes, validator loops, nodes declared out of run
order, a ReAct-style agent loop, joins fed from several sources, and the scenarios that
show where our joins differ from Haystack's sockets.

Each scenario's expected outputs and run order become assertions on ``FormationResult``
and the ``node_started`` order. Haystack's stateful sample components (a generator that
answers differently the second time) are replaced by functions of their input."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.formation.events import FormationEvent


class Inputs:
    """The input of every visit of every node, in start order (``node_started`` data)."""

    def __init__(self) -> None:
        self.by_node: dict[str, list[Any]] = {}

    def __call__(self, event: FormationEvent) -> None:
        if event.type == "node_started" and event.node is not None:
            self.by_node.setdefault(event.node, []).append(event.data.get("input"))


def route(number: int) -> dict[str, int]:
    """Haystack's two routes: a number above 2 goes out as big_number, others as small_number + 2."""
    return {"big_number": number} if number > 2 else {"small_number": number + 2}


def test_two_routers_that_keep_passing_a_big_number_round_stop_at_the_visit_limit() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_an_infinite_loop
    (two ConditionalRouters and a BranchJoiner, max_runs_per_component=1: PipelineMaxComponentRuns)."""
    order = Order()

    f = (Formation("infinite").add_function("entry", lambda x: x)
         .add_function("main_input", lambda x: x, max_visits=1)
         .add_function("first_router", route).add_function("second_router", lambda r: r["big_number"])
         .add_function("small", lambda r: r["small_number"])
         .connect("entry", "main_input", "first_router")
         .connect("first_router", "second_router", when=lambda r: "big_number" in r)
         .connect("first_router", "small", otherwise=True)
         .connect("second_router", "main_input"))
    with pytest.raises(FormationRuntimeError, match=r"node 'main_input' was visited more than max_visits=1") as info:
        f.run(3, on_event=order)
    assert info.value.node == "main_input"
    assert order.nodes == ["entry", "main_input", "first_router", "second_router"]


def test_the_same_loop_ends_through_the_small_number_route_when_the_input_is_small() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_an_infinite_loop
    (the small_number route of the same routers: the loop is only infinite for big numbers)."""
    f = (Formation("finite").add_function("entry", lambda x: x).add_function("main_input", lambda x: x, max_visits=1)
         .add_function("first_router", route).add_function("second_router", lambda r: r["big_number"])
         .add_function("small", lambda r: r["small_number"])
         .connect("entry", "main_input", "first_router")
         .connect("first_router", "second_router", when=lambda r: "big_number" in r).connect("second_router", "main_input")
         .connect("first_router", "small", otherwise=True))
    result = f.run(1)
    assert result.output == 3
    assert result.nodes["main_input"].visits == 1


def sql_pipeline() -> Formation:
    """prompt → llm → router; the router sends a query to the sql querier, or the user's
    question to a fallback prompt and llm."""

    def llm(prompt: str) -> list[str]:
        return ["There's simply no_answer to this question"] if "no_answer" in prompt else ["Some SQL query"]

    def router(llm: list[str], user: dict[str, str]) -> dict[str, str]:
        return {"sql": llm[0]} if "no_answer" not in llm[0] else {"go_to_fallback": user["question"]}

    return (Formation("sql").add_function("user", lambda x: x)
            .add_function("prompt", lambda u: f"Question: {u['question']}; Columns: {u['columns']}")
            .add_function("llm", llm).add_function("router", router)
            .add_function("sql_querier", lambda r: {"results": "This is the query result", "query": r["sql"]})
            .add_function("fallback_prompt", lambda r: f"The query was: {r['go_to_fallback']}")
            .add_function("fallback_llm", llm)
            .connect("user", "prompt", "llm", "router").connect("user", "router")
            .connect("router", "sql_querier", when=lambda r: "sql" in r)
            .connect("router", "fallback_prompt", when=lambda r: "go_to_fallback" in r)
            .connect("fallback_prompt", "fallback_llm"))


@pytest.mark.parametrize(
    ("question", "outputs", "path"),
    [
        ("This is a question with no_answer", {"fallback_llm": ["There's simply no_answer to this question"]},
         ["fallback_prompt", "fallback_llm"]),
        ("This is a question that has an answer",
         {"sql_querier": {"results": "This is the query result", "query": "Some SQL query"}}, ["sql_querier"]),
    ],
    ids=["fallback", "sql"],
)
def test_a_router_fed_by_the_llm_and_the_user_takes_the_fallback_or_the_sql_branch(
    question: str, outputs: dict[str, Any], path: list[str]
) -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_a_component_with_default_inputs_that_doesnt_receive_anything_from_its_sender_but_receives_input_from_user."""
    order = Order()
    result = sql_pipeline().run({"question": question, "columns": "Age, Days"}, on_event=order)
    assert result.outputs == outputs
    assert order.nodes == ["user", "prompt", "llm", "router", *path]
    skipped = {"sql_querier"} if path != ["sql_querier"] else {"fallback_prompt", "fallback_llm"}
    assert {n for n, t in result.nodes.items() if t.status == "skipped"} == skipped


def test_a_validator_loop_sends_the_invalid_reply_and_its_error_back_to_the_prompt_builder() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_a_loop_and_a_component_with_default_inputs_that_doesnt_receive_anything_from_its_sender_but_receives_input_from_user."""

    def prompt_builder(x: dict[str, Any]) -> str:
        if "invalid_replies" in x:
            return f"You already created {x['invalid_replies']}; it raised {x['error_message']}"
        return f"Classify: {x['comment']}"

    def validator(replies: list[str]) -> dict[str, Any]:
        if replies == ["This is an invalid reply"]:
            return {"invalid_replies": replies, "error_message": "this is an error message"}
        return {"valid_replies": replies}

    def llm(prompt: str) -> list[str]:
        return ["This is a valid reply"] if prompt.startswith("You already") else ["This is an invalid reply"]

    inputs, order = Inputs(), Order()
    f = (Formation("validator").add_function("comment", lambda c: {"comment": c})
         .add_function("prompt_builder", prompt_builder).add_function("llm", llm)
         .add_function("output_validator", validator).add_function("valid", lambda v: v["valid_replies"])
         .connect("comment", "prompt_builder", "llm", "output_validator")
         .connect("output_validator", "prompt_builder", when=lambda v: "invalid_replies" in v)
         .connect("output_validator", "valid", otherwise=True))

    def both(event: FormationEvent) -> None:
        inputs(event)
        order(event)

    result = f.run("I loved the meal but the courier was rude", on_event=both)
    assert result.output == ["This is a valid reply"]
    assert order.nodes == ["comment", "prompt_builder", "llm", "output_validator",
                           "prompt_builder", "llm", "output_validator", "valid"]
    assert inputs.by_node["prompt_builder"] == [
        {"comment": "I loved the meal but the courier was rude"},
        {"invalid_replies": ["This is an invalid reply"], "error_message": "this is an error message"},
    ]


def test_nodes_declared_in_another_order_than_they_run_still_run_in_dependency_order() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_multiple_components_with_only_default_inputs_and_are_added_in_a_different_order_from_the_order_of_execution."""
    order = Order()
    f = (Formation("spellcheck")
         .add_function("retriever", lambda q: [f"a document about {q}"])
         .add_function("ranker", lambda prompt_builder3, retriever: sorted(retriever))
         .add_function("prompt_builder2", lambda ranker, prompt_builder3: f"{ranker[0]} answers {prompt_builder3}")
         .add_function("prompt_builder1", lambda q: f"Check the spelling of {q}")
         .add_function("prompt_builder3", lambda replies: replies[0])
         .add_function("llm", lambda p: {"replies": [f"reply to {p}"], "meta": {"meta_key": "meta_value"}})
         .add_function("spellchecker", lambda p: ["What is Acromegaly?"])
         .connect("prompt_builder1", "spellchecker", "prompt_builder3", "retriever", "ranker", "prompt_builder2", "llm")
         .connect("prompt_builder3", "ranker").connect("prompt_builder3", "prompt_builder2"))
    result = f.run("Wha i Acromegaly?", on_event=order)
    assert result.output == {"replies": ["reply to a document about What is Acromegaly? answers What is Acromegaly?"],
                             "meta": {"meta_key": "meta_value"}}
    assert order.nodes == ["prompt_builder1", "spellchecker", "prompt_builder3", "retriever", "ranker",
                           "prompt_builder2", "llm"]


def test_a_node_declared_before_the_node_that_feeds_it_waits_for_it() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::pipeline_that_has_components_added_in_a_different_order_from_the_order_of_execution."""
    order = Order()
    docs = ["Rome is the capital of Italy", "Paris is the capital of France"]

    def prompt_builder(query: str, retriever: list[str]) -> str:
        return "Context: " + "; ".join(retriever) + f" Question: {query}"

    f = (Formation("order").add_function("prompt_builder", prompt_builder)
         .add_function("retriever", lambda q: sorted(docs, key=lambda d: "France" not in d))
         .add_function("query", lambda q: q)
         .connect("retriever", "prompt_builder").connect("query", "prompt_builder"))
    result = f.run("What is the capital of France?", on_event=order)
    assert result.output == ("Context: Paris is the capital of France; Rome is the capital of Italy "
                             "Question: What is the capital of France?")
    assert order.nodes[-1] == "prompt_builder"
    assert sorted(order.nodes[:2]) == ["query", "retriever"]


def react_agent() -> Formation:
    """A ReAct loop: the llm thinks and picks an action; the router searches (and the
    observation goes back to the main input) or finishes."""

    def llm(messages: list[str]) -> str:
        return "Action: finish[Eiffel Tower]" if any("Observation" in m for m in messages) else (
            "Action: google_search[What is taller, Eiffel Tower or Leaning Tower of Pisa]")

    def after_action(llm: str, prompt_builder: list[str]) -> list[str]:
        return [*prompt_builder, llm]

    def tool_extractor(messages: list[str]) -> dict[str, Any]:
        action, _, param = messages[-1].removeprefix("Action: ").partition("[")
        return {"tool": action, "param": param.rstrip("]"), "messages": messages}

    def search_prompt_builder(router: dict[str, Any], router_search: list[str]) -> dict[str, Any]:
        return {"prompt": f"Given {', '.join(router_search)} answer: {router['param']}", "messages": router["messages"]}

    return (Formation("react").add_function("entry", lambda q: [f"Question: {q}"])
            .add_function("main_input", lambda m: m).add_function("prompt_builder", lambda m: m)
            .add_function("llm", llm).add_function("prompt_concatenator_after_action", after_action)
            .add_function("tool_extractor", tool_extractor)
            .add_function("router", lambda t: t)
            .add_function("router_search", lambda t: ["Eiffel Tower is 300 meters tall", "Tower of Pisa is 55 meters tall"])
            .add_function("search_prompt_builder", search_prompt_builder)
            .add_function("search_llm", lambda p: {**p, "reply": "Tower of Pisa is 55 meters tall"})
            .add_function("search_output_adapter", lambda r: {**r, "observation": f"Observation: {r['reply']}"})
            .add_function("prompt_concatenator_after_observation", lambda r: [*r["messages"], r["observation"]])
            .add_function("finish", lambda t: t["param"])
            .connect("entry", "main_input", "prompt_builder", "llm", "prompt_concatenator_after_action",
                     "tool_extractor", "router")
            .connect("prompt_builder", "prompt_concatenator_after_action")
            .connect("router", "router_search", when=lambda t: t["tool"] == "google_search")
            .connect("router", "search_prompt_builder", when=lambda t: t["tool"] == "google_search")
            .connect("router_search", "search_prompt_builder", "search_llm", "search_output_adapter",
                     "prompt_concatenator_after_observation", "main_input")
            .connect("router", "finish", when=lambda t: t["tool"] == "finish"))


def test_a_react_agent_loop_searches_once_then_finishes_with_the_answer() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::that_is_a_simple_agent."""
    order = Order()
    result = react_agent().run("which tower is taller?", on_event=order)
    assert result.output == "Eiffel Tower"
    step = ["main_input", "prompt_builder", "llm", "prompt_concatenator_after_action", "tool_extractor", "router"]
    assert order.nodes == ["entry", *step, "router_search", "search_prompt_builder", "search_llm",
                           "search_output_adapter", "prompt_concatenator_after_observation", *step, "finish"]
    assert result.nodes["main_input"].outputs == [
        ["Question: which tower is taller?"],
        ["Question: which tower is taller?",
         "Action: google_search[What is taller, Eiffel Tower or Leaning Tower of Pisa]",
         "Observation: Tower of Pisa is 55 meters tall"],
    ]
    assert result.nodes["router_search"].visits == 1


def test_two_sources_meet_in_a_variadic_joiner_keyed_in_declaration_order() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::that_has_an_answer_joiner_variadic_component."""
    order = Order()
    f = (Formation("answers").add_function("answer_builder_1", lambda q: {"data": "This is a test answer", "query": q})
         .add_function("answer_builder_2", lambda q: {"data": "This is a second test answer", "query": q})
         .add_function("answer_joiner", lambda d: list(d.values()))
         .connect("answer_builder_1", "answer_joiner").connect("answer_builder_2", "answer_joiner"))
    query = "What's Natural Language Processing?"
    assert f.run(query, on_event=order).output == [
        {"data": "This is a test answer", "query": query}, {"data": "This is a second test answer", "query": query}]
    assert order.nodes[-1] == "answer_joiner"
    assert sorted(order.nodes[:2]) == ["answer_builder_1", "answer_builder_2"]


def test_a_required_parameter_whose_predecessor_was_skipped_fails_the_run_naming_the_fix() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::that_has_a_cycle_that_would_get_it_stuck
    (a component whose mandatory inputs never all arrive: PipelineRuntimeError). Haystack leaves such a
    component unrun; ours runs a fan-in with what arrived and refuses a missing required parameter with a
    PayloadError that says to give it a default."""

    def prompt_builder(comment: str, invalid: str) -> str:
        return f"{comment} {invalid}"

    f = (Formation("stuck").add_function("comment", lambda c: c).add_function("validator", lambda c: c)
         .add_function("invalid", lambda c: c).add_function("prompt_builder", prompt_builder)
         .add_function("valid", lambda c: c)
         .connect("comment", "validator").connect("comment", "prompt_builder")
         .connect("validator", "invalid", when=lambda c: "invalid" in c).connect("invalid", "prompt_builder")
         .connect("validator", "valid", otherwise=True))
    with pytest.raises(FormationRuntimeError, match=r"no value for parameter\(s\) invalid") as info:
        f.run("a valid comment")
    assert info.value.node == "prompt_builder"
    assert "give those parameters defaults" in str(info.value)


def test_the_same_fan_in_runs_with_the_default_when_the_parameter_has_one() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::that_has_a_variadic_component_that_receives_partial_inputs
    (optional inputs of a component whose sender did not send)."""

    def prompt_builder(comment: str, invalid: str | None = None) -> str:
        return f"{comment} {invalid}"

    f = (Formation("optional").add_function("comment", lambda c: c).add_function("validator", lambda c: c)
         .add_function("invalid", lambda c: c).add_function("prompt_builder", prompt_builder)
         .add_function("valid", lambda c: c)
         .connect("comment", "validator").connect("comment", "prompt_builder")
         .connect("validator", "invalid", when=lambda c: "invalid" in c).connect("invalid", "prompt_builder")
         .connect("validator", "valid", otherwise=True))
    assert f.run("a good comment").outputs == {"prompt_builder": "a good comment None", "valid": "a good comment"}
    assert f.run("an invalid comment").outputs == {"prompt_builder": "an invalid comment an invalid comment"}


def test_a_cycle_closed_only_through_a_partial_fan_in_is_refused_naming_the_cycle() -> None:
    """Ported from deepset-ai/haystack test/core/pipeline/features/test_run.py::passes_outputs_outside_cycle
    (its concatenator takes the prompt from inside the loop and the feedback from the router). Haystack's
    loop ends because the concatenator does not run without the feedback; ours runs a fan-in with what
    arrived, so a cycle with no conditional edge of its own could go round for ever and is refused."""

    def concat(code_prompt: str, router: str) -> str:
        return f"{code_prompt}\n{router}"

    f = (Formation("outside").add_function("entry", lambda x: x).add_function("joiner", lambda x: x)
         .add_function("code_prompt", lambda x: x).add_function("router", lambda x: x)
         .add_function("concatenator", concat).add_function("done", lambda x: x)
         .connect("entry", "joiner", "code_prompt", "router")
         .connect("router", "concatenator", when=lambda r: "FAIL" in r).connect("router", "done", otherwise=True)
         .connect("code_prompt", "concatenator", "joiner"))
    with pytest.raises(FormationSetupError, match=r"cycle joiner → code_prompt → concatenator → joiner has no "
                                                  r"conditional edge; add when="):
        f.validate()
