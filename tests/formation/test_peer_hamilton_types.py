"""Type checks between functions, ported from Hamilton's own test suite (DAGWorks-Inc/hamilton,
``tests/test_type_utils.py``, ``tests/test_graph.py``): Hamilton refuses to build a DAG whose
function feeds a parameter of an incompatible type; ours refuses the formation at
validation, naming the edge, both types and the fix (DESIGN: types are checked at
validation, and narrowed through ``when=<type>``).

Hamilton's ``custom_subclass_check(required, param)`` is our ``compatible(output,
parameter)``, with the arguments the other way round.

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- Hamilton refuses an ``int`` output into a ``float`` parameter (``(int, float, False)``);
  ours accepts it, as Python's numeric tower (and pydantic) do.
- Hamilton refuses two distinct type variables; ours treats a type variable as unknown
  and accepts it (the check is conservative: it refuses only clear mismatches).
- Hamilton requires every parameter and return to be annotated
  (``test_add_dependency_missing_param_type``); ours runs unannotated functions unchecked.
"""

from __future__ import annotations

import collections
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, NewType, Optional, TypeVar, Union

import pytest
from pydantic import BaseModel
from typing_extensions import NotRequired, TypedDict  # noqa: UP035 (pydantic needs typing_extensions' TypedDict on 3.11)

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import compatible


class X:
    pass


class Y(X):
    pass


class Scores(TypedDict):
    a: int
    b: str


class Other(TypedDict):
    c: float


class MaybeScores(TypedDict):
    a: int
    extra: NotRequired[str]


class Verdict(BaseModel):
    ok: bool


UserId = NewType("UserId", int)
T = TypeVar("T")


def problems_of(f: Formation) -> list[str]:
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    return info.value.problems


def pipe(src: Any, dst: Any) -> Formation:
    """``make -> use``: ``make`` declared to output ``src``, ``use`` to take ``dst``."""

    def make(x: Any) -> Any:
        return x

    def use(value: Any) -> Any:
        return value

    make.__annotations__ = {"x": Any, "return": src}
    use.__annotations__ = {"value": dst, "return": Any}
    return Formation("types").add_function("make", make).add_function("use", use).connect("make", "use")


# --- test_type_utils.py::test_custom_subclass_check ------------------------------------------

AGREE = [
    (int, int), (list[int], list), (list, list[float]), (list, list), (dict, dict),
    (dict, Mapping), (list, Iterable), (tuple[str, str], tuple[str, str]), (tuple[str, str], tuple),
    (tuple, tuple[str, str]), (Union[str, str], Union[str, str]), (X, X), (Y, X), (Y | None, Optional[X]),  # noqa: UP045
    (list[int], Sequence[int]), (int, Optional[int]), (type(None), Optional[int]), (Annotated[int, "m"], int),  # noqa: UP045
    (UserId, int), (list[UserId], list[int]), (T, int), (list[T], list[str]), (Any, int), (int, Any),
]


@pytest.mark.parametrize(("output", "param"), AGREE)
def test_an_output_that_fits_the_parameter_is_accepted(output: Any, param: Any) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check (its True cases)."""
    assert compatible(output, param)
    pipe(output, param).validate()


DISAGREE = [
    (list[float], list[int]), (dict, list), (Mapping, dict), (tuple[str, str], tuple[str]),
    (X, Y), (Union[float, str], int), (Union[X, int], X), (Union[int, float], X), (Optional[int], int),  # noqa: UP045
    (Optional[X], Optional[Y]), (Annotated[int, "m"], str), (UserId, str), (list[UserId], list[str]),  # noqa: UP045
    (list[Annotated[int, 1]], list[str]), (dict[str, list[int]], dict[str, list[str]]), (list[int | str], list[int]),
    (Sequence[int], list[int]), (type(None), int),
]


@pytest.mark.parametrize(("output", "param"), DISAGREE)
def test_an_output_that_does_not_fit_the_parameter_is_refused(output: Any, param: Any) -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check (its False cases)."""
    assert not compatible(output, param)
    assert len(problems_of(pipe(output, param))) == 1


def test_an_int_output_feeds_a_float_parameter() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check ``(int, float, False)``.

    Hamilton differs: it refuses ``int`` into ``float``; ours follows Python's numeric tower."""
    assert compatible(int, float)
    assert pipe(int, float).run(3).output == 3


def test_a_subclass_output_feeds_a_base_class_parameter_but_not_the_other_way() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_types_match (``X, Y`` cases)."""
    pipe(Y, X).validate()
    (problem,) = problems_of(pipe(X, Y))
    assert "'make' outputs X but parameter 'value' of 'use' expects Y" in problem


def test_the_error_names_the_edge_both_types_and_the_fix() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_throwing_error_on_incompatible_types."""
    (problem,) = problems_of(pipe(Optional[list[int]], Sequence[str]))  # noqa: UP045
    assert problem.startswith("edge 'make' → 'use': 'make' outputs list[int] | None but parameter 'value' of 'use' "
                              "expects Sequence[str]")
    assert ("change what 'make' outputs: a function's return type, an agent's output_schema; or the parameter's "
            "annotation") in problem


