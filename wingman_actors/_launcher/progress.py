"""Showing a run as it goes: a live table on a terminal (rich, from the ``cli`` extra), plain
lines or JSON lines when piped.

Both are driven by the run's :class:`~wingman_actors.formation.events.FormationEvent`s:
:class:`RunBoard` folds them into one row per node (status, elapsed time, tokens,
retries); :class:`LiveProgress` draws the board; :class:`EventPrinter` prints one line
per event.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any, Literal

from .._extras import require
from ..formation._result import jsonable
from ..formation.events import FormationEvent, FormationEventType

with require("cli", "the launcher's terminal view"):
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live
    from rich.spinner import Spinner
    from rich.table import Table
    from rich.text import Text

__all__ = ["EventPrinter", "LiveProgress", "NodeRow", "RunBoard", "event_dict", "event_line", "render_board"]

E = FormationEventType


@dataclass
class NodeRow:
    """One node as the events tell it.

    Attributes:
        name: the node.
        kind: ``function``, ``agent``, ``fleet`` or ``map``.
        status: ``waiting``, ``running``, ``retrying``, ``done``, ``failed`` or ``skipped``.
        started: wall-clock time of its first start in the run.
        ended: wall-clock time it last finished, failed or was skipped.
        tokens: tokens its finished attempts used.
        retries: attempts that failed and were retried.
        attempt: the current attempt.
        note: the last error or skip reason.
        live_tokens: tokens the current attempt has used so far (from
            :meth:`RunBoard.observe`; replaced by the reported usage when it finishes).
        items: sessions it has started (a fleet's items, retried ones included).
    """

    name: str
    kind: str
    status: str = "waiting"
    started: float | None = None
    ended: float | None = None
    tokens: int = 0
    retries: int = 0
    attempt: int = 0
    note: str = ""
    live_tokens: int = 0
    items: int = 0

    def shown_tokens(self) -> int:
        """Tokens to show: the finished attempts' and the current one's so far."""
        return self.tokens + self.live_tokens

    def shown_note(self) -> str:
        """The note to show; a running fleet's progress when there is no error to show."""
        if self.kind == "fleet" and self.items and not self.note:
            started = "started" if self.status in ("running", "retrying") else "done"
            return f"{self.items} item{'s' if self.items != 1 else ''} {started}"
        return " ".join(self.note.split())

    def elapsed(self, now: float) -> float | None:
        """Seconds from the first start to the end (or to ``now`` while it runs)."""
        if self.started is None:
            return None
        end = self.ended if self.ended is not None and self.status not in ("running", "retrying") else now
        return max(0.0, end - self.started)


class RunBoard:
    """The state of one run: a :class:`NodeRow` per node, updated by :meth:`apply`.

    Args:
        nodes: ``(name, kind)`` of every node, in the order to show them.
    """

    def __init__(self, nodes: Iterable[tuple[str, str]]) -> None:
        self.rows = {name: NodeRow(name, kind) for name, kind in nodes}
        self._lock = threading.Lock()  # observe() runs on worker threads
        self.started: float | None = None
        self.ended: float | None = None
        self.outcome = "running"
        self.tokens = 0

    def apply(self, event: FormationEvent) -> None:
        """Fold one event into the board."""
        data = event.data
        if event.type is E.RUN_STARTED:
            self.started = event.timestamp
        elif event.type in (E.RUN_FINISHED, E.RUN_FAILED):
            self.ended = event.timestamp
            self.outcome = "done" if event.type is E.RUN_FINISHED else "failed"
        if event.node is None or event.node not in self.rows:
            return
        row = self.rows[event.node]
        if event.type is E.NODE_STARTED:
            row.status = "running"
            row.attempt = int(data.get("attempt", 1))
            if row.started is None:
                row.started = event.timestamp
        elif event.type is E.NODE_FINISHED:
            # a resumed run's journalled visit: done before, its output fed from the journal
            note = "from the journal" if data.get("journalled") else ""
            row.status, row.ended, row.note = "done", event.timestamp, note
            with self._lock:
                row.live_tokens = 0
            usage = data.get("usage")
            tokens = int(getattr(usage, "total_tokens", 0) or 0)
            row.tokens += tokens
            self.tokens += tokens
        elif event.type is E.NODE_RETRY:
            row.status, row.note = "retrying", str(data.get("error", ""))
            row.retries += 1
            self._drop_live(row)
        elif event.type is E.NODE_FAILED:
            row.status, row.ended, row.note = "failed", event.timestamp, str(data.get("error", ""))
            self._drop_live(row)
        elif event.type is E.NODE_SKIPPED:
            if row.status != "failed":  # on_error="skip" reports failed, then skipped
                row.status = "skipped"
                if data.get("journalled"):
                    row.note = "from the journal"
                row.note = str(data.get("reason", ""))
            row.ended = event.timestamp

    def _drop_live(self, row: NodeRow) -> None:
        with self._lock:  # a failed attempt's usage is not reported: stop showing it
            row.live_tokens = 0

    def observe(self, node: str | None, response_tokens: int, *, first_turn: bool) -> None:
        """A model response of ``node`` while it runs (see :mod:`.metering`): its tokens
        count at once, and a first turn is a new session — a fleet's next item.

        Args:
            node: the node, or None when the request could not be told apart (ignored).
            response_tokens: the response's total tokens.
            first_turn: whether the request opened a session (one message so far).
        """
        row = self.rows.get(node) if node is not None else None
        # Events reach the board later than the provider's calls, so a node may still
        # look "waiting" here; only a finished node takes no more.
        if row is None or row.status in ("done", "failed", "skipped"):
            return
        with self._lock:
            row.live_tokens += response_tokens
            row.items += 1 if first_turn else 0


_STATUS_STYLE = {
    "waiting": ("·", "dim"), "running": ("", "yellow"), "retrying": ("↻", "dark_orange"),
    "done": ("✓", "green"), "failed": ("✗", "bold red"), "skipped": ("-", "dim"),
}


_STATUS_WIDTH = 13  # "⠙ running #12": a retry never widens the column


def _status(row: NodeRow) -> RenderableType:
    icon, style = _STATUS_STYLE.get(row.status, ("?", ""))
    label = row.status if row.attempt <= 1 or row.status != "running" else f"running #{row.attempt}"
    if row.status == "running":
        return Spinner("dots", text=Text(label, style=style), style=style)
    return Text(f"{icon} {label}", style=style)


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.2f}s" if value < 10 else f"{value:.1f}s"


