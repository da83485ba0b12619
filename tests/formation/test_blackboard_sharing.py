"""A Blackboard shared by a formation run: function nodes take it as their ``blackboard``
parameter, agent and fleet nodes (and their delegates) see it as the current board."""

from __future__ import annotations

import time

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import FormationSetupError
from wingman_actors.orchestration import AgentRegistry, Blackboard, blackboard_tools, current_blackboard
from wingman_actors.testing import ScriptedProvider, run_node


def _write(x: int, blackboard: Blackboard) -> int:
    blackboard.set("seen", x)
    return x + 1


def _read(x: int, *, blackboard: Blackboard) -> dict[str, int]:
    return {"x": x, "seen": blackboard.get("seen")}


def test_function_nodes_share_the_board_given_to_run() -> None:
    board = Blackboard({"start": "here"})
    formation = Formation("f").add_function("write", _write).add_function("read", _read)
    formation.connect("write", "read")

    result = formation.run(41, blackboard=board)

    assert result.output == {"x": 42, "seen": 41}
    assert board.to_dict() == {"seen": 41, "start": "here"}


def test_a_fan_in_function_gets_its_predecessors_as_keywords_and_the_board_beside_them() -> None:
    def left(x: int) -> int:
        return x * 2

    def right(x: int) -> str:
        return f"r{x}"

    def join(left: int, right: str, blackboard: Blackboard) -> str:
        blackboard.set("joined", [left, right])
        return f"{left}/{right}"

    board = Blackboard()
    formation = Formation("fan").add_function("src", lambda x: x).add_function("left", left)
    formation.add_function("right", right).add_function("join", join)
    formation.connect("src", "left", "join").connect("src", "right", "join")

    plan = formation.validate()
    assert plan.nodes["join"].input_mode == "kwargs" and set(plan.nodes["join"].kwarg_adapters) == {"left", "right"}
    assert formation.run(3, blackboard=board).output == "6/r3"
    assert board.get("joined") == [6, "r3"]


def test_an_agent_node_writes_with_blackboard_tools_and_a_later_function_reads() -> None:
    write = InferenceResponse.of_tool_calls([("s1", "team_state_set", {"key": "plan", "value": ["a", "b"]})])
    agent = Agent("lead", provider=ScriptedProvider([write, "done"]), tools=blackboard_tools("team"))

    def report(answer: str, blackboard: Blackboard) -> str:
        return f"{answer}: {blackboard.watch('plan', timeout=1)}"

    formation = Formation("team").add_agent("lead", agent).add_function("report", report)
    formation.connect("lead", "report")

    result = formation.run("go", blackboard=Blackboard())

    assert result.output == "done: ['a', 'b']"


def test_agents_delegated_to_from_an_agent_node_see_the_run_board() -> None:
    seen: list[Blackboard | None] = []

    def helper_model(request: InferenceRequest) -> str:
        seen.append(current_blackboard())
        return "helped"

    registry = AgentRegistry()
    registry.register(Agent("helper", provider=ScriptedProvider([helper_model])), description="Helps.")
    ask = InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": [{"agent": "helper", "task": "help"}]})])
    lead = Agent("lead", provider=ScriptedProvider([ask, "ok"]), delegates=registry)
    board = Blackboard()

    Formation("tree").add_agent("lead", lead).run("go", blackboard=board)

    assert seen == [board]


def test_fleet_sessions_see_the_run_board() -> None:
    seen: list[Blackboard | None] = []

    def model(request: InferenceRequest) -> str:
        seen.append(current_blackboard())
        return "ok"

    formation = Formation("fl").add_function("split", lambda x: [x, x])
    formation.add_fleet("fleet", Agent("w", provider=ScriptedProvider([model], cycle=True)), max_workers=2)
    formation.connect("split", "fleet")
    board = Blackboard()

    assert formation.run("go", blackboard=board).output == ["ok", "ok"]
    assert seen == [board, board]


def test_a_board_given_to_start_is_shared_by_every_run_and_submit_can_give_a_run_its_own() -> None:
    def count(x: int, blackboard: Blackboard) -> int:
        return int(blackboard.update("count", lambda n: n + 1, 0))

    shared, own = Blackboard(), Blackboard()
    with Formation("c").add_function("count", count).start(blackboard=shared) as running:
        results = [running.submit(i).result(10).output for i in range(3)]
        mine = running.submit(0, blackboard=own).result(10).output

    assert sorted(results) == [1, 2, 3] and shared.get("count") == 3
    assert mine == 1 and own.get("count") == 1


def test_a_required_blackboard_parameter_without_a_board_fails_before_any_node_runs() -> None:
    ran: list[int] = []

    def first(x: int) -> int:
        ran.append(x)
        return x

    formation = Formation("needy").add_function("first", first).add_function("use", _write)
    formation.connect("first", "use")

    with pytest.raises(FormationSetupError, match=r"'use' takes a 'blackboard' parameter without a default"):
        formation.run(1)
    with formation.start() as running, pytest.raises(FormationSetupError, match=r"blackboard=Blackboard\(\)"):
        running.submit(1)
    assert ran == []


def test_an_optional_blackboard_parameter_keeps_its_default_without_a_board() -> None:
    def maybe(x: int, blackboard: Blackboard | None = None) -> str:
        return "no board" if blackboard is None else f"board {blackboard.keys()}"

    formation = Formation("opt").add_function("maybe", maybe)

    assert formation.run(1).output == "no board"
    assert formation.run(1, blackboard=Blackboard({"k": 1})).output == "board ['k']"


