"""A run's node traces carry each node's outputs (``output``: the last visit's,
``outputs``: every visit's in order), and ``node_started``/``node_finished`` events carry
the visit's input and output."""

from __future__ import annotations

from wingman_actors.formation import Formation
from wingman_actors.formation.events import FormationEvent, FormationEventType


def inc(n: int) -> int:
    return n + 1


def below_three(n: int) -> bool:
    return n < 3


def reached_three(n: int) -> bool:
    return n >= 3


def pipeline() -> Formation:
    return (Formation("p").add_function("summarise", lambda text: text[:4]).add_function("advise", str.upper)
            .connect("summarise", "advise"))


def test_every_node_trace_carries_its_output() -> None:
    result = pipeline().run("a long report")
    assert result.nodes["summarise"].output == "a lo"
    assert result.nodes["advise"].output == "A LO"


def test_a_loop_node_keeps_every_visits_output_in_order() -> None:
    result = (Formation("loop").add_function("inc", inc).add_function("show", str)
              .connect("inc", "inc", when=below_three).connect("inc", "show", when=reached_three)).run(0)
    trace = result.nodes["inc"]
    assert trace.outputs == [1, 2, 3]
    assert trace.output == 3


def test_a_node_that_never_ran_has_no_output() -> None:
    result = (Formation("branch").add_function("start", inc).add_function("never", inc).add_function("always", inc)
              .connect("start", "never", when=lambda n: n > 100).connect("start", "always", otherwise=True)).run(0)
    assert result.nodes["never"].output is None
    assert result.nodes["never"].outputs == []


def test_a_map_nodes_output_is_its_list() -> None:
    result = Formation("m").add_map("square", lambda n: n * n).run([1, 2, 3])
    assert result.nodes["square"].output == [1, 4, 9]


def test_inner_nodes_of_a_nested_formation_carry_their_outputs() -> None:
    outer = (Formation("outer").add_formation("sub", pipeline()).add_function("count", len)
             .connect("sub", "count"))
    result = outer.run("a long report")
    assert result.nodes["sub/summarise"].output == "a lo"
    assert result.nodes["sub"].output == "A LO"
    assert result.nodes["count"].outputs == [4]


def test_the_result_dict_has_json_friendly_node_outputs() -> None:
    result = Formation("t").add_function("pair", lambda x: (x, x)).run(1)
    assert result.to_dict()["nodes"]["pair"]["outputs"] == [[1, 1]]


def test_node_started_carries_the_visits_input_and_node_finished_its_output() -> None:
    events: list[FormationEvent] = []
    pipeline().run("a long report", on_event=events.append)
    started = [e.data["input"] for e in events if e.type is FormationEventType.NODE_STARTED]
    finished = [e.data["output"] for e in events if e.type is FormationEventType.NODE_FINISHED]
    assert started == ["a long report", "a lo"]
    assert finished == ["a lo", "A LO"]


def test_the_result_dict_gives_a_node_output_that_is_no_json_as_text() -> None:
    class Handle:
        def __str__(self) -> str:
            return "handle"

    result = (Formation("t").add_function("open", lambda x: Handle()).add_function("close", lambda h: str(h))
              .connect("open", "close")).run(1)
    assert result.to_dict()["nodes"]["open"]["output"] == "handle"


def test_the_result_dict_gives_a_run_output_that_is_no_json_as_text() -> None:
    class Handle:
        def __str__(self) -> str:
            return "handle"

    document = Formation("t").add_function("open", lambda x: Handle()).run(1).to_dict()
    assert (document["output"], document["outputs"]) == ("handle", {"open": "handle"})


def test_the_result_dict_gives_bytes_that_are_no_text_as_base64_and_text_bytes_as_text() -> None:
    document = Formation("t").add_function("raw", lambda x: [b"\xff\x00", b"abc"]).run(1).to_dict()
    assert document["output"] == ["/wA=", "abc"] and document["nodes"]["raw"]["output"] == ["/wA=", "abc"]


def test_the_result_dict_is_strict_json_with_nan_and_infinities_as_none() -> None:
    document = Formation("t").add_function("odd", lambda x: [float("nan"), float("inf"), 1.5]).run(1).to_dict()
    assert document["output"] == [None, None, 1.5] and document["nodes"]["odd"]["outputs"] == [[None, None, 1.5]]