def test_every_bad_edge_is_reported_at_once() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_throwing_error_on_incompatible_types (two bad edges)."""

    def a(x: int) -> str:
        return str(x)

    def b(a: int) -> bytes:
        return b""

    def c(b: str) -> str:
        return b

    f = Formation("two").add_function("a", a).add_function("b", b).add_function("c", c).connect("a", "b", "c")
    problems = problems_of(f)
    assert len(problems) == 2
    assert "'a' outputs str but parameter 'a' of 'b' expects int" in problems[0]
    assert "'b' outputs bytes but parameter 'b' of 'c' expects str" in problems[1]


def test_typing_aliases_and_builtin_generics_are_the_same_type() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_typing_to_primitive_conversion and
    ::test_primitive_to_typing_conversion."""
    import typing

    pipe(typing.List[int], list[int]).validate()  # noqa: UP006
    pipe(dict[str, int], typing.Dict[str, int]).validate()  # noqa: UP006
    assert len(problems_of(pipe(typing.List[int], list[str]))) == 1  # noqa: UP006


def test_a_pydantic_model_output_feeds_its_base_model_and_a_dict_builds_a_model() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_types_match (subclass cases, with models)."""

    class Strict(Verdict):
        score: int = 0

    pipe(Strict, Verdict).validate()
    pipe(dict[str, Any], Verdict).validate()
    assert len(problems_of(pipe(Verdict, Strict))) == 1
    assert len(problems_of(pipe(str, Verdict))) == 1
    assert pipe(dict[str, Any], Verdict).run({"ok": True}).output == Verdict(ok=True)


# --- TypedDicts -------------------------------------------------------------------------------


def test_a_typeddict_output_feeds_a_dict_or_mapping_parameter() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check (dict vs Mapping)."""
    pipe(Scores, dict).validate()
    pipe(Scores, Mapping[str, Any]).validate()
    pipe(dict[str, Any], Scores).validate()


def test_text_into_a_typeddict_parameter_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check ``(Dict, List, False)``."""
    assert not compatible(str, Scores)
    assert not compatible(list[int], Scores)
    (problem,) = problems_of(pipe(str, Scores))
    assert "'make' outputs str but parameter 'value' of 'use' expects Scores" in problem


def test_a_model_into_a_typeddict_parameter_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check (unrelated classes).

    pydantic refuses a model instance where a TypedDict is expected, so the run would fail."""
    assert not compatible(Verdict, Scores)
    assert len(problems_of(pipe(Verdict, Scores))) == 1


def test_a_typeddict_lacking_a_required_key_of_the_parameter_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check ``(Y, X, False)``
    (structural types: the output must have what the parameter requires)."""
    assert not compatible(Scores, Other)
    assert not compatible(MaybeScores, Scores)
    assert compatible(Scores, MaybeScores)  # 'extra' is not required
    (problem,) = problems_of(pipe(Scores, Other))
    assert "'make' outputs Scores but parameter 'value' of 'use' expects Other" in problem


def test_a_typeddict_whose_shared_key_has_another_type_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check ``(List[int], List[float])``."""

    class Texts(TypedDict):
        a: str
        b: str

    assert not compatible(Scores, Texts)
    assert compatible(Texts, Texts)


# --- generics whose arguments do not line up one to one --------------------------------------


def test_a_dict_into_an_iterable_is_checked_by_its_key_type() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check ``(Iterable, List, True)``:
    iterating a dict gives its keys."""
    assert compatible(dict[str, int], Iterable[str])
    assert not compatible(dict[str, int], Iterable[int])
    assert len(problems_of(pipe(dict[str, int], Iterable[int]))) == 1


def test_a_generator_into_an_iterable_is_checked_by_its_yield_type() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check (generic arguments)."""
    assert compatible(Generator[int, None, None], Iterable[int])
    assert not compatible(Generator[int, None, None], Iterable[str])
    assert not compatible(Iterator[int], list[int])