@dataclass(frozen=True)
class _Column:
    header: str
    width: int
    justify: Literal["left", "right"] = "left"
    style: str = ""


# What a narrow terminal gives up first: the note shrinks, then these columns go, in
# this order; the node names go last.
_DROP_ORDER = ("note", "retries", "kind", "tokens", "elapsed", "status")
_NOTE_MIN, _NOTE_MAX = 12, 48


def board_columns(board: RunBoard, max_width: int) -> list[_Column]:
    """The columns of the board for a terminal ``max_width`` wide. Their widths depend on
    the node names and kinds only, never on the changing values, so the table stays put
    while the run goes; when the terminal is too narrow, the note column shrinks and then
    columns are left out (note, retries, kind, tokens, elapsed, status), never the node
    names."""
    rows = board.rows.values()
    columns = [
        _Column("node", max([4, *(len(r.name) for r in rows)]), style="bold"),
        _Column("kind", max([4, *(len(r.kind) for r in rows)]), style="cyan"),
        _Column("status", _STATUS_WIDTH),
        _Column("elapsed", 7, "right"),
        _Column("tokens", 9, "right"),
        _Column("retries", 7, "right"),
    ]

    def chrome(count: int) -> int:  # a border and a space each side per column, one closing border
        return count * 3 + 1

    fixed = sum(c.width for c in columns)
    room = max_width - fixed - chrome(len(columns) + 1)
    if room >= _NOTE_MIN:
        return [*columns, _Column("note", min(room, _NOTE_MAX), style="dim")]
    for name in _DROP_ORDER[1:]:
        if sum(c.width for c in columns) + chrome(len(columns)) <= max_width or len(columns) == 1:
            break
        columns = [c for c in columns if c.header != name]
    return columns


def _cells(row: NodeRow, now: float) -> dict[str, RenderableType]:
    return {
        "node": row.name,
        "kind": row.kind,
        "status": _status(row),
        "elapsed": _seconds(row.elapsed(now)),
        "tokens": f"{row.shown_tokens():,}" if row.shown_tokens() else "",
        "retries": str(row.retries) if row.retries else "",
        "note": row.shown_note(),
    }


def render_board(board: RunBoard, title: str, now: float | None = None, max_width: int = 120) -> Table:
    """The board as a rich table: node, kind, status, elapsed, tokens, retries, note,
    fitted to ``max_width`` columns of terminal (see :func:`board_columns`)."""
    now = time.time() if now is None else now
    table = Table(title=title, title_justify="left", expand=False)
    columns = board_columns(board, max_width)
    for column in columns:
        table.add_column(column.header, style=column.style, justify=column.justify, width=column.width,
                         no_wrap=True, overflow="ellipsis")
    for row in board.rows.values():
        cells = _cells(row, now)
        table.add_row(*(cells[column.header] for column in columns))
    if board.started is not None:
        total = (board.ended or now) - board.started
        style = {"done": "green", "failed": "bold red"}.get(board.outcome, "yellow")
        table.caption = f"{board.outcome} · {_seconds(total)} · {board.tokens:,} tokens"
        table.caption_style = style
        table.caption_justify = "left"
    return table


