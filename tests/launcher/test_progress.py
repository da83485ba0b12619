"""Progress display: the run board, the live table and the event lines."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from wingman_actors._launcher.progress import (
    EventPrinter,
    LiveProgress,
    RunBoard,
    event_dict,
    event_line,
    render_board,
)
from wingman_actors.core import Usage
from wingman_actors.formation.events import FormationEvent, FormationEventType

E = FormationEventType


def ev(type: FormationEventType, node: str | None, at: float, **data: object) -> FormationEvent:
    return FormationEvent(type, "run-1", node, 100.0 + at, dict(data))


EVENTS = [
    ev(E.RUN_STARTED, None, 0.0),
    ev(E.NODE_STARTED, "fetch", 0.0, attempt=1),
    ev(E.NODE_RETRY, "fetch", 0.5, attempt=1, delay_s=0.25, error="AgentError: overloaded"),
    ev(E.NODE_STARTED, "fetch", 0.75, attempt=2),
    ev(E.NODE_FINISHED, "fetch", 1.5, attempt=2, duration_s=0.75, usage=Usage(input_tokens=90, output_tokens=10)),
    ev(E.NODE_SKIPPED, "notify", 1.5, reason="its only incoming edge, from 'fetch', did not fire"),
    ev(E.RUN_FINISHED, None, 1.5, duration_s=1.5, usage=Usage(), result=object()),
]


def board() -> RunBoard:
    return RunBoard([("fetch", "agent"), ("notify", "function")])


def test_board_folds_events_into_status_elapsed_tokens_and_retries() -> None:
    b = board()
    for event in EVENTS:
        b.apply(event)
    fetch, notify = b.rows["fetch"], b.rows["notify"]
    assert (fetch.status, fetch.retries, fetch.tokens, fetch.elapsed(200.0)) == ("done", 1, 100, 1.5)
    assert notify.status == "skipped" and "did not fire" in notify.note
    assert (b.outcome, b.tokens) == ("done", 100)


def test_a_running_node_counts_elapsed_time_up_to_now() -> None:
    b = board()
    b.apply(EVENTS[1])
    assert b.rows["fetch"].status == "running" and b.rows["fetch"].elapsed(102.0) == 2.0


def test_live_progress_draws_a_table_of_the_nodes_on_a_terminal() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with LiveProgress(board(), "formation demo", console=console) as live:
        for event in EVENTS:
            live(event)
    text = out.getvalue()
    assert "formation demo" in text and "✓ done" in text and "- skipped" in text
    assert "done · 1.50s · 100 tokens" in text


def test_event_lines_say_what_happened_to_each_node() -> None:
    lines = [event_line(e, 100.0) for e in EVENTS]
    assert lines[2] == "[  0.50s] fetch: attempt 1 failed (AgentError: overloaded); retrying in 0.25s"
    assert lines[3] == "[  0.75s] fetch: started (attempt 2)"
    assert lines[4] == "[  1.50s] fetch: done in 0.75s, 100 tokens"
    assert event_line(ev(E.AGENT_TEXT, "fetch", 0.1, text="hi"), 100.0) is None


def test_event_lines_print_non_ascii_tool_inputs_as_they_are() -> None:
    line = event_line(ev(E.AGENT_TOOL_CALL, "fetch", 0.1, name="search", input={"q": "café"}), 100.0)
    assert line is not None and '{"q": "café"}' in line


def test_event_lines_of_a_fleet_items_tool_calls_name_the_item() -> None:
    call = event_line(ev(E.AGENT_TOOL_CALL, "research", 0.1, name="look", input={"q": "owls"}, item=3), 100.0)
    result = event_line(ev(E.AGENT_TOOL_RESULT, "research", 0.2, output="notes", is_error=False, item=3), 100.0)
    assert call == '[  0.10s] research[3]: tool look {"q": "owls"}'
    assert result == "[  0.20s] research[3]: tool result: notes"


def test_json_events_drop_the_in_memory_result_and_exception() -> None:
    doc = event_dict(EVENTS[-1])
    assert "result" not in doc["data"] and doc["type"] == "run_finished"
    json.dumps(doc)


def test_event_printer_prints_json_lines() -> None:
    out = io.StringIO()
    printer = EventPrinter(out, as_json=True)
    for event in EVENTS:
        printer(event)
    assert [json.loads(line)["type"] for line in out.getvalue().splitlines()] == [e.type.value for e in EVENTS]


def test_json_event_lines_are_strict_json_with_outputs_made_json_as_the_result_is() -> None:
    out = io.StringIO()
    EventPrinter(out, as_json=True)(ev(E.NODE_FINISHED, "fetch", 0.1, attempt=1, output=[float("nan"), b"\xff"]))
    line = json.loads(out.getvalue(), parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    assert line["data"]["output"] == [None, "/w=="]


def _render(board: RunBoard, width: int, now: float) -> list[str]:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, force_terminal=True).print(
        render_board(board, "formation demo", now=now, max_width=width))
    return out.getvalue().splitlines()


def test_column_widths_stay_put_while_the_run_goes() -> None:
    live = RunBoard([("fetch", "agent"), ("notify", "function")])
    before = _render(live, 100, now=100.0)
    for event in EVENTS:
        live.apply(event)
    after = _render(live, 100, now=1000.0)
    assert live.rows["fetch"].tokens == 100 and live.rows["notify"].note
    assert [len(line) for line in before[1:4]] == [len(line) for line in after[1:4]]
    assert before[1] == after[1]  # the header's borders line up


def test_a_narrow_terminal_cuts_the_note_before_the_node_names() -> None:
    long = RunBoard([("categorise_transactions", "fleet"), ("advise", "agent")])
    long.rows["advise"].note = "AgentError: a long explanation of what went wrong " * 3
    wide = "\n".join(_render(long, 120, now=0.0))
    assert "note" in wide and "AgentError" in wide
    for width in (80, 60, 40):
        lines = _render(long, width, now=0.0)
        assert all(len(line) <= width for line in lines)
        text = "\n".join(lines)
        assert "categorise_transactions" in text and "note" not in text