def test_a_counter_is_a_mapping_to_int() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_type_utils.py::test_custom_subclass_check (Dict vs Mapping)."""
    assert compatible(collections.Counter[str], dict[str, int])
    assert compatible(collections.Counter[str], Mapping[str, float])
    assert not compatible(collections.Counter[str], dict[str, str])
    assert not compatible(collections.Counter[str], Mapping[int, int])


# --- fan-in: a function taking several upstream outputs as one dict --------------------------


def number(x: int) -> int:
    return x


def text(x: int) -> str:
    return str(x)


def fan_in(join: Any) -> Formation:
    """``number`` and ``text`` both feed ``join`` (one parameter: it receives a dict keyed by predecessor)."""
    return (Formation("fan_in").add_function("number", number).add_function("text", text)
            .add_function("join", join).connect("number", "join").connect("text", "join"))


def test_a_fan_in_dict_parameter_checks_each_predecessor_against_its_value_type() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_throwing_error_on_incompatible_types
    (Hamilton checks each dependency's type; our fan-in dict's value type is each dependency's)."""

    def total(parts: dict[str, int]) -> int:
        return sum(parts.values())

    (problem,) = problems_of(fan_in(total))
    assert problem.startswith("edge 'text' → 'join': 'text' outputs str but parameter 'parts' of 'join' expects "
                              "dict[str, int], whose values are int")

    def either(parts: dict[str, int | str]) -> str:
        return str(parts)

    assert fan_in(either).run(4).output == "{'number': 4, 'text': '4'}"


class Parts(TypedDict):
    number: int
    text: str


class WrongParts(TypedDict):
    number: str
    text: str


class MoreParts(TypedDict):
    number: int
    text: str
    missing: float


def by_parts(parts: Parts) -> str:
    return f"{parts['text']}:{parts['number']}"


def by_wrong_parts(parts: WrongParts) -> str:
    return str(parts)


def by_more_parts(parts: MoreParts) -> str:
    return str(parts)


def test_a_fan_in_typeddict_parameter_checks_each_predecessor_against_its_key() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_add_dependency_strict_node_dependencies
    (a dependency named by a parameter: here, by a TypedDict key)."""
    assert fan_in(by_parts).run(7).output == "7:7"
    (problem,) = problems_of(fan_in(by_wrong_parts))
    assert problem.startswith("edge 'number' → 'join': 'number' outputs int but key 'number' of parameter 'parts' "
                              "of 'join' expects str")


def test_a_fan_in_typeddict_requiring_a_key_no_predecessor_gives_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_graph.py::test_add_dependency_user_nodes (a dependency
    nothing provides: Hamilton asks for it as an input; a join has no such input)."""
    (problem,) = problems_of(fan_in(by_more_parts))
    assert "requires key 'missing'" in problem
    assert "no predecessor of 'join' is named so" in problem


# --- routing by type (@config.when / @resolve pick an implementation) --------------------------


def scores_or_text(x: Any) -> Scores | str:
    return x


def test_a_route_on_a_typeddict_is_refused_at_validation_naming_the_fix() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/function_modifiers/test_configuration.py::test_config_when
    (a route picked by the upstream's type: isinstance cannot check a TypedDict, so the run would fail)."""

    def a(scores: Scores) -> int:
        return scores["a"]

    f = Formation("routes").add_function("make", scores_or_text).add_function("use", a)
    with pytest.raises(FormationSetupError, match=r"when=Scores cannot be checked with isinstance") as info:
        f.connect("make", "use", when=Scores)
    assert "use when=dict" in str(info.value)
    f.connect("make", "use", when=dict)
    assert f.run({"a": 1, "b": "x"}).output == 1


def test_a_route_on_a_protocol_that_is_not_runtime_checkable_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/function_modifiers/test_configuration.py::test_config_when
    (a route picked by a structural type)."""
    from typing import Protocol, runtime_checkable

    class Sized(Protocol):
        def __len__(self) -> int: ...

    @runtime_checkable
    class CheckedSized(Protocol):
        def __len__(self) -> int: ...

    f = Formation("routes").add_function("make", lambda x: x).add_function("use", len)
    with pytest.raises(FormationSetupError, match=r"cannot be checked with isinstance.*runtime_checkable"):
        f.connect("make", "use", when=Sized)
    f.connect("make", "use", when=CheckedSized)
    assert f.run([1, 2]).output == 2


def test_a_fan_in_into_a_subdag_checks_each_predecessor_against_the_inner_source() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/function_modifiers/test_recursive.py (a subdag's typed inputs),
    with a fan-in: the nested formation's source receives the dict."""

    def total(parts: dict[str, int]) -> int:
        return sum(parts.values())

    def numbers(parts: dict[str, int | str]) -> int:
        return len(parts)

    def nested(inner_fn: Any) -> Formation:
        return (Formation("outer").add_function("number", number).add_function("text", text)
                .add_formation("sub", Formation("inner").add_function("first", inner_fn))
                .connect("number", "sub").connect("text", "sub"))

    (problem,) = problems_of(nested(total))
    assert problem.startswith("edge 'text' → 'sub': 'text' outputs str but formation 'inner''s source 'first' "
                              "expects dict[str, int], whose values are int")
    assert nested(numbers).run(3).output == 2
    assert len(problems_of(nested(by_wrong_parts))) == 1
