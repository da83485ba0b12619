"""Formation validation: every problem is found before anything runs, named with its node
or edge and its fix, and all of them are reported at once. Also the static type checks."""

from __future__ import annotations

import collections.abc as cabc
from typing import Any, Literal, NewType, Optional, TypedDict, TypeVar, Union

import networkx as nx  # type: ignore[import-untyped]
import pytest
from pydantic import BaseModel

from wingman_actors import Agent
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import Formation, compatible
from wingman_actors.formation._typecheck import is_sequence, type_name
from wingman_actors.testing import ScriptedProvider


class Verdict(BaseModel):
    ok: bool
    notes: str = ""


class Strict(Verdict):
    score: int = 0


class Point(TypedDict):
    x: int


def agent(name: str = "a", **kwargs: Any) -> Agent:
    return Agent(name, provider=ScriptedProvider([]), **kwargs)


def to_int(text: str) -> int:
    return int(text)


def to_text(n: int) -> str:
    return str(n)


def to_list(text: str) -> list[str]:
    return text.split()


def problems_of(f: Formation) -> list[str]:
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    assert info.value.formation == f.name
    return info.value.problems


def only_problem(f: Formation) -> str:
    problems = problems_of(f)
    assert len(problems) == 1, problems
    return problems[0]


def hand(**nodes: dict[str, Any]) -> Formation:
    g = nx.DiGraph()
    for name, attrs in nodes.items():
        g.add_node(name, **attrs)
    return Formation("hand", g)


# --- nodes ---------------------------------------------------------------------------


def test_empty_graph_is_a_problem() -> None:
    assert "the graph has no nodes; declare at least one with add_function" in only_problem(Formation("f"))


def test_node_created_by_an_edge_to_an_undeclared_name_has_no_kind() -> None:
    f = Formation("f").add_function("a", to_int)
    f.graph.add_edge("a", "shwo")
    message = only_problem(f)
    assert message.startswith("node 'shwo' has no kind: it was probably created by an edge to an undeclared node")
    assert "declare it with add_function/add_agent/add_fleet/add_map/add_formation or fix the edge's name" in message


def test_unknown_kind_lists_the_kinds() -> None:
    message = only_problem(hand(a={"kind": "tool", "fn": to_int}))
    assert message == "node 'a' has unknown kind 'tool'; use one of 'function', 'agent', 'fleet', 'formation', 'map'"


def test_function_node_without_fn_is_a_problem() -> None:
    assert only_problem(hand(a={"kind": "function"})) == (
        "function node 'a' has no fn; set fn=<a callable taking the node's input>"
    )


def test_function_node_with_a_non_callable_fn_is_a_problem() -> None:
    assert "function node 'a' has fn=str, not callable; set fn=" in only_problem(hand(a={"kind": "function", "fn": "x"}))


def test_agent_node_without_an_agent_is_a_problem() -> None:
    assert only_problem(hand(a={"kind": "agent"})) == "agent node 'a' needs agent=<an Agent>, got nothing"


def test_fleet_node_with_something_else_than_an_agent_is_a_problem() -> None:
    message = only_problem(hand(a={"kind": "fleet", "agent": "writer", "max_workers": 2}))
    assert message == "fleet node 'a' needs agent=<an Agent>, got str"


@pytest.mark.parametrize("value", [-1, 1.5, True, "4"])
def test_fleet_max_workers_must_be_an_int_of_zero_or_more(value: Any) -> None:
    message = only_problem(hand(a={"kind": "fleet", "agent": agent(), "max_workers": value}))
    assert message.startswith("node 'a': max_workers must be an int >= 0") and f"got {value!r}" in message


@pytest.mark.parametrize(
    ("policy", "value", "expected"),
    [
        ("retries", -1, "an int >= 0"),
        ("retries", True, "an int >= 0"),
        ("backoff", -0.5, "a number of seconds >= 0"),
        ("backoff", float("nan"), "a number of seconds >= 0"),
        ("timeout", 0, "a number of seconds > 0, or None"),
        ("timeout", "10", "a number of seconds > 0, or None"),
        ("on_error", "ignore", "'fail' or 'skip'"),
        ("concurrency", 0, "an int >= 1"),
        ("max_visits", 0, "an int >= 1"),
    ],
)
def test_invalid_policy_value_names_the_node_and_the_allowed_range(policy: str, value: Any, expected: str) -> None:
    message = only_problem(hand(a={"kind": "function", "fn": to_int, policy: value}))
    assert message.startswith(f"node 'a': {policy} must be {expected}") and message.endswith(f"got {value!r}")


