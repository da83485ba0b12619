"""Benchmarks of the runtime (``wingman-actors bench``). Not tests: they measure, on demand.

The names load lazily: a scenario's interpreter imports only the scenario's own module
(see :mod:`._child`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._measurement import Measurement
    from .scenarios import SCENARIOS, run_scenarios

__all__ = ["SCENARIOS", "Measurement", "run_scenarios"]

__getattr__ = lazy_exports(__name__, {
    "SCENARIOS": ".scenarios", "Measurement": "._measurement", "run_scenarios": ".scenarios",
}, globals())
