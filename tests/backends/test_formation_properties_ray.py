"""The formation property test on Ray (few examples: a Ray formation takes seconds to
start): the same random formations, 20 inputs submitted at once, each run agreeing with
the reference interpreter of tests/support/formation_reference.py; and, every time, a
loop whose body (a function, or a nested formation) ends it (raising into a handler),
with a join after it."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

from tests.formation.test_formation_properties import check_result, formations, inputs, loop_ended_by_its_body
from tests.support.formation_reference import build, reference

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_ready(ray_session: Any) -> None:
    """The session's local Ray (hypothesis calls the test many times: no function-scoped fixture)."""


@settings(max_examples=3, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=formations(), batch=st.lists(inputs, min_size=20, max_size=20))
@example(spec=loop_ended_by_its_body(handled=True), batch=list(range(20)))  # its body fails into a handler or turns back
@example(spec=loop_ended_by_its_body(handled=True, inner_body=True), batch=list(range(20)))  # the body a formation
def test_runs_on_ray_agree_with_the_reference_interpreter(ray_ready: None, spec: Any, batch: list[int]) -> None:
    note(spec.describe())
    with build(spec).start(backend="ray") as running:
        futures = [running.submit(x, timeout=60) for x in batch]
        for x, future in zip(batch, futures, strict=True):
            check_result(spec, reference(spec, x), partial(future.result, timeout=90))