def test_prompt_must_be_a_str() -> None:
    message = only_problem(hand(a={"kind": "agent", "agent": agent(), "prompt": 3}))
    assert message.startswith("node 'a': prompt must be a str template")


@pytest.mark.parametrize(("typo", "meant"), [("retry", "retries"), ("timout", "timeout"), ("max_worker", "max_workers")])
def test_attribute_close_to_a_known_one_is_a_likely_typo(typo: str, meant: str) -> None:
    message = only_problem(hand(a={"kind": "function", "fn": to_int, typo: 1}))
    assert message.startswith(f"node 'a' has attribute {typo!r}: did you mean {meant!r}?")


def test_other_unknown_attributes_are_allowed() -> None:
    hand(a={"kind": "function", "fn": to_int, "label": "Parse", "color": "red", "owner": "me"}).validate()


def test_attribute_of_another_kind_is_a_problem() -> None:
    message = only_problem(hand(a={"kind": "agent", "agent": agent(), "fn": to_int}))
    assert message == "agent node 'a' has fn=, which only applies to function and map nodes; remove it"


def test_prompt_on_a_function_node_is_a_problem() -> None:
    message = only_problem(hand(a={"kind": "function", "fn": to_int, "prompt": "{input}"}))
    assert "function node 'a' has prompt=, which only applies to agent and fleet nodes; remove it" == message


def test_node_name_must_be_a_str() -> None:
    g = nx.DiGraph()
    g.add_node(1, kind="function", fn=to_int)
    assert only_problem(Formation("f", g)) == "node 1 has a name of type int; name every node with a str"


# --- edges ---------------------------------------------------------------------------


def chain(*fns: Any) -> Formation:
    f = Formation("f")
    for i, fn in enumerate(fns):
        f.add_function(f"n{i}", fn)
    return f.connect(*(f"n{i}" for i in range(len(fns)))) if len(fns) > 1 else f


def test_edge_when_must_be_callable() -> None:
    f = chain(to_int, to_text)
    f.graph.edges["n0", "n1"]["when"] = "n0 > 1"
    assert only_problem(f) == ("edge 'n0' → 'n1': when must be a predicate on the output of 'n0', a type, a tuple or a union "
                               "of types, got str; to route on a label, compare it: when=lambda output: output == 'n0 > 1'")


def test_edge_when_must_take_one_argument() -> None:
    def both(a: int, b: int) -> bool:
        return a == b

    f = chain(to_int, to_text)
    f.graph.edges["n0", "n1"]["when"] = both
    assert only_problem(f) == "edge 'n0' → 'n1': when=both must take one argument (the output of 'n0')"


@pytest.mark.parametrize("typo", ["wen", "condition"])
def test_edge_attribute_close_to_when_is_a_likely_typo(typo: str) -> None:
    f = chain(to_int, to_text)
    f.graph.edges["n0", "n1"][typo] = bool
    assert only_problem(f).startswith(f"edge 'n0' → 'n1' has attribute {typo!r}: did you mean 'when'?")


# --- structure -----------------------------------------------------------------------


def shout(text: str) -> str:
    return text.upper()


def only_problem_but_cycles(f: Formation) -> str:
    (problem,) = [p for p in problems_of(f) if not p.startswith("cycle ")]
    return problem


def test_a_cycle_nothing_enters_leaves_the_formation_without_a_source() -> None:
    f = chain(to_int, to_text)
    f.graph.add_edge("n1", "n0", when=lambda v: bool(v))
    assert only_problem(f) == (
        "node(s) 'n0', 'n1' get no input: no node is a source (a node with no incoming edge but its own "
        "self-loop), and nothing outside cycle n0 → n1 → n0 enters it; add an entry node feeding 'n0', "
        "e.g. add_function('start', fn).connect('start', 'n0')"
    )


def test_a_cycle_nothing_enters_beside_a_source_cannot_be_reached() -> None:
    f = chain(to_int, to_text).add_function("x", to_text).add_function("y", to_int)
    f.graph.add_edge("x", "y")
    f.graph.add_edge("y", "x", when=lambda v: bool(v))
    assert only_problem(f) == (
        "node(s) 'x', 'y' cannot be reached from the source(s) 'n0': their only way in is cycle x → y → x, "
        "which no source reaches; connect 'x' from a node a source reaches, or remove them"
    )


