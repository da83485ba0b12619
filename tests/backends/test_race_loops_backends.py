"""A ``join="any"`` in a loop whose losing branch is stuck in blocking code, on each
backend: the loser is abandoned when the join fires (on Ray its process is replaced), so
the loop never waits for it (node code runs in Ray workers there: files are the shared
state)."""

from __future__ import annotations

import time
from pathlib import Path

from wingman_actors import Formation


def _wait_for(path: Path, limit: float = 20.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_join_any_in_a_loop_does_not_wait_for_a_stuck_loser_on_each_backend(backend: str, tmp_path: Path) -> None:
    release = tmp_path / "release"

    def slow(n: int) -> int:
        (tmp_path / f"stuck-{n}").touch()
        _wait_for(release)  # stuck until the test ends
        return n

    def fast(n: int) -> int:  # wins each round once that round's slow visit is stuck (or after 20 s: the test fails)
        _wait_for(tmp_path / f"stuck-{n}")
        return n

    f = (
        Formation("loop")
        .add_function("entry", lambda n: n).add_function("step", lambda n: n + 1)
        .add_function("fast", fast).add_function("slow", slow)
        .add_function("first", lambda values: next(iter(values.values())), join="any")
        .add_function("done", lambda n: n)
        .connect("entry", "step", "fast", "first").connect("step", "slow", "first")
        .connect("first", "step", when=lambda n: n < 2).connect("first", "done", otherwise=True)
    )
    try:
        result = f.run(0, backend=backend)
        stuck = sorted(p.name for p in tmp_path.glob("stuck-*"))
    finally:
        release.touch()
    assert (result.output, result.nodes["first"].visits) == (2, 2)
    assert stuck == ["stuck-1", "stuck-2"]  # each round's slow visit got stuck, and the loop went on
    assert result.nodes["slow"].status == "cancelled"