@pytest.mark.parametrize(
    ("fn", "problem"),
    [
        (lambda blackboard, x: x, "cannot be positional-only or the first parameter"),
        (lambda x, blackboard, /: x, "cannot be positional-only or the first parameter"),
    ],
)
def test_a_blackboard_parameter_in_the_input_position_is_a_setup_error(fn: object, problem: str) -> None:
    with pytest.raises(FormationSetupError, match=problem):
        Formation("bad").add_function("n", fn).validate()  # type: ignore[arg-type]


def test_a_blackboard_parameter_annotated_with_another_type_is_a_setup_error() -> None:
    def wrong(x: int, blackboard: int) -> int:
        return x

    with pytest.raises(FormationSetupError, match=r"'blackboard' of wrong\(x: int, blackboard: int\) receives .* annotated int"):
        Formation("bad").add_function("wrong", wrong).validate()


def test_a_predecessor_named_blackboard_collides_with_the_parameter() -> None:
    def join(a: int, blackboard: Blackboard) -> int:
        return a

    formation = Formation("bad").add_function("a", lambda x: x).add_function("blackboard", lambda x: x)
    formation.add_function("join", join).connect("a", "join").connect("blackboard", "join")

    with pytest.raises(FormationSetupError, match="predecessor named 'blackboard'"):
        formation.validate()


def test_the_blackboard_parameter_takes_no_part_in_input_type_checks() -> None:
    def typed(x: int, blackboard: Blackboard) -> int:
        return x

    formation = Formation("ok").add_function("src", lambda x: x).add_function("typed", typed)
    formation.connect("src", "typed")

    assert formation.validate().nodes["typed"].blackboard == "required"
    assert formation.run("7", blackboard=Blackboard()).output == 7  # the input is validated as int


def test_a_blackboard_that_is_not_one_is_refused() -> None:
    with pytest.raises(TypeError, match=r"blackboard must be a wingman_actors\.orchestration\.Blackboard, got dict"):
        Formation("f").add_function("n", lambda x: x).run(1, blackboard={})  # type: ignore[arg-type]


def test_run_node_passes_its_blackboard_to_the_function() -> None:
    board = Blackboard()
    formation = Formation("one").add_function("write", _write)

    assert run_node(formation, "write", 5, blackboard=board).output == 6
    assert board.get("seen") == 5


def test_runs_in_flight_with_their_own_boards_do_not_see_each_other() -> None:
    def slow(x: int, blackboard: Blackboard) -> list[int]:
        blackboard.set("mine", x)
        time.sleep(0.05)  # both runs are in flight here (two replicas)
        return [x, blackboard.get("mine")]

    boards = [Blackboard(), Blackboard()]
    with Formation("iso").add_function("slow", slow, concurrency=2).start() as running:
        futures = [running.submit(i, blackboard=board) for i, board in enumerate(boards)]
        outputs = [f.result(10).output for f in futures]

    assert outputs == [[0, 0], [1, 1]]
    assert [b.get("mine") for b in boards] == [0, 1]


def test_a_function_taking_a_fan_in_dict_gets_the_board_beside_it() -> None:
    def merge(inputs: dict[str, int], blackboard: Blackboard) -> int:
        blackboard.set("merged", sorted(inputs))
        return sum(inputs.values())

    formation = Formation("dict").add_function("a", lambda x: x).add_function("b", lambda x: x)
    formation.add_function("merge", merge).connect("a", "merge").connect("b", "merge")
    board = Blackboard()

    assert formation.validate().nodes["merge"].input_mode == "dict"
    assert formation.run(2, blackboard=board).output == 4 and board.get("merged") == ["a", "b"]


def test_run_stream_shares_its_board() -> None:
    board = Blackboard()
    events = list(Formation("s").add_function("write", _write).run_stream(1, blackboard=board))

    assert events[-1].type.value == "run_finished" and board.get("seen") == 1


def _tally(x: int, blackboard: Blackboard) -> int:
    blackboard.update("items", lambda seen: [*seen, x], default=[])
    return x * 10


async def _atally(x: int, blackboard: Blackboard) -> int:
    blackboard.update("items", lambda seen: [*seen, x], default=[])
    return x * 10


@pytest.mark.parametrize("fn", [_tally, _atally], ids=["sync", "async"])
def test_a_map_function_with_a_blackboard_parameter_receives_the_run_board(fn: object) -> None:
    board = Blackboard()
    formation = Formation("m").add_map("tally", fn)  # type: ignore[arg-type]

    assert formation.run([1, 2, 3], blackboard=board).output == [10, 20, 30]
    assert sorted(board.get("items")) == [1, 2, 3]


def test_a_map_function_with_an_optional_blackboard_parameter_keeps_its_default_without_a_board() -> None:
    def maybe(x: int, blackboard: Blackboard | None = None) -> str:
        return "none" if blackboard is None else "board"

    formation = Formation("m").add_map("maybe", maybe)

    assert formation.run([1]).output == ["none"]
    assert formation.run([1], blackboard=Blackboard()).output == ["board"]


def test_a_map_function_requiring_a_blackboard_without_a_board_fails_before_any_node_runs() -> None:
    formation = Formation("needy").add_map("tally", _tally)

    with pytest.raises(FormationSetupError, match=r"'tally' takes a 'blackboard' parameter without a default"):
        formation.run([1])