def test_nodes_fed_only_by_an_unentered_cycle_are_named_with_it() -> None:
    f = chain(shout).add_function("x", shout).add_function("y", shout).add_function("z", shout).connect("x", "y", "z")
    f.graph.add_edge("y", "x", when=lambda v: bool(v))
    assert only_problem(f).startswith(
        "node(s) 'x', 'y', 'z' cannot be reached from the source(s) 'n0': their only way in is cycle x → y → x,"
    )


def test_an_unentered_component_of_several_cycles_is_named_whole() -> None:
    f = Formation("f")
    for name in ("a", "b", "c"):
        f.add_function(name, shout)
    f.connect("a", "b", "a").connect("b", "c", "b")
    f.graph.add_edge("a", "a")
    assert only_problem_but_cycles(f) == (
        "node(s) 'a', 'b', 'c' get no input: no node is a source (a node with no incoming edge but its own "
        "self-loop), and nothing outside the cycles among 'a', 'b', 'c' (one is a → b → a) enters them; add an "
        "entry node feeding 'a', e.g. add_function('start', fn).connect('start', 'a')"
    )


def test_every_unentered_cycle_is_a_problem_of_its_own() -> None:
    f = chain(shout)
    for a, b in (("x", "y"), ("p", "q")):
        f.add_function(a, shout).add_function(b, shout).connect(a, b).connect(b, a, when=lambda v: bool(v))
    assert [p.split(":")[0] for p in problems_of(f)] == [
        "node(s) 'x', 'y' cannot be reached from the source(s) 'n0'",
        "node(s) 'p', 'q' cannot be reached from the source(s) 'n0'",
    ]


def test_a_cycle_nothing_enters_is_refused_even_when_it_could_not_end() -> None:
    f = Formation("f").add_function("a", shout).add_function("b", shout).connect("a", "b", "a")
    assert [p.split(" ")[0] for p in problems_of(f)] == ["cycle", "node(s)"]  # both problems, at once


def test_a_source_is_searched_from_first_whatever_the_graph_order() -> None:
    g = nx.DiGraph()
    for name in ("y", "x", "r"):  # the self-looping entry r declared last
        g.add_node(name, kind="function", fn=shout)
    def truthy(text: str) -> bool:
        return bool(text)

    g.add_edges_from([("r", "r", {"when": truthy}), ("r", "x"), ("x", "y"), ("y", "x", {"when": truthy})])
    plan = Formation("order", g).validate()
    assert plan.sources == ("r",)
    assert sorted((e.source, e.target) for e in plan.edges if e.back) == [("r", "r"), ("y", "x")]


def test_cycle_without_a_conditional_edge_is_named() -> None:
    f = Formation("f").add_function("s", to_text).add_function("a", str.upper).add_function("b", str.lower)
    f.connect("s", "a", "b").connect("b", "a")
    assert only_problem(f) == "cycle a → b → a has no conditional edge; add when= to one of its edges so it can end"


def test_self_loop_without_a_condition_is_a_cycle() -> None:
    f = Formation("f").add_function("s", to_text).add_function("a", str.upper).connect("s", "a")
    f.graph.add_edge("a", "a")
    assert only_problem(f).startswith("cycle a → a has no conditional edge")


def test_cycle_through_a_conditional_edge_is_valid() -> None:
    f = Formation("f").add_function("s", to_text).add_function("a", str.upper).add_function("b", str.lower)
    f.connect("s", "a").connect("a", "b", when=str.isupper).connect("b", "a")
    f.validate()


# --- signatures and types ------------------------------------------------------------


def test_incompatible_edge_names_the_edge_the_types_and_the_parameter() -> None:
    message = only_problem(chain(to_text, to_text))  # str into n: int
    assert message.startswith(
        "edge 'n0' → 'n1': 'n0' outputs str but parameter 'n' of 'n1' expects int; make them agree"
    )
    assert "put a converting function node between them" in message


def test_agent_output_schema_is_checked_against_the_downstream_parameter() -> None:
    f = Formation("f").add_agent("judge", agent(output_schema=Verdict)).add_function("n", to_text)
    message = only_problem(f.connect("judge", "n"))
    assert message.startswith("edge 'judge' → 'n': 'judge' outputs Verdict but parameter 'n' of 'n' expects int")


