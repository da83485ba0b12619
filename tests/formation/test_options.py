"""RunOptions: the options of a run as one value, given to the run methods as ``options=``
beside (or instead of) their keywords."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import wingman_actors.formation as formation_package
from wingman_actors import Agent, Formation
from wingman_actors.formation import RunOptions
from wingman_actors.formation.events import FormationEvent
from wingman_actors.orchestration import Blackboard
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

FITS = r"a number of seconds > 0, or None or math\.inf for no limit"


def chain() -> Formation:
    return Formation("chain").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")


def test_run_options_are_exported_from_the_formation_package() -> None:
    assert "RunOptions" in formation_package.__all__
    assert formation_package.RunOptions is RunOptions


def test_keywords_and_options_give_the_same_run() -> None:
    by_keywords: list[FormationEvent] = []
    by_options: list[FormationEvent] = []

    one = chain().run(1, timeout=5, on_event=by_keywords.append)
    other = chain().run(1, options=RunOptions(timeout=5, on_event=by_options.append))

    assert (one.output, one.outputs, one.status) == (other.output, other.outputs, other.status) == (4, {"b": 4}, "succeeded")
    assert [(e.type, e.node) for e in by_keywords] == [(e.type, e.node) for e in by_options]


def test_a_keyword_beside_options_sets_what_the_options_leave_unset() -> None:
    events: list[FormationEvent] = []

    result = chain().run(1, on_event=events.append, options=RunOptions(timeout=5))

    assert result.output == 4
    assert events[-1].type == "run_finished"


def test_a_keyword_with_the_same_value_as_the_options_is_accepted() -> None:
    assert chain().run(1, timeout=5, options=RunOptions(timeout=5)).output == 4


def test_a_keyword_and_options_that_name_one_option_differently_are_refused() -> None:
    with pytest.raises(TypeError, match=r"Formation\.run\(\) got two values for the same option: timeout=1 and "
                                        r"options\.timeout=5"):
        chain().run(1, timeout=1, options=RunOptions(timeout=5))


def test_options_that_are_not_run_options_are_refused() -> None:
    with pytest.raises(TypeError, match=r"options must be a wingman_actors\.formation\.RunOptions, got dict"):
        chain().run(1, options={"timeout": 5})  # type: ignore[arg-type]


def test_start_refuses_options_that_belong_to_one_run() -> None:
    with pytest.raises(TypeError, match=r"Formation\.start\(\) does not take timeout .*give them to submit\(\)"):
        chain().start(options=RunOptions(timeout=5))


def test_run_stream_refuses_an_on_event_in_its_options() -> None:
    with pytest.raises(TypeError, match=r"Formation\.run_stream\(\) does not take on_event"):
        chain().run_stream(1, options=RunOptions(on_event=print))


def test_start_takes_its_options_as_one_value() -> None:
    board = Blackboard()
    seen: list[Blackboard | None] = []

    def look(x: int, blackboard: Blackboard) -> int:
        seen.append(blackboard)
        return x

    formation = Formation("board").add_function("a", look)
    with formation.start(options=RunOptions(blackboard=board, backend="threads")) as running:
        assert running.backend == "threads"
        assert running.submit(3).result(10).output == 3
    assert seen == [board]


def test_submit_takes_its_options_as_one_value() -> None:
    events: list[FormationEvent] = []
    with chain().start() as running:
        result = running.submit(1, options=RunOptions(timeout=5, on_event=events.append)).result(10)
    assert result.output == 4
    assert [e.type for e in events][-1] == "run_finished"


def test_submit_refuses_options_fixed_by_start() -> None:
    with chain().start() as running, pytest.raises(
        TypeError, match=r"RunningFormation\.submit\(\) does not take provider .*fixed by start\(\)"
    ):
        running.submit(1, options=RunOptions(provider=ScriptedProvider(["x"])))


def test_store_and_run_id_travel_in_the_options(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    result = chain().run(2, options=RunOptions(store=str(path), run_id="my-run"))

    assert result.run_id == "my-run"
    with RunStore(path) as opened:
        assert opened.get("my-run").status == "succeeded"


def test_run_options_refuse_a_timeout_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match=rf"timeout must be {FITS}, got 0"):
        RunOptions(timeout=0)


def test_run_options_refuse_a_backend_that_is_not_a_name() -> None:
    with pytest.raises(TypeError, match="backend must be a name"):
        RunOptions(backend=None)  # type: ignore[arg-type]


def test_a_run_with_a_timeout_that_is_not_positive_is_refused_before_anything_starts() -> None:
    with pytest.raises(ValueError, match=rf"timeout must be {FITS}, got -1"):
        chain().run(1, timeout=-1)


def test_run_options_are_immutable() -> None:
    options = RunOptions(timeout=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.timeout = 6  # type: ignore[misc]
    assert dataclasses.replace(options, timeout=6).timeout == 6


def test_a_run_timeout_that_is_not_a_number_is_refused_before_anything_starts() -> None:
    # nan compares false with everything: it used to "time out after nans" at once
    with pytest.raises(ValueError, match=rf"timeout must be {FITS}, got nan"):
        chain().run(1, timeout=float("nan"))


def test_submit_refuses_a_timeout_that_is_not_a_number_of_seconds() -> None:
    with chain().start() as running:
        with pytest.raises(TypeError, match=rf"timeout must be {FITS}, got '1'"):
            running.submit(1, timeout="1")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=rf"timeout must be {FITS}, got nan"):
            running.submit(1, timeout=float("nan"))


def test_submit_refuses_an_on_event_that_is_not_callable() -> None:
    # as run() does: it used to be accepted, then logged as failing at every event
    with chain().start() as running, pytest.raises(TypeError, match="on_event must be a callable"):
        running.submit(1, on_event=3)  # type: ignore[arg-type]


def test_a_provider_that_is_not_a_provider_is_refused_before_anything_starts() -> None:
    # it used to start the run, then fail the agent node: "'str' object has no attribute 'run_inference'"
    agent = Formation("a").add_agent("ask", Agent("w", provider=ScriptedProvider(["hi"])))
    with pytest.raises(TypeError, match=r"provider must be a Provider .*new_provider\('openai'.*got str"):
        agent.run("q", provider="openai")  # type: ignore[arg-type]


def test_start_refuses_a_work_dir_that_is_not_a_path_before_anything_starts() -> None:
    # it was taken, and every agent visit then failed with "expected str, bytes or os.PathLike"
    with pytest.raises(TypeError, match=r"work_dir must be a directory path \(str or pathlib.Path\) or None, got 3"):
        Formation("o").add_function("a", lambda x: x).start(work_dir=3)  # type: ignore[arg-type]


def test_start_refuses_backend_options_that_are_not_a_mapping() -> None:
    # it was "TypeError: 'int' object is not iterable", naming nothing
    with pytest.raises(TypeError, match=r"backend_options must be a mapping.*got 3"):
        Formation("o").add_function("a", lambda x: x).start(backend_options=3)  # type: ignore[arg-type]
