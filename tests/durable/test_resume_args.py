"""What ``Formation.resume`` and its variants do with a run id that is not one (``None``):
an error naming ``run_id``, never a new run nor a bare ``AssertionError``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.store import RunStore


def _formation() -> Formation:
    return Formation("f").add_function("a", lambda x: x)


def test_resume_without_a_run_id_is_an_error_naming_run_id(path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="run_id"):
        _formation().resume(None, store=path)  # type: ignore[arg-type]


def test_aresume_without_a_run_id_is_an_error_naming_run_id(path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="run_id"):
        asyncio.run(_formation().aresume(None, store=path))  # type: ignore[arg-type]


def test_resume_stream_without_a_run_id_is_an_error_and_begins_no_run(path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="run_id"):
        list(_formation().resume_stream(None, store=path))  # type: ignore[arg-type]
    with RunStore(path) as store:
        assert store.runs() == []


def test_a_running_formation_s_resume_without_a_run_id_is_an_error_naming_run_id(path: Path) -> None:
    with _formation().start(store=path) as running:
        with pytest.raises(TypeError, match=r"RunningFormation\.resume\(\) needs run_id"):
            running.resume(None)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="needs run_id"):
            running.resume("")


def test_aresume_stream_without_a_run_id_is_an_error_naming_run_id(path: Path) -> None:
    with pytest.raises(TypeError, match=r"Formation\.aresume_stream\(\) needs run_id"):
        _formation().aresume_stream(None, store=path)  # type: ignore[arg-type]
