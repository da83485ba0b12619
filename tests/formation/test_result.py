"""FormationResult: a run's outputs, whether given as a dict or as its one sink's output."""

from __future__ import annotations

import pytest

from wingman_actors import Formation
from wingman_actors.formation._result import FormationResult


def _inc(x: int) -> int:
    return x + 1


def test_a_single_sink_runs_outputs_are_the_sink_and_its_output_and_stay_one_dict() -> None:
    with Formation("chain").add_function("a", _inc).add_function("b", _inc).connect("a", "b").start() as running:
        result = running.submit(1).result(10)
    assert (result.output, result.outputs) == (3, {"b": 3})
    result.outputs["note"] = "kept"  # read again, the same dict
    assert result.outputs == {"b": 3, "note": "kept"}


def test_a_result_with_neither_outputs_nor_its_sink_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="sink= naming the one sink"):
        FormationResult("r", 1, None, {}, 0.0)