class LiveProgress:
    """A live table of a run on a terminal; call it with each event.

    Use it as a context manager; the final table stays on screen. With ``echo``, each
    event's plain line is printed above the table too.

    Args:
        board: the run's board.
        title: the table's title.
        console: where to draw (default: stdout).
        echo: also print a line per event.
    """

    def __init__(self, board: RunBoard, title: str, *, console: Console | None = None, echo: bool = False) -> None:
        self.board = board
        self.title = title
        self.console = console or Console()
        self.echo = echo
        self._t0: float | None = None
        self._live = Live(self, console=self.console, refresh_per_second=8, transient=False)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield render_board(self.board, self.title, max_width=options.max_width)

    def __enter__(self) -> LiveProgress:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.refresh()
        self._live.stop()

    def __call__(self, event: FormationEvent) -> None:
        self.board.apply(event)
        if self._t0 is None:
            self._t0 = event.timestamp
        if self.echo:
            line = event_line(event, self._t0)
            if line is not None:
                self._live.console.print(line, markup=False, highlight=False)
        if event.type is not E.AGENT_TEXT and event.type is not E.AGENT_THINKING:  # deltas wait for the next refresh
            self._live.refresh()


class EventPrinter:
    """Prints one line per event: readable text, or JSON (``as_json``) with every event
    (agent text deltas included).

    Args:
        stream: where to print.
        as_json: JSON lines instead of text.
    """

    def __init__(self, stream: IO[str], *, as_json: bool = False) -> None:
        self.stream = stream
        self.as_json = as_json
        self._t0: float | None = None

    def __call__(self, event: FormationEvent) -> None:
        if self._t0 is None:
            self._t0 = event.timestamp
        line = json.dumps(jsonable(event_dict(event))) if self.as_json else event_line(event, self._t0)
        if line is not None:
            print(line, file=self.stream, flush=True)


def event_dict(event: FormationEvent) -> dict[str, Any]:
    """An event as a JSON-friendly dict (without the in-memory result and exception)."""
    doc = event.to_dict()
    doc["data"] = {k: v for k, v in doc["data"].items() if k not in ("result", "exception")}
    return doc


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def event_line(event: FormationEvent, t0: float) -> str | None:
    """One readable line for an event (None for agent text deltas)."""
    d = event.data
    at = f"[{max(0.0, event.timestamp - t0):6.2f}s]"
    node = event.node
    t = event.type
    if t is E.RUN_STARTED:
        return f"{at} run {event.run_id} started"
    if t is E.RUN_FINISHED:
        return f"{at} run finished in {float(d.get('duration_s', 0.0)):.2f}s"
    if t is E.RUN_FAILED:
        return f"{at} run failed: {d.get('error', '')}"
    if t is E.NODE_STARTED:
        attempt = int(d.get("attempt", 1))
        return f"{at} {node}: started" + (f" (attempt {attempt})" if attempt > 1 else "")
    if t is E.NODE_FINISHED and d.get("journalled"):
        return f"{at} {node}: done (from the journal, not run again)"
    if t is E.NODE_FINISHED:
        tokens = int(getattr(d.get("usage"), "total_tokens", 0) or 0)
        return f"{at} {node}: done in {float(d.get('duration_s', 0.0)):.2f}s" + (f", {tokens:,} tokens" if tokens else "")
    if t is E.NODE_RETRY:
        return (f"{at} {node}: attempt {d.get('attempt')} failed ({d.get('error')}); "
                f"retrying in {float(d.get('delay_s', 0.0)):.2f}s")
    journal = " (from the journal, not run again)" if d.get("journalled") else ""  # settled before a resume
    if t is E.NODE_FAILED:
        return f"{at} {node}: failed after {d.get('attempts')} attempt(s): {d.get('error')}{journal}"
    if t is E.NODE_SKIPPED:
        return f"{at} {node}: skipped ({d.get('reason')}){journal}"
    if t is E.AGENT_TOOL_CALL or t is E.AGENT_TOOL_RESULT:
        who = node if d.get("item") is None else f"{node}[{d['item']}]"  # a fleet node's item
        if t is E.AGENT_TOOL_CALL:
            return f"{at} {who}: tool {d.get('name')} {_short(d.get('input') or {})}"
        flag = " (error)" if d.get("is_error") else ""
        return f"{at} {who}: tool result{flag}: {_short(d.get('output') or '')}"
    return None
