"""What ``Formation.resume`` and its variants do with a run id that is not one (``None``):
an error naming ``run_id``, never a new run nor a bare ``AssertionError``.

The fixes belong in ``wingman_actors/formation/`` (outside this audit's files): the tests
are marked ``xfail(strict=True)`` until they are made there.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.store import RunStore


def _formation() -> Formation:
    return Formation("f").add_function("a", lambda x: x)


@pytest.mark.xfail(strict=True, reason="formation/_one_run.begin_once asserts options.run_id is not None: "
                                       "Formation.resume(None, ...) is a bare AssertionError (fix in formation/)")
def test_resume_without_a_run_id_is_an_error_naming_run_id(path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="run_id"):
        _formation().resume(None, store=path)  # type: ignore[arg-type]


@pytest.mark.xfail(strict=True, reason="formation: aresume(None, ...) is a bare AssertionError (fix in formation/)")
def test_aresume_without_a_run_id_is_an_error_naming_run_id(path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="run_id"):
        asyncio.run(_formation().aresume(None, store=path))  # type: ignore[arg-type]


@pytest.mark.xfail(strict=True, reason="formation: resume_stream(None, ...) begins a new run with input None "
                                       "instead of refusing (fix in formation/)")
def test_resume_stream_without_a_run_id_is_an_error_and_begins_no_run(path: Path) -> None:
    with pytest.raises((TypeError, ValueError), match="run_id"):
        list(_formation().resume_stream(None, store=path))  # type: ignore[arg-type]
    with RunStore(path) as store:
        assert store.runs() == []
