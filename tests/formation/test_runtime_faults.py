"""A fault of the runtime itself while it handles a node's outcome (a bug: a hook raising)
fails that run with an error saying so, instead of leaving its future unresolved."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._routing import Router


def _faulty(hook: str, node: str) -> Any:
    real = getattr(Router, hook)

    def hooked(self: Router, work: Any, *args: Any) -> Any:
        if work.target == node:
            raise RuntimeError(f"a bug in {hook}")
        return real(self, work, *args)
    return hooked


def _boom(x: int) -> int:
    raise ValueError("the node's own failure")


@pytest.mark.parametrize(("hook", "fn"), [("completed", abs), ("failed", _boom)])
def test_a_runtime_fault_handling_a_nodes_outcome_fails_the_run_saying_so(
    monkeypatch: pytest.MonkeyPatch, hook: str, fn: Any
) -> None:
    monkeypatch.setattr(Router, hook, _faulty(hook, "b"))
    f = Formation("f").add_function("a", abs).add_function("b", fn).add_function("c", abs).connect("a", "b", "c")
    with f.start() as running:
        future = running.submit(-3)
        with pytest.raises(FormationRuntimeError,
                           match=rf"the runtime failed handling the outcome of node 'b'.*a bug in {hook}") as info:
            future.result(10)
        assert info.value.node == "b" and isinstance(info.value.__cause__, RuntimeError)
        monkeypatch.undo()  # the formation serves on, its node's outcomes handled as ever
        if fn is abs:
            assert running.submit(-4).result(10).output == 4
        else:
            with pytest.raises(FormationRuntimeError, match=r"node 'b' failed after 1 attempt.*the node's own failure"):
                running.submit(-4).result(10)


async def _negate(x: int) -> int:
    return -x


def test_a_runtime_fault_handling_an_async_nodes_or_a_formation_nodes_outcome_fails_the_run_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(Router, "completed", _faulty("completed", "b"))
    inner = Formation("inner").add_function("x", abs)
    for build in (lambda f: f.add_function("b", _negate), lambda f: f.add_formation("b", inner)):
        f = build(Formation("f").add_function("a", abs)).connect("a", "b")
        with pytest.raises(FormationRuntimeError, match=r"the runtime failed handling the outcome of node 'b'"):
            f.run(-3, timeout=10)
