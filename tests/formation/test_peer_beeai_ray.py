"""BeeAI's workflow tests (i-am-bee/beeai-framework python/tests/workflows/test_workflow_nav.py,
test_multi_agents.py) on ``backend="ray"``: the declarations of test_peer_beeai_workflow.py, with
every node replica a Ray actor, so the state crosses process boundaries (pickled) on every step
and every route is decided on a pickled value."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.formation.test_peer_beeai_workflow import NAV_SEQ, State, nav_workflow
from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def test_next_prev_and_self_move_through_the_steps_on_ray_and_a_failed_run_resumes_there(tmp_path: Path) -> None:
    """From i-am-bee/beeai-framework python/tests/workflows/test_workflow_nav.py::test_workflow_nav on
    backend="ray", journalled: the run fails inside its loop, and its resume on Ray ends as an
    uninterrupted run does."""
    assert nav_workflow().run(State(), backend="ray", timeout=120).output.seq == NAV_SEQ

    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError, match="crash at 8"):
            nav_workflow(crash_at=8).run(State(), store=store, run_id="nav-ray", backend="ray", timeout=120)
        with nav_workflow().start(store=store, backend="ray") as running:
            result = running.resume("nav-ray").result(timeout=120)

    assert result.output.hops == 10 and result.output.seq == NAV_SEQ
    assert (result.nodes["first"].visits, result.nodes["second"].visits) == (9, 6)


def test_agents_in_a_chain_answer_one_after_the_other_on_ray() -> None:
    """From i-am-bee/beeai-framework python/tests/workflows/test_multi_agents.py::
    test_multi_agents_workflow_creation on backend="ray" (the providers are pickled into the actors)."""
    translator = ScriptedProvider(["Buongiorno"])
    reviewer = ScriptedProvider([lambda request: f"Checked: {request.messages[-1].text}"])
    flow = (Formation("agents").add_agent("translator", Agent("translator", provider=translator))
            .add_agent("reviewer", Agent("reviewer", provider=reviewer)).connect("translator", "reviewer"))

    assert flow.run("Translate 'Good morning' to Italian.", backend="ray", timeout=120).output == "Checked: Buongiorno"
