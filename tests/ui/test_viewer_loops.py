"""``wingman-actors ui --store PATH`` in a real browser, over a run with a loop: each visit of
the loop node shows the input it got (one the journal cannot tell says so instead of
showing a wrong one) and its own times, in the node's details and on the timeline."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wingman_actors.formation import Formation

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def add_one(n: int) -> int:
    return n + 1


def below_three(n: int) -> bool:
    return n < 3


def reached_three(n: int) -> bool:
    return n >= 3


def shown(n: int) -> str:
    return f"got {n}"


@pytest.fixture(scope="module")
def looped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("ui-loop") / "runs.sqlite"
    formation = (Formation("loop").add_function("start", add_one).add_function("count", add_one)
                 .add_function("done", shown).connect("start", "count").connect("count", "count", when=below_three)
                 .connect("count", "done", when=reached_three))
    return store, formation.run(-1, store=store).run_id


@pytest.fixture(scope="module")
def viewer(looped: tuple[Path, str]) -> Iterator[str]:
    process = subprocess.Popen([sys.executable, "-m", "wingman_actors", "ui", "--store", str(looped[0]), "--port", "0"],
                               stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert "/ui/" in line, line
        yield next(word for word in line.split() if word.startswith("http://"))
    finally:
        process.terminate()
        process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def test_each_visit_of_a_loop_node_shows_its_own_input(page: Any, viewer: str, looped: tuple[Path, str]) -> None:
    page.goto(f"{viewer}#/runs/{looped[1]}")
    page.click('[data-node="count"]')
    page.wait_for_selector('[data-selected-node="count"]')
    visits = page.locator(".details details.visit")
    assert visits.count() == 3
    for later in (1, 2):  # the first visit is open already
        visits.nth(later).locator("summary").click()
    texts = [visits.nth(i).locator("pre.value").first.inner_text() for i in range(3)]
    assert texts == ["0", "1", "2"]


def test_a_visit_whose_input_the_journal_cannot_tell_says_it_is_not_recorded(page: Any, viewer: str,
                                                                             looped: tuple[Path, str]) -> None:
    page.goto(f"{viewer}#/runs/{looped[1]}")
    page.click('[data-node="done"]')
    page.wait_for_selector('[data-selected-node="done"]')
    visit = page.locator(".details details.visit").first
    assert visit.locator("[data-input-unknown]").count() == 1
    assert visit.locator("pre.value").first.inner_text() == "got 3"


def test_a_loop_node_s_visits_are_timed_one_by_one_and_drawn_on_the_timeline(page: Any, viewer: str,
                                                                            looped: tuple[Path, str]) -> None:
    page.goto(f"{viewer}#/runs/{looped[1]}")
    page.click('[data-node="count"]')
    page.wait_for_selector('[data-selected-node="count"]')
    assert page.inner_text("[data-node-wall-time]").endswith("(3 visits)")
    assert page.locator("[data-visit-wall-time]").count() == 3
    assert page.locator('[data-timeline-node="count"]').count() == 3
