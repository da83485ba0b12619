"""A ``join="any"`` in a loop matches values to their own iteration also when what
reaches it comes from a failure: along an error edge (``on_error=True``) or as the skip of
an ``on_error="skip"`` node. (The round a value belongs to travels with the work that
descends from the join's output: see formation/_join.py's ``RaceJoin``.)"""

from __future__ import annotations

from typing import Any

import pytest

from tests.formation.test_joins import _BelowALoser
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure


class _FailingRelay(_BelowALoser):
    """``relay`` raises in iteration 1 (after letting ``slow`` of iteration 0 go on)."""

    def relay(self, i: int) -> str:
        super().relay(i)
        if i == 1:
            raise RuntimeError("relay down")
        return f"relay{i}"

    def mend(self, failure: NodeFailure) -> str:
        return f"mend{failure.input}"


@pytest.mark.parametrize("journalled", [False, True])
def test_join_any_in_a_loop_matches_a_failure_routed_along_an_error_edge_to_its_own_iteration(
    journalled: bool, tmp_path: Any,
) -> None:
    # ``relay`` fails in iteration 1 while iteration 0's ``slow`` still runs (to be
    # cancelled: ``fast`` won iteration 0); the error edge takes the failure to ``mend``,
    # whose value is iteration 1's, not iteration 0's late one.
    n = _FailingRelay()
    f = (Formation("error_edge_round").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", n.slow, concurrency=2).add_function("relay", n.relay)
         .add_function("mend", n.mend).add_function("fast", n.fast)
         .add_function("pick", n.pick, join="any").add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "slow", "relay", "pick").connect("fork", "fast", "pick")
         .connect("relay", "mend", on_error=True).connect("mend", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0, store=str(tmp_path / "runs.db")) if journalled else f.run(0)
    assert n.seen == [{"fast": "fast0"}, {"mend": "mend1"}]
    assert result.output == 2


def test_join_any_in_a_loop_matches_the_skip_of_a_node_failing_with_on_error_skip_to_its_own_iteration() -> None:
    # As test_join_any_in_a_loop_matches_a_skip_below_a_replicated_loser_to_its_own_iteration
    # (test_joins.py), the skip coming from ``relay`` failing with on_error="skip": it must
    # not close iteration 0 (whose ``slow`` visit still runs), or that visit's value takes
    # iteration 1.
    n = _FailingRelay()
    f = (Formation("skip_round").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", n.slow, concurrency=2).add_function("relay", n.relay, on_error="skip")
         .add_function("fast", n.fast).add_function("pick", n.pick, join="any").add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "slow", "relay", "pick").connect("fork", "fast", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0)
    assert n.seen == [{"fast": "fast0"}, {"fast": "fast1"}]
    assert result.output == 2


def test_a_resumed_run_replays_a_failure_routed_along_an_error_edge_into_its_own_iteration(tmp_path: Any) -> None:
    # The run of test_join_any_in_a_loop_matches_a_failure_routed_along_an_error_edge_to_its_own_iteration,
    # failing at its end: the resume replays ``relay``'s journalled failure along its error
    # edge, in the round it belonged to, and runs only what failed.
    n = _FailingRelay()
    failing = [True]

    def done(i: int) -> int:
        if failing:
            raise RuntimeError("down")
        return i

    f = (Formation("error_edge_resume").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", n.slow, concurrency=2).add_function("relay", n.relay)
         .add_function("mend", n.mend).add_function("fast", n.fast)
         .add_function("pick", n.pick, join="any").add_function("done", done)
         .connect("start", "fork").connect("fork", "slow", "relay", "pick").connect("fork", "fast", "pick")
         .connect("relay", "mend", on_error=True).connect("mend", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    store = str(tmp_path / "runs.db")
    with pytest.raises(FormationRuntimeError, match=r"down"):
        f.run(0, store=store, run_id="r1")
    failing.clear()
    result = f.resume("r1", store=store)
    assert n.seen == [{"fast": "fast0"}, {"mend": "mend1"}]  # pick's visits replayed, not run again
    assert result.output == 2