def test_back_edge_types_are_checked_too() -> None:
    def judge(text: str) -> Verdict:
        return Verdict(ok=True)

    def failed(v: Verdict) -> bool:
        return not v.ok

    def write(topic: str) -> str:
        return topic

    f = Formation("f").add_function("s", str.strip).add_function("write", write).add_function("judge", judge)
    f.connect("s", "write", "judge").connect("judge", "write", when=failed)
    message = only_problem(f)
    assert message.startswith("back edge 'judge' → 'write': 'judge' outputs Verdict but parameter")


def test_fan_in_parameters_must_be_named_after_predecessors() -> None:
    def merge(left: int, right: int) -> int:
        return left + right

    f = Formation("f").add_function("s", to_int).add_function("a", abs).add_function("b", abs).add_function("m", merge)
    f.connect("s", "a", "m").connect("s", "b", "m")
    message = only_problem(f)
    assert message.startswith("function node 'm' has several forward predecessors ('a', 'b') and merge(left: int, right: int)")
    assert "parameter(s) 'left', 'right' match no predecessor and predecessor(s) 'a', 'b' match no parameter" in message
    assert "name each parameter after a predecessor" in message


def test_fan_in_predecessor_without_a_parameter_is_a_problem() -> None:
    def merge(a: int, b: int) -> int:
        return a + b

    f = Formation("f").add_function("s", to_int)
    for n in ("a", "b", "c"):
        f.add_function(n, abs).connect("s", n)
    f.add_function("m", merge).connect("a", "m").connect("b", "m").connect("c", "m")
    message = only_problem(f)
    assert "predecessor(s) 'c' match no parameter" in message and "parameter(s)" not in message.split("but")[1]


def test_fan_in_into_a_single_parameter_function_receives_a_dict() -> None:
    def merge(parts: dict[str, int]) -> int:
        return sum(parts.values())

    f = Formation("f").add_function("s", to_int).add_function("a", abs).add_function("b", abs).add_function("m", merge)
    f.connect("s", "a", "m").connect("s", "b", "m").validate()


def test_fan_in_dict_into_a_parameter_of_another_type_is_a_problem() -> None:
    def merge(total: int) -> int:
        return total

    f = Formation("f").add_function("s", to_int).add_function("a", abs).add_function("b", abs).add_function("m", merge)
    message = only_problem(f.connect("s", "a", "m").connect("s", "b", "m"))
    assert message.startswith(
        "function node 'm' receives a dict {predecessor: output} from 'a', 'b' but its parameter 'total' expects int"
    )


def test_source_function_must_accept_exactly_one_positional_argument() -> None:
    def load(path: str, mode: str) -> str:
        return path

    message = only_problem(Formation("f").add_function("load", load))
    assert message == (
        "source function node 'load' must accept exactly one positional argument (the run input), but "
        "load(path: str, mode: str) cannot be called with one argument; give the other parameters defaults"
    )


def test_function_taking_no_argument_cannot_receive_its_input() -> None:
    def tick() -> int:
        return 1

    message = only_problem(Formation("f").add_function("s", to_int).add_function("t", tick).connect("s", "t"))
    assert message.startswith("function node 't' receives one value (the output of 's'), but tick() cannot")


def test_source_function_with_defaults_for_other_parameters_is_valid() -> None:
    def load(path: str, mode: str = "r") -> str:
        return path

    Formation("f").add_function("load", load).validate()


def test_fleet_after_a_node_that_outputs_text_is_a_problem() -> None:
    f = Formation("f").add_agent("outline", agent()).add_fleet("research", agent("r")).connect("outline", "research")
    message = only_problem(f)
    assert message.startswith(
        "edge 'outline' → 'research': fleet node 'research' needs a list (one session per item) but 'outline' outputs str"
    )
    assert "output_schema=list[str]" in message


def test_fleet_after_a_node_that_outputs_a_list_is_valid() -> None:
    f = Formation("f").add_function("split", to_list).add_fleet("research", agent()).connect("split", "research")
    f.validate()


def test_fleet_with_several_predecessors_is_a_problem() -> None:
    f = Formation("f").add_function("s", to_list).add_function("a", list).add_function("b", list)
    f.add_fleet("many", agent()).connect("s", "a", "many").connect("s", "b", "many")
    assert "fleet node 'many' has several forward predecessors ('a', 'b')" in only_problem(f)


def test_prompt_key_missing_from_the_upstream_model_is_a_problem() -> None:
    f = Formation("f").add_agent("judge", agent(output_schema=Verdict))
    f.add_agent("fix", agent("b"), prompt="Fix: {notz} ({input})").connect("judge", "fix")
    message = only_problem(f)
    assert message == "node 'fix': prompt uses {notz} but the input has no such key (keys: notes, ok); use {input} or a key of the input"


