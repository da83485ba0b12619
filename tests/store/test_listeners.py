"""A store's listeners (of lost runs, of cancel requests): all told, in order, one that
raises logged without keeping news from the others."""

from __future__ import annotations

import logging

import pytest

from wingman_actors.store._listeners import Listeners


def test_every_listener_hears_each_piece_of_news_in_order_and_a_raising_one_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    listeners: Listeners[str] = Listeners("cancel requests")
    heard: list[str] = []

    def broken(run_id: str) -> None:
        raise RuntimeError("listener broke")

    listeners.subscribe(broken)
    listeners.subscribe(heard.append)
    with caplog.at_level(logging.ERROR, logger="wingman_actors.store"):
        listeners.tell(["run-1", "run-2"])

    assert heard == ["run-1", "run-2"]
    assert [r.getMessage() for r in caplog.records] == [
        "run store: a listener of cancel requests failed on run-1",
        "run store: a listener of cancel requests failed on run-2",
    ]


def test_an_unsubscribed_listener_hears_nothing_more() -> None:
    listeners: Listeners[str] = Listeners("cancel requests")
    heard: list[str] = []
    unsubscribe = listeners.subscribe(heard.append)
    listeners.tell(["before"])
    unsubscribe()
    listeners.tell(["after"])
    assert heard == ["before"]
