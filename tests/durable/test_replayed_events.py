"""What a resumed run emits for the visits its journal settled before the resume: each
says ``journalled: True`` (``node_finished``, ``node_failed`` and ``node_skipped`` alike),
so a ``run_stream``/``on_event`` consumer tells them from what the resumed run does anew;
and the traces count a replayed visit that failed as they count a replayed success."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.cli import main
from wingman_actors.formation.events import FormationEvent, FormationEventType

SKIPPED = FormationEventType.NODE_SKIPPED


def broken(text: str) -> str:
    raise RuntimeError(f"cannot parse {text!r}")


def ask(values: dict[str, Any]) -> str:
    return f"{values}: {interrupt({'question': 'publish?'})}"


def never(text: str) -> bool:
    del text
    return False


def skipping() -> Formation:
    """``parse`` fails into ``on_error="skip"`` (journalled), which skips ``shout``;
    ``hidden`` is skipped by a condition of ``clean``'s; ``ask`` waits for both branches,
    then suspends the run."""
    return (Formation("skipping").add_function("clean", str.strip).add_function("parse", broken, on_error="skip")
            .add_function("shout", str.upper).add_function("lower", str.lower).add_function("hidden", str.title)
            .add_function("ask", ask)
            .connect("clean", "parse").connect("parse", "shout").connect("clean", "lower")
            .connect("clean", "hidden", when=never).connect("shout", "ask").connect("lower", "ask"))


def resumed_events(store: Path) -> tuple[list[FormationEvent], Any]:
    formation = skipping()
    first: list[FormationEvent] = []
    suspended = formation.run(" Draft ", store=store, on_event=first.append)
    assert suspended.status == "suspended"
    assert {e.node for e in first if e.type is SKIPPED} == {"parse", "shout", "hidden"}
    events: list[FormationEvent] = []
    result = formation.resume(suspended.run_id, store=store, answer="yes", on_event=events.append)
    return events, result


def test_a_resumed_run_marks_every_skip_it_replays_as_journalled(tmp_path: Path) -> None:
    events, _ = resumed_events(tmp_path / "runs.sqlite")
    skips = [e for e in events if e.type is SKIPPED]
    assert sorted(e.node or "" for e in skips) == ["hidden", "parse", "shout"]  # once each
    assert all(e.data.get("journalled") is True for e in skips), [e.data for e in skips]


def test_only_what_the_resumed_run_does_anew_is_not_marked_journalled(tmp_path: Path) -> None:
    events, result = resumed_events(tmp_path / "runs.sqlite")
    node_events = [e for e in events if e.node is not None]
    fresh = {(e.type.value, e.node) for e in node_events if not e.data.get("journalled")}
    assert fresh == {("node_started", "ask"), ("node_finished", "ask")}
    assert result.outputs == {"ask": "{'lower': 'draft'}: yes"}


def test_a_replayed_visit_that_failed_counts_as_a_visit_as_a_replayed_success_does(tmp_path: Path) -> None:
    _, result = resumed_events(tmp_path / "runs.sqlite")
    assert (result.nodes["clean"].visits, result.nodes["parse"].visits) == (1, 1)
    assert (result.nodes["parse"].status, result.nodes["parse"].error) == ("skipped", "RuntimeError: cannot parse 'Draft'")
    assert result.nodes["shout"].visits == 0


def test_runs_show_keeps_the_attempts_of_a_failed_visit_a_resume_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    _, result = resumed_events(store)
    assert main(["runs", "show", result.run_id, "--store", str(store), "--json"]) == 0
    parse = json.loads(capsys.readouterr().out)["nodes"]["parse"]
    assert (parse["status"], parse["visits"], parse["attempts"]) == ("skipped", 1, 1)
    assert parse["error"] == "RuntimeError: cannot parse 'Draft'"