def test_prompt_keys_of_a_fleet_refer_to_each_item() -> None:
    def plan(text: str) -> list[Verdict]:
        return []

    f = Formation("f").add_function("plan", plan).add_fleet("many", agent(), prompt="{notes} / {input}")
    f.connect("plan", "many").validate()


def test_prompt_key_on_a_text_input_is_a_problem() -> None:
    f = Formation("f").add_function("s", to_text).add_agent("a", agent(), prompt="{topic}").connect("s", "a")
    assert only_problem(f) == "node 'a': prompt uses {topic} but the input is not a dict or a model; use {input} or a key of the input"


def test_prompt_keys_of_a_fan_in_are_the_predecessor_names() -> None:
    f = Formation("f").add_function("s", to_int).add_function("a", abs).add_function("b", abs)
    f.add_agent("j", agent(), prompt="{a} {b} {c}").connect("s", "a", "j").connect("s", "b", "j")
    assert "prompt uses {c} but the input has no such key (keys: a, b)" in only_problem(f)


@pytest.mark.parametrize(("prompt", "expected"), [("{}", "positional field {}"), ("{input", "not a valid template")])
def test_prompt_template_must_be_well_formed(prompt: str, expected: str) -> None:
    assert expected in only_problem(Formation("f").add_agent("a", agent(), prompt=prompt))


class Measure(BaseModel):
    label: str
    value: float
    count: int
    extra: list[int] = []


def measured(text: str) -> Measure:
    return Measure(label=text, value=1.0, count=1)


def ask(prompt: str) -> Formation:
    return Formation("f").add_function("m", measured).add_agent("a", agent(), prompt=prompt).connect("m", "a")


def test_prompt_with_a_bad_conversion_is_a_problem() -> None:
    assert only_problem(Formation("f").add_agent("a", agent(), prompt="Go: {input!x}")) == (
        "node 'a': prompt field {input!x} has conversion !x; use !s, !r or !a, or none"
    )


def test_prompt_format_spec_that_text_does_not_take_is_a_problem() -> None:
    message = only_problem(Formation("f").add_agent("a", agent(), prompt="{input:d}"))
    assert message == (
        "node 'a': prompt field {input:d} has format spec 'd', which the input's text (a str) does not take "
        "(Unknown format code 'd' for object of type 'str'); fix the spec or drop it"
    )


def test_prompt_format_spec_is_checked_against_the_field_type() -> None:
    assert ask("{label:>20} {value:.2f} {count:05d} {input!r:^30}").validate()
    problems = problems_of(ask("{value:d} {count:s} {label:.2f}"))
    assert [p.split(" has format spec")[0] for p in problems] == [
        "node 'a': prompt field {value:d}", "node 'a': prompt field {count:s}", "node 'a': prompt field {label:.2f}",
    ]
    assert "the field 'value' (a float) does not take" in problems[0]


def test_prompt_format_spec_of_a_value_of_unknown_type_is_not_judged() -> None:
    ask("{extra:>5} {extra[0]:d} {label.__len__:>9}").validate()


def test_prompt_nested_fields_in_a_format_spec_are_checked() -> None:
    problems = problems_of(ask("{label:>{width}} {input:{count!q}}"))
    assert problems == [
        "node 'a': prompt uses {width} but the input has no such key (keys: count, extra, label, value); "
        "use {input} or a key of the input",
        "node 'a': prompt field {count!q} has conversion !q; use !s, !r or !a, or none",
    ]
    ask("{label:>{count}}").validate()


def test_prompt_format_spec_nested_twice_is_a_problem() -> None:
    message = only_problem(ask("{label:{count:{count}}}"))
    assert message.startswith("node 'a': prompt field {label:{count:{count}}} nests fields two levels deep")


def test_prompt_attribute_the_input_text_lacks_is_a_problem() -> None:
    message = only_problem(Formation("f").add_agent("a", agent(), prompt="{input.title}, {input.name!r}"))
    assert message == (
        "node 'a': prompt field {input.name} reads attribute 'name' of the input's text (a str), which has "
        "none; use {input}, or a key of a dict or model input"
    )


def test_every_prompt_problem_is_reported_at_once() -> None:
    problems = problems_of(Formation("f").add_agent("a", agent(), prompt="{input!x} {input:d} {0} {input.nope}"))
    assert len(problems) == 4, problems


