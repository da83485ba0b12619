"""A resume given a store path where no file is: the run cannot be there, so it is an
``UnknownRunError`` saying the store does not exist, and no empty store file is made."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.store import UnknownRunError


def _formation() -> Formation:
    return Formation("f").add_function("a", lambda x: x)


def _refused(path: Path, resume: object) -> None:
    with pytest.raises(UnknownRunError, match=r"does not exist") as caught:
        resume()  # type: ignore[operator]
    assert caught.value.run_id == "r-1"
    assert not path.exists()


def test_resume_from_a_store_file_that_does_not_exist_is_an_unknown_run_and_creates_no_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.sqlite"
    _refused(path, lambda: _formation().resume("r-1", store=path))


def test_resume_stream_from_a_store_file_that_does_not_exist_is_an_unknown_run_and_creates_no_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typo.sqlite"
    _refused(path, lambda: list(_formation().resume_stream("r-1", store=str(path))))


def test_aresume_from_a_store_file_that_does_not_exist_is_an_unknown_run_and_creates_no_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.sqlite"
    _refused(path, lambda: asyncio.run(_formation().aresume("r-1", store=path)))


def test_aresume_stream_from_a_store_file_that_does_not_exist_is_an_unknown_run_and_creates_no_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typo.sqlite"

    async def consume() -> None:
        async for _ in _formation().aresume_stream("r-1", store=path):
            pass

    _refused(path, lambda: asyncio.run(consume()))


def test_a_new_run_still_creates_its_store_file(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    assert _formation().run(3, store=path).output == 3
    assert path.exists()
