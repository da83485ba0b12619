"""What a scenario measures (:class:`Measurement`), in a module of its own: a scenario's
interpreter imports it and its own module only (see :mod:`._child`), not every
scenario's imports.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Measurement"]


@dataclass
class Measurement:
    """One scenario's result.

    Attributes:
        name: the scenario.
        value: the headline number (median over repetitions).
        unit: its unit.
        target: the target, in words.
        meets: whether ``value`` meets the target.
        baseline: the baseline's value measured in the same run, if any.
        details: other numbers (repetitions, percentiles...).
    """

    name: str
    value: float
    unit: str
    target: str
    meets: bool
    baseline: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _reps(quick: bool) -> int:
    return 3 if quick else 5


def _makespan_reps(quick: bool) -> int:
    """Repetitions of the makespan scenarios judged within 0.02 of the thread floor: a run
    and its floor take about a second, and the paired margin of one repetition moves by
    +-0.015 with the machine's load (five of them gave medians from 0.000 to 0.029 on the
    same code within an hour), so they take more than the others."""
    return 3 if quick else 11
