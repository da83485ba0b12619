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
