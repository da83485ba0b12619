"""Semantic Kernel Process behaviours (microsoft/semantic-kernel, ``python/tests/unit/processes/``)
on ``backend="ray"``: SK runs the same process on its local runtime and on Dapr actors; ours runs
the same formation on threads and on Ray actors. See ``test_peer_sk_process.py`` for the thread
versions and where we differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.formation.test_peer_sk_process import recovering
from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def flaky_once(n: int) -> int:
    if n == 1:
        raise ConnectionError("first visit fails")
    return n * 2


def test_a_step_error_routed_back_into_a_cycle_works_on_ray() -> None:
    """From semantic-kernel python/tests/unit/processes/dapr_runtime/test_step_actor.py (a step's error event
    is routed by the actor runtime as on the local one)."""
    result = recovering(flaky_once).run(1, backend="ray", timeout=120)

    assert result.output == 202 and result.nodes["flaky"].status == "succeeded"
    assert result.nodes["flaky"].visits == 2 and result.nodes["recover"].outputs == [101]


def test_a_process_failed_on_ray_resumes_without_rerunning_its_finished_steps(store: RunStore, tmp_path: Path) -> None:
    """From semantic-kernel python/tests/unit/processes/dapr_runtime/test_process_actor.py (a process's state
    survives its actors, and a restarted process continues from it)."""
    flag = tmp_path / "healthy"
    log = tmp_path / "log"

    def load(x: int) -> int:
        with log.open("a") as out:
            out.write("load\n")
        return x + 1

    def save(x: Any) -> int:
        if not flag.exists():
            raise ConnectionError("database down")
        return int(x) * 10

    f = Formation("durable").add_function("load", load).add_function("save", save).connect("load", "save")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store, run_id="r1", backend="ray", timeout=120)
    assert caught.value.node == "save"

    flag.touch()
    result = f.resume("r1", store=store, backend="ray", timeout=120)

    assert result.output == 20 and log.read_text().splitlines() == ["load"]