def test_a_prompt_that_validates_renders_in_a_run() -> None:
    provider = ScriptedProvider(["ok"])
    f = Formation("f").add_function("m", measured)
    f.add_agent("a", Agent("a", provider=provider), prompt="{label!r:>8}|{value:.1f}|{count:03d}").connect("m", "a")
    assert f.run("x").output == "ok"
    assert provider.requests[0].messages[-1].content[0].text == "     'x'|1.0|001"


# --- everything at once --------------------------------------------------------------


def test_every_problem_is_reported_in_one_error() -> None:
    f = Formation("f").add_function("a", to_text).add_function("b", to_text)
    f.connect("a", "b")  # str into int
    f.graph.add_node("c", kind="function", fn=to_int, retries=-1, timout=3)
    f.graph.add_edge("b", "ghost")
    f.graph.add_edge("c", "c")
    f.graph.add_edge("a", "c", when=3)
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    problems = info.value.problems
    assert len(problems) == 7, problems
    text = str(info.value)
    assert text.startswith("formation 'f' is not valid (7 problem(s)):")
    for needle in ("'timout'", "retries must be", "node 'ghost' has no kind", "edge 'a' → 'c': when must be a predicate",
                   "cycle c → c", "edge 'a' → 'b'", "back edge 'c' → 'c'"):
        assert needle in text


# --- compatible() --------------------------------------------------------------------

T = TypeVar("T")
UserId = NewType("UserId", int)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (None, int), (int, None), (Any, int), (str, Any), (T, int), (int, T), (str, object), ("Unresolved", int),
        (int, int), (bool, int), (Strict, Verdict), (int, float), (bool, float), (int, complex), (float, complex),
        (int, Optional[int]), (type(None), Optional[int]), (Union[int, bool], float), (int | str, str | int),  # noqa: UP045
        (list[int], list[int]), (list[int], list[float]), (list[int], cabc.Sequence[int]), (list[int], list),
        (list, list[int]), (dict[str, int], cabc.Mapping[str, float]), (dict[str, Any], Verdict),
        (cabc.Mapping[str, int], Verdict), (Point, Verdict), (Point, dict), (tuple[int, int], tuple[int, ...]),
        (tuple[int, ...], cabc.Sequence[int]), (tuple[int, ...], tuple[int, int]), (Literal["a", "b"], str),
        (Literal[1], float), (Literal["a"], Literal["a", "b"]), (str, Literal["a"]), (UserId, int),
        (int, UserId), (cabc.Callable[[int], str], cabc.Callable[[int], int]), (set[int], cabc.Iterable[int]),
        (list[Strict], list[Verdict]),
    ],
)
def test_compatible_accepts(src: Any, dst: Any) -> None:
    assert compatible(src, dst)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        (str, int), (float, int), (int, str), (Verdict, Strict), (Verdict, dict), (str, Verdict),
        (type(None), int), (Optional[int], int), (int | str, int), (list[str], list[int]), (list[int], dict),  # noqa: UP045
        (list[int], tuple[int, ...]), (dict[str, int], dict[str, str]), (tuple[int, str], tuple[int, int]),
        (tuple[int, int, int], tuple[int, int]), (tuple[str, ...], tuple[int, ...]), (Literal["a"], int),
        (Literal["c"], Literal["a", "b"]), (int, Literal["a"]), (list[Verdict], list[Strict]),
        (cabc.Sequence[str], list[str]),
    ],
)
def test_compatible_refuses(src: Any, dst: Any) -> None:
    assert not compatible(src, dst)


@pytest.mark.parametrize("tp", [list[str], tuple[int, ...], cabc.Sequence[str], cabc.Iterable[int], None, Any, list])
def test_is_sequence_accepts_lists_and_unknowns(tp: Any) -> None:
    assert is_sequence(tp)


@pytest.mark.parametrize("tp", [str, bytes, dict[str, int], set[int], Verdict, int, Optional[list[str]]])  # noqa: UP045
def test_is_sequence_refuses_text_mappings_sets_and_models(tp: Any) -> None:
    assert not is_sequence(tp)


@pytest.mark.parametrize(
    ("tp", "name"),
    [(int, "int"), (list[Verdict], "list[Verdict]"), (Optional[int], "int | None"), (Any, "Any"),  # noqa: UP045
     (dict[str, Any], "dict[str, Any]"), (Literal["a"], "Literal['a']"), (None, "unknown")],
)
def test_type_name_is_short_and_readable(tp: Any, name: str) -> None:
    assert type_name(tp) == name
