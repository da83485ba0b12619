"""The AWS durable execution SDK port's journalled behaviours on ``backend="ray"``
(aws/aws-durable-execution-sdk-python, ``tests/operation/map_test.py``,
``tests/operation/callback_test.py``, ``tests/serdes_test.py``): node code runs in Ray
worker processes, so its values cross a process boundary before they are journalled; the
outcome must be the threads backend's. Calls are counted in files (a worker's memory is not
the test's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


class Item:
    """A map item function that appends its item to ``<dir>/calls`` and fails item 2 while
    ``<dir>/broken`` exists."""

    def __init__(self, where: Path) -> None:
        self.where = str(where)

    def __call__(self, i: int) -> int:
        with open(os.path.join(self.where, "calls"), "a") as calls:
            calls.write(f"{i}\n")
        if i == 2 and os.path.exists(os.path.join(self.where, "broken")):
            raise ConnectionError("item 2 down")
        return i * 10


def ask(i: int) -> str:
    return f"{i}={interrupt({'item': i})}"


def file_names(_: object) -> list[str]:
    return [os.fsdecode(b"report-\xff.txt")]


def test_a_resumed_map_on_ray_reruns_only_its_failed_item(tmp_path: Path) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (checkpointed
    iterations are replayed) on backend="ray"."""
    (tmp_path / "broken").touch()
    f = Formation("map").add_map("each", Item(tmp_path), max_workers=3)
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run([1, 2, 3], store=store, backend="ray", timeout=120)
        (tmp_path / "broken").unlink()
        result = f.resume(caught.value.run_id, store=store, backend="ray", timeout=120)
    assert result.output == [10, 20, 30]
    assert sorted((tmp_path / "calls").read_text().split()) == ["1", "2", "2", "3"]


def test_callbacks_in_map_items_on_ray_are_answered_one_at_a_time(tmp_path: Path) -> None:
    """From aws-durable-execution-sdk-python tests/e2e/map_with_concurrent_waits_int_test.py on
    backend="ray"."""
    f = Formation("waits").add_map("each", ask, max_workers=2)
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = f.run([0, 1], store=store, backend="ray", timeout=120)
        asked = []
        while result.status == "suspended":
            assert result.interrupt is not None
            index = result.interrupt["payload"]["item"]
            asked.append(index)
            result = f.resume(result.run_id, store=store, answer=f"a{index}", backend="ray", timeout=120)
    assert asked == [0, 1] and result.output == ["0=a0", "1=a1"]


def test_a_lone_surrogate_made_in_a_ray_worker_is_journalled(tmp_path: Path) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (any ``str`` round-trips), on
    backend="ray": the value crosses a process boundary first."""
    f = Formation("names").add_function("list", file_names)
    with RunStore(tmp_path / "runs.sqlite") as store:
        result = f.run(None, store=store, backend="ray", timeout=120)
        assert result.output == file_names(None)
        assert store.load(result.run_id).visits == {"list": {1: file_names(None)}}
