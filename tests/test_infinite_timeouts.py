"""``timeout=math.inf`` means no limit wherever a time limit is taken, as ``None`` does: a node's
(every builder, and a graph built by hand), a run's, a session's, a fleet's, ``run_node``'s.
NaN is refused at each of them, naming the parameter and what fits."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest

from wingman_actors import Agent, Fleet, Formation, Session
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import RunOptions
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider, run_node

FITS = "a number of seconds > 0, or None or math.inf for no limit"


def inc(x: int) -> int:
    return x + 1


def double_all(x: int) -> int:
    return 2 * x


def agent(name: str = "a") -> Agent:
    return Agent(name, provider=ScriptedProvider(["hi", "hi", "hi"]))


def inner() -> Formation:
    return Formation("inner").add_function("inc", inc)


def by_hand(timeout: float) -> Formation:
    graph = nx.DiGraph()
    graph.add_node("inc", kind="function", fn=inc, timeout=timeout)
    return Formation("hand", graph)


NODES: dict[str, tuple[Callable[[float], Formation], Any, Any]] = {
    "add_function": (lambda t: Formation("f").add_function("inc", inc, timeout=t), 1, 2),
    "add_agent": (lambda t: Formation("f").add_agent("say", agent(), timeout=t), "x", "hi"),
    "add_fleet": (lambda t: Formation("f").add_fleet("say", agent(), timeout=t), ["x", "y"], ["hi", "hi"]),
    "add_map": (lambda t: Formation("f").add_map("double", double_all, timeout=t), [1, 2], [2, 4]),
    "add_formation": (lambda t: Formation("f").add_formation("sub", inner(), timeout=t), 1, 2),
    "a graph built by hand": (by_hand, 1, 2),
}


@pytest.mark.parametrize("declare", NODES)
def test_an_infinite_node_timeout_is_no_limit(declare: str) -> None:
    build, given, expected = NODES[declare]

    assert build(math.inf).run(given, timeout=30).output == expected


@pytest.mark.parametrize("declare", NODES)
def test_a_nan_node_timeout_is_refused_naming_what_fits(declare: str) -> None:
    build = NODES[declare][0]

    with pytest.raises(FormationSetupError, match=f"timeout must be {FITS}, got nan"):
        build(math.nan).validate()


def test_run_node_takes_an_infinite_timeout() -> None:
    assert run_node(Formation("f").add_function("inc", inc), "inc", 1, timeout=math.inf).output == 2


def _submit(formation: Formation, timeout: float) -> Any:
    with formation.start() as running:
        return running.submit(1, timeout=timeout).result(30).output


async def _asubmit(formation: Formation, timeout: float) -> Any:
    async with formation.astart() as running:
        return (await running.asubmit(1, timeout=timeout)).output


async def _astream(formation: Formation, timeout: float) -> Any:
    return [e.type.value async for e in formation.astream(1, timeout=timeout)][-1]


RUNS: dict[str, Callable[[Formation, float], Any]] = {
    "run": lambda f, t: f.run(1, timeout=t).output,
    "run(options=RunOptions(...))": lambda f, t: f.run(1, options=RunOptions(timeout=t)).output,
    "arun": lambda f, t: asyncio.run(f.arun(1, timeout=t)).output,
    "run_stream": lambda f, t: [e.type.value for e in f.run_stream(1, timeout=t)][-1],
    "astream": lambda f, t: asyncio.run(_astream(f, t)),
    "start().submit": _submit,
    "astart().asubmit": lambda f, t: asyncio.run(_asubmit(f, t)),
    "run_node": lambda f, t: run_node(f, "inc", 1, timeout=t).output,
}
_FINISHED = {"run_stream": "run_finished", "astream": "run_finished"}


@pytest.mark.parametrize("call", RUNS)
def test_an_infinite_run_timeout_is_no_limit(call: str) -> None:
    assert RUNS[call](Formation("f").add_function("inc", inc), math.inf) == _FINISHED.get(call, 2)


@pytest.mark.parametrize("call", RUNS)
def test_a_nan_run_timeout_is_refused_naming_what_fits(call: str) -> None:
    with pytest.raises(ValueError, match=f"timeout must be {FITS}, got nan"):
        RUNS[call](Formation("f").add_function("inc", inc), math.nan)


@pytest.mark.parametrize("timeout", [math.inf, math.nan])
def test_resume_takes_an_infinite_timeout_and_refuses_nan(tmp_path: Any, timeout: float) -> None:
    def ask(x: int) -> int:
        from wingman_actors import interrupt

        return x + int(interrupt("how much?"))

    formation = Formation("asks").add_function("ask", ask)
    with RunStore(tmp_path / "runs.sqlite") as store:
        suspended = formation.run(1, store=store)
        assert suspended.status == "suspended"
        if math.isnan(timeout):
            with pytest.raises(ValueError, match=f"timeout must be {FITS}, got nan"):
                formation.resume(suspended.run_id, store=store, answer=2, timeout=timeout)
        else:
            assert formation.resume(suspended.run_id, store=store, answer=2, timeout=timeout).output == 3


SESSIONS: dict[str, Callable[[float], Any]] = {
    "Session.run": lambda t: Session(agent()).run("x", timeout=t).response,
    "Session.arun": lambda t: asyncio.run(Session(agent()).arun("x", timeout=t)).response,
    "Session.run_stream": lambda t: _streamed(Session(agent()), t),
    "Fleet": lambda t: next(r.result.response for r in Fleet(agent(), ["x"], timeout=t).run()),
}


def _streamed(session: Session, timeout: float) -> str:
    stream = session.run_stream("x", timeout=timeout)
    for _ in stream:
        pass
    return stream.result().response


@pytest.mark.parametrize("call", SESSIONS)
def test_an_infinite_session_timeout_is_no_limit(call: str) -> None:
    assert SESSIONS[call](math.inf) == "hi"


@pytest.mark.parametrize("call", SESSIONS)
def test_a_nan_session_timeout_is_refused_naming_what_fits(call: str) -> None:
    with pytest.raises(ValueError, match=f"timeout must be {FITS}, got nan"):
        SESSIONS[call](math.nan)


@pytest.mark.parametrize("bad", [0, -1.5, "10", True])
def test_what_is_not_a_positive_number_is_still_refused_naming_what_fits(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=f"timeout must be {FITS}, got {bad!r}"):
        Formation("f").add_function("inc", inc).run(1, timeout=bad)
    with pytest.raises(FormationSetupError, match=f"timeout must be {FITS}"):
        Formation("f").add_function("inc", inc, timeout=bad).validate()
