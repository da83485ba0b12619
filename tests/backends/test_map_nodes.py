"""Map nodes on each backend (the Ray tests are marked ``ray``). Node code runs in Ray
worker processes there, so state across attempts lives in files under ``tmp_path``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from wingman_actors import Formation


def _square(x: int) -> int:
    return x * x


async def _later(x: int) -> str:
    await asyncio.sleep(0.01)
    return f"<{x}>"


def test_a_map_node_maps_a_function_and_an_async_function_on_each_backend(backend: str) -> None:
    formation = (Formation("maps").add_map("square", _square, max_workers=2).add_map("later", _later)
                 .connect("square", "later"))

    assert formation.run([1, 2, 3], backend=backend).output == ["<1>", "<4>", "<9>"]


def test_a_retry_of_a_map_node_reruns_only_the_failed_items_on_each_backend(backend: str, tmp_path: Path) -> None:
    def flaky(x: int) -> int:
        with open(tmp_path / f"calls-{x}", "a") as fh:
            fh.write("x")
        if x == 2 and len((tmp_path / "calls-2").read_text()) == 1:
            raise ValueError("item 2 fails the first time")
        return x + 100

    formation = Formation("retry").add_map("flaky", flaky, retries=1, backoff=0.01)
    result = formation.run([1, 2, 3], backend=backend)

    assert result.output == [101, 102, 103]
    assert {x: len((tmp_path / f"calls-{x}").read_text()) for x in (1, 2, 3)} == {1: 1, 2: 2, 3: 1}
