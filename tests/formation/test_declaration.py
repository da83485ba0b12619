"""Formation declaration: the builder writes the documented attributes, and the compiled
plan (defaults, sources, sinks, order, back edges, fan-in modes, adapters)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest
from pydantic import BaseModel

from wingman_actors import Agent
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import Formation, NodeSpec, Plan
from wingman_actors.testing import ScriptedProvider


class Verdict(BaseModel):
    ok: bool
    notes: str = ""


def agent(name: str = "a", **kwargs: Any) -> Agent:
    return Agent(name, provider=ScriptedProvider([]), **kwargs)


def parse(text: str) -> int:
    return int(text)


def double(n: int) -> int:
    return 2 * n


def show(n: int) -> str:
    return str(n)


def is_ok(v: Verdict) -> bool:
    return v.ok


def not_ok(v: Verdict) -> bool:
    return not v.ok


def judge(draft: str) -> Verdict:
    return Verdict(ok=True)


def loop_formation() -> Formation:
    """topic → write → check; check → publish when ok; check → write when not ok (back edge)."""
    return (
        Formation("loop")
        .add_function("topic", str.strip)
        .add_agent("write", agent("writer"))
        .add_function("check", judge)
        .add_function("publish", lambda v: v.notes)
        .connect("topic", "write", "check")
        .connect("check", "publish", when=is_ok)
        .connect("check", "write", when=not_ok)
    )


# --- Formation and its graph ---------------------------------------------------------


def test_formation_starts_with_an_empty_digraph() -> None:
    f = Formation("f")
    assert type(f.graph) is nx.DiGraph and f.graph.number_of_nodes() == 0
    assert f.name == "f"


def test_formation_keeps_the_graph_it_is_given() -> None:
    g = nx.DiGraph()
    assert Formation("f", g).graph is g


@pytest.mark.parametrize("graph", [nx.MultiDiGraph(), nx.Graph(), {}])
def test_formation_refuses_a_graph_that_is_not_a_digraph(graph: Any) -> None:
    with pytest.raises(FormationSetupError, match=r"must be a networkx\.DiGraph.*networkx\.DiGraph\(graph\)"):
        Formation("f", graph)


def test_formation_refuses_an_empty_name() -> None:
    with pytest.raises(FormationSetupError, match="non-empty name"):
        Formation(" ")


def test_nodes_lists_names_in_declaration_order() -> None:
    f = Formation("f").add_function("b", double).add_function("a", double)
    assert f.nodes == ["b", "a"]


def test_repr_shows_name_and_size() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double).connect("a", "b")
    assert repr(f) == "Formation('f', nodes=2, edges=1)"


# --- builder attributes --------------------------------------------------------------


def test_add_function_writes_kind_and_fn_only() -> None:
    f = Formation("f").add_function("a", double)
    assert dict(f.graph.nodes["a"]) == {"kind": "function", "fn": double}


def test_builder_writes_only_the_policies_given() -> None:
    f = Formation("f").add_function("a", double, retries=2, timeout=5.0, on_error="skip")
    assert dict(f.graph.nodes["a"]) == {
        "kind": "function", "fn": double, "retries": 2, "timeout": 5.0, "on_error": "skip",
    }


def test_add_agent_writes_prompt_only_when_given() -> None:
    a = agent()
    f = Formation("f").add_agent("x", a).add_agent("y", a, prompt="About {input}")
    assert dict(f.graph.nodes["x"]) == {"kind": "agent", "agent": a}
    assert dict(f.graph.nodes["y"]) == {"kind": "agent", "agent": a, "prompt": "About {input}"}


def test_add_fleet_always_writes_max_workers() -> None:
    a = agent()
    f = Formation("f").add_fleet("x", a).add_fleet("y", a, max_workers=3)
    assert dict(f.graph.nodes["x"]) == {"kind": "fleet", "agent": a, "max_workers": 0}
    assert f.graph.nodes["y"]["max_workers"] == 3


def test_connect_without_when_writes_no_edge_attribute() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double).connect("a", "b")
    assert dict(f.graph.edges["a", "b"]) == {}


def test_connect_chains_consecutive_names_and_applies_when_to_each_edge() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double).add_function("c", double)
    f.connect("a", "b", "c", when=bool)
    assert list(f.graph.edges(data=True)) == [("a", "b", {"when": bool}), ("b", "c", {"when": bool})]


def test_builder_graph_equals_a_graph_built_by_hand() -> None:
    a = agent()
    built = (
        Formation("f")
        .add_function("load", parse, retries=1)
        .add_agent("ask", a, prompt="{input}", timeout=30)
        .add_fleet("many", a, max_workers=4, concurrency=2)
        .connect("load", "ask")
        .connect("ask", "many", when=bool)
    )
    g = nx.DiGraph()
    g.add_node("load", kind="function", fn=parse, retries=1)
    g.add_node("ask", kind="agent", agent=a, prompt="{input}", timeout=30)
    g.add_node("many", kind="fleet", agent=a, max_workers=4, concurrency=2)
    g.add_edge("load", "ask")
    g.add_edge("ask", "many", when=bool)
    assert nx.utils.graphs_equal(built.graph, g)


def test_a_hand_built_graph_compiles_to_the_same_plan() -> None:
    built = Formation("f").add_function("a", parse).add_function("b", double, retries=2).connect("a", "b")
    g = nx.DiGraph()
    g.add_node("a", kind="function", fn=parse)
    g.add_node("b", kind="function", fn=double, retries=2)
    g.add_edge("a", "b")
    p1, p2 = built.validate(), Formation("f", g).validate()
    strip = ("input_adapter", "kwarg_adapters")  # adapters are equal in behaviour, not identity
    for name in ("a", "b"):
        d1, d2 = (
            {f.name: getattr(p.nodes[name], f.name) for f in dataclasses.fields(NodeSpec) if f.name not in strip}
            for p in (p1, p2)
        )
        assert d1 == d2
    assert (p1.sources, p1.sinks, p1.order, p1.edges) == (p2.sources, p2.sinks, p2.order, p2.edges)


def test_builder_methods_return_the_formation() -> None:
    f = Formation("f")
    assert f.add_function("a", double) is f
    assert f.add_agent("b", agent()) is f
    assert f.add_fleet("c", agent()) is f
    assert f.connect("a", "b") is f


def test_builder_refuses_a_duplicate_node_name() -> None:
    f = Formation("f").add_function("a", double)
    with pytest.raises(FormationSetupError, match="already has a node named 'a'"):
        f.add_agent("a", agent())


def test_builder_refuses_an_unknown_policy_and_suggests_the_right_one() -> None:
    with pytest.raises(FormationSetupError, match=r"unknown policy keyword\(s\) 'retry'.*did you mean 'retries'"):
        Formation("f").add_function("a", double, retry=3)


def test_builder_says_which_nodes_take_a_prompt() -> None:
    with pytest.raises(FormationSetupError, match=r"prompt applies only to agent and fleet nodes"):
        Formation("f").add_function("a", double, prompt="{input}")


def test_builder_refuses_a_policy_value_out_of_range() -> None:
    with pytest.raises(FormationSetupError, match=r"node 'a': retries must be an int >= 0.*got -1"):
        Formation("f").add_function("a", double, retries=-1)


def test_add_function_refuses_a_non_callable() -> None:
    with pytest.raises(FormationSetupError, match="fn must be callable, got int"):
        Formation("f").add_function("a", 3)  # type: ignore[arg-type]


def test_add_agent_refuses_something_that_is_not_an_agent() -> None:
    with pytest.raises(FormationSetupError, match="agent must be an Agent"):
        Formation("f").add_agent("a", "writer")  # type: ignore[arg-type]


def test_add_function_declares_a_node_created_by_a_hand_added_edge() -> None:
    f = Formation("f").add_function("a", double)
    f.graph.add_edge("a", "b")
    f.add_function("b", double)
    assert f.graph.nodes["b"]["kind"] == "function"


def test_connect_refuses_an_undeclared_name_and_suggests_a_close_one() -> None:
    f = Formation("f").add_function("parse", parse)
    with pytest.raises(FormationSetupError, match=r"no node named 'prase' \(did you mean 'parse'\?\); declare it first"):
        f.add_function("show", show).connect("prase", "show")
    assert f.graph.number_of_edges() == 0


def test_connect_refuses_an_edge_declared_twice() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double).connect("a", "b")
    with pytest.raises(FormationSetupError, match="edge 'a' → 'b' is declared twice"):
        f.connect("a", "b")


def test_connect_needs_two_names() -> None:
    with pytest.raises(FormationSetupError, match="two or more node names"):
        Formation("f").add_function("a", double).connect("a")


def test_connect_refuses_a_non_callable_when() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double)
    with pytest.raises(FormationSetupError, match="when must be a predicate"):
        f.connect("a", "b", when=True)  # type: ignore[arg-type]


def test_builder_errors_are_setup_errors_and_value_errors() -> None:
    with pytest.raises(ValueError, match="already has a node named 'a'") as info:
        Formation("f").add_function("a", double).add_function("a", double)
    assert isinstance(info.value, FormationSetupError) and info.value.formation == "f"


def test_builder_reports_every_problem_of_one_call_at_once() -> None:
    with pytest.raises(FormationSetupError) as info:
        Formation("f").add_function("a", double).add_function("a", 3, retries=-1, retry=2)  # type: ignore[arg-type]
    problems = info.value.problems
    assert len(problems) == 4, problems
    assert all(p.startswith("add_function('a', ...): ") for p in problems)
    for needle in ("already has a node named 'a'", "fn must be callable", "retries must be", "'retry'"):
        assert any(needle in p for p in problems), needle


def test_builder_refuses_a_node_name_that_is_not_a_str() -> None:
    with pytest.raises(FormationSetupError, match=r"add_function\(3, ...\): a node name must be a non-empty str"):
        Formation("f").add_function(3, double)  # type: ignore[arg-type]


def test_connect_reports_every_bad_name_and_edge_in_one_error() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double).connect("a", "b")
    with pytest.raises(FormationSetupError) as info:
        f.connect("a", "b", "c", "d")
    assert info.value.problems == [
        "connect('a', 'b', 'c', 'd'): no node named 'c'; declare it first with add_function/add_agent/add_fleet/add_map/add_formation",
        "connect('a', 'b', 'c', 'd'): no node named 'd'; declare it first with add_function/add_agent/add_fleet/add_map/add_formation",
        "connect('a', 'b', 'c', 'd'): edge 'a' → 'b' is declared twice; connect each pair once",
    ]
    assert f.graph.number_of_edges() == 1


def test_add_fleet_refuses_a_bad_max_workers_at_once() -> None:
    with pytest.raises(FormationSetupError, match=r"node 'many': max_workers must be an int >= 0"):
        Formation("f").add_fleet("many", agent(), max_workers=-2)


# --- the compiled plan ---------------------------------------------------------------


def test_plan_applies_policy_defaults() -> None:
    spec = Formation("f").add_function("a", double).validate().nodes["a"]
    assert (spec.retries, spec.backoff, spec.timeout, spec.on_error) == (0, 0.1, None, "fail")
    assert (spec.concurrency, spec.max_visits, spec.max_workers, spec.prompt) == (1, 10, 0, None)


def test_plan_keeps_the_policies_given() -> None:
    f = Formation("f").add_agent("a", agent(), prompt="{input}", retries=3, backoff=1, timeout=2, max_visits=4)
    spec = f.validate().nodes["a"]
    assert (spec.retries, spec.backoff, spec.timeout, spec.max_visits, spec.prompt) == (3, 1.0, 2.0, 4, "{input}")
    assert isinstance(spec.backoff, float) and isinstance(spec.timeout, float)


def test_plan_and_specs_are_frozen() -> None:
    plan = Formation("f").add_function("a", double).validate()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.name = "g"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.nodes["b"] = plan.nodes["a"]  # type: ignore[index]
    assert not hasattr(plan.nodes["a"], "__dict__")  # slots


def test_plan_finds_sources_sinks_and_a_stable_topological_order() -> None:
    f = (
        Formation("f")
        .add_function("z", double).add_function("b", double).add_function("a", double)
        .add_function("m", lambda d: d)
        .connect("z", "a", "m").connect("z", "b", "m")
    )
    plan = f.validate()
    assert plan.sources == ("z",) and plan.sinks == ("m",)
    assert plan.order == ("z", "b", "a", "m")  # ties broken by declaration order


def test_back_edge_is_the_one_closing_the_cycle() -> None:
    plan = loop_formation().validate()
    back = [(e.source, e.target) for e in plan.edges if e.back]
    assert back == [("check", "write")]
    assert plan.nodes["write"].forward_preds == ("topic",)
    assert plan.nodes["write"].back_preds == ("check",)


def test_a_node_whose_only_outgoing_edges_are_back_edges_is_not_a_sink() -> None:
    f = (
        Formation("f").add_function("s", double).add_function("a", double).add_function("b", double)
        .add_function("end", double)
        .connect("s", "a", "b").connect("b", "a", when=lambda x: x < 100).connect("a", "end", when=lambda x: x >= 100)
    )
    plan = f.validate()
    assert plan.sinks == ("end",) and not plan.nodes["b"].is_sink and not plan.nodes["a"].is_sink


def test_out_edges_hold_forward_and_back_edges_with_labels() -> None:
    spec = loop_formation().validate().nodes["check"]
    assert [(e.target, e.back, e.label) for e in spec.out_edges] == [
        ("publish", False, "is_ok"),
        ("write", True, "not_ok"),
    ]
    assert spec.out_edges[0].when is is_ok


def test_lambda_predicate_is_labelled_when() -> None:
    f = Formation("f").add_function("a", double).add_function("b", double).connect("a", "b", when=lambda x: x > 1)
    assert f.validate().edges[0].label == "when"


def test_unconditional_edge_has_empty_label_and_no_predicate() -> None:
    edge = Formation("f").add_function("a", double).add_function("b", double).connect("a", "b").validate().edges[0]
    assert (edge.when, edge.label, edge.back) == (None, "", False)


def test_source_and_single_predecessor_nodes_are_in_single_mode() -> None:
    plan = loop_formation().validate()
    assert plan.nodes["topic"].is_source and plan.nodes["topic"].input_mode == "single"
    assert plan.nodes["check"].input_mode == "single" and not plan.nodes["check"].is_source


def test_fan_in_to_an_agent_is_dict_mode() -> None:
    f = (
        Formation("f").add_function("s", double).add_function("a", double).add_function("b", double)
        .add_agent("join", agent()).connect("s", "a", "join").connect("s", "b", "join")
    )
    spec = f.validate().nodes["join"]
    assert spec.input_mode == "dict" and spec.forward_preds == ("a", "b")


def test_fan_in_to_a_one_parameter_function_is_dict_mode() -> None:
    def merge(results: dict[str, int]) -> int:
        return sum(results.values())

    f = (
        Formation("f").add_function("s", double).add_function("a", double).add_function("b", double)
        .add_function("m", merge).connect("s", "a", "m").connect("s", "b", "m")
    )
    spec = f.validate().nodes["m"]
    assert spec.input_mode == "dict" and spec.kwarg_adapters == {}
    assert spec.input_adapter is not None and spec.input_adapter.validate_python({"a": "1"}) == {"a": 1}


def test_fan_in_to_a_function_with_parameters_named_after_predecessors_is_kwargs_mode() -> None:
    def merge(a: int, b: str) -> str:
        return b * a

    f = (
        Formation("f").add_function("s", str.strip).add_function("a", parse).add_function("b", str.upper)
        .add_function("m", merge).connect("s", "a", "m").connect("s", "b", "m")
    )
    spec = f.validate().nodes["m"]
    assert spec.input_mode == "kwargs" and spec.input_adapter is None
    assert set(spec.kwarg_adapters) == {"a", "b"}
    assert spec.kwarg_adapters["a"] is not None and spec.kwarg_adapters["a"].validate_python("3") == 3


def test_kwargs_mode_passes_extra_predecessors_to_var_keyword() -> None:
    def merge(a: int, **rest: Any) -> int:
        return a

    f = (
        Formation("f").add_function("s", double).add_function("a", double).add_function("b", double)
        .add_function("m", merge).connect("s", "a", "m").connect("s", "b", "m")
    )
    spec = f.validate().nodes["m"]
    assert spec.input_mode == "kwargs" and set(spec.kwarg_adapters) == {"a", "b"}
    assert spec.kwarg_adapters["b"] is None


def test_input_adapter_validates_the_first_parameter() -> None:
    spec = Formation("f").add_function("a", double).validate().nodes["a"]
    assert spec.input_adapter is not None and spec.input_adapter.validate_python("4") == 4


@pytest.mark.parametrize("fn", [lambda x: x, lambda x: x.__class__])
def test_unannotated_parameter_has_no_adapter(fn: Any) -> None:
    assert Formation("f").add_function("a", fn).validate().nodes["a"].input_adapter is None


def test_parameter_annotated_any_has_no_adapter() -> None:
    def passthrough(x: Any) -> Any:
        return x

    assert Formation("f").add_function("a", passthrough).validate().nodes["a"].input_adapter is None


def test_unresolvable_annotations_are_treated_as_unknown() -> None:
    def broken(x: NoSuchType) -> int:  # type: ignore[name-defined]  # noqa: F821
        return 1

    spec = Formation("f").add_function("a", broken).validate().nodes["a"]
    assert spec.input_adapter is None and spec.output_type is None


def test_agent_nodes_have_no_input_adapter() -> None:
    assert Formation("f").add_agent("a", agent()).validate().nodes["a"].input_adapter is None


def test_output_type_comes_from_return_annotation_and_agent_schema() -> None:
    schema = agent("s", output_schema=Verdict)
    f = (
        Formation("f").add_function("fn", double).add_function("bare", lambda x: x)
        .add_agent("text", agent()).add_agent("typed", schema).add_fleet("many", schema)
    )
    for n in ("bare", "text", "typed"):
        f.graph.add_edge("fn", n)
    specs = f.validate().nodes
    assert specs["fn"].output_type is int and specs["bare"].output_type is None
    assert specs["text"].output_type is str and specs["typed"].output_type is Verdict
    assert specs["many"].output_type == list[Verdict]


def test_fleet_of_plain_agents_outputs_a_list_of_str() -> None:
    f = Formation("f").add_fleet("many", agent())
    assert f.validate().nodes["many"].output_type == list[str]


def test_json_schema_output_maps_to_the_python_type() -> None:
    a = agent(output_schema={"type": "object", "properties": {"x": {"type": "integer"}}})
    assert Formation("f").add_agent("a", a).validate().nodes["a"].output_type == dict[str, Any]


def test_partial_callable_object_and_class_work_as_functions() -> None:
    class Scale:
        def __call__(self, n: int) -> float:
            return n * 1.5

    def add(n: int, k: int) -> int:
        return n + k

    f = (
        Formation("f").add_function("p", functools.partial(add, k=1)).add_function("obj", Scale())
        .add_function("cls", Verdict.model_validate).add_function("build", dict)
        .connect("p", "obj")
    )
    f.graph.add_edge("p", "cls")
    f.graph.add_edge("p", "build")
    specs = f.validate().nodes
    assert specs["p"].output_type is int and specs["obj"].output_type is float
    assert specs["obj"].input_adapter is not None
    assert specs["build"].output_type is dict


def test_plan_nodes_are_node_specs_in_graph_order() -> None:
    plan = loop_formation().validate()
    assert isinstance(plan, Plan) and all(isinstance(s, NodeSpec) for s in plan.nodes.values())
    assert list(plan.nodes) == ["topic", "write", "check", "publish"] and plan.name == "loop"


def test_connect_with_an_unknown_keyword_is_a_setup_error_naming_the_edge_and_the_keyword() -> None:
    # DESIGN: "Every declaration error, builder calls included, is a FormationSetupError";
    # a misspelt keyword was Python's own TypeError, naming neither the edge nor the fix
    f = Formation("f").add_function("a", lambda x: x).add_function("b", lambda x: x)
    with pytest.raises(FormationSetupError, match=r"connect\('a', 'b'\): unknown keyword\(s\) 'wen'; did you mean 'when'"):
        f.connect("a", "b", wen=lambda x: True)  # type: ignore[call-arg]
    assert not f.graph.has_edge("a", "b")
