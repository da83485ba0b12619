"""Benchmarks of the runtime (``wingman-actors bench``). Not tests: they measure, on demand."""

from .scenarios import SCENARIOS, Measurement, run_scenarios

__all__ = ["SCENARIOS", "Measurement", "run_scenarios"]
