"""Functions the LangServe ports serve (``--functions tests.server.functions_langserve``):
LangServe's test runnables (``add_one``, ``mul_2``, a passthrough, typed inputs) as
registered formation functions."""

from __future__ import annotations

import datetime
import enum
import threading
import time
import uuid
from typing import Any

from pydantic import BaseModel

from wingman_actors.server import function

GATE = threading.Event()
"""Opened by the tests: ``held`` waits for it (a run in flight to cancel or leave)."""

STARTED = threading.Event()
"""Set by ``held`` when it starts waiting."""


@function
def add_one(x: int) -> int:
    """LangServe's ``add_one``."""
    return x + 1


@function
def mul_2(x: int) -> int:
    """LangServe's ``mul_2``."""
    return x * 2


@function
def passthrough(value: Any) -> Any:
    """LangServe's ``RunnablePassthrough``: any JSON value back as it came."""
    return value


@function
def halve(x: float) -> float:
    """A float parameter (LangServe's ``test_validation`` types)."""
    return x / 2


@function
def maybe_halve(x: float | None) -> float | None:
    """An optional float parameter: None passes through."""
    return None if x is None else x / 2


class Input(BaseModel):
    """LangServe's ``test_create_invoke_and_batch_models`` input model."""

    a: int
    b: str | None = None


@function
def describe(data: Input) -> str:
    """``a`` and ``b`` of a validated model input."""
    return f"{data.a}:{data.b}"


class Colour(enum.StrEnum):
    """LangServe's ``MySpecialEnum``."""

    A = "a"
    B = "b"


class VariousTypes(BaseModel):
    """LangServe's ``VariousTypes`` (uuid, datetime, date, time, enum)."""

    uuid: uuid.UUID
    dt: datetime.datetime
    date: datetime.date
    time: datetime.time
    enum: Colour


@function
def check_types(inputs: VariousTypes) -> str:
    """The Python types each field arrived as."""
    return ",".join(type(getattr(inputs, name)).__name__ for name in ("uuid", "dt", "date", "time", "enum"))


@function
def make_types(seed: int) -> VariousTypes:
    """A model of those types as an output."""
    return VariousTypes(
        uuid=uuid.UUID(int=seed), dt=datetime.datetime(2023, 1, 1, 5, tzinfo=datetime.UTC),
        date=datetime.date(2023, 1, 1), time=datetime.time(5, 30), enum=Colour.A,
    )


@function
def lines(text: str) -> str:
    """Text over several lines, with a carriage return and a blank line, as SSE data must carry."""
    return f"first {text}\nsecond\r\nthird\n\nevent: fake\ndata: injected"


@function
def not_a_number(x: int) -> float:
    """A float JSON cannot carry."""
    return float("nan") if x else float("inf")


@function
def dict_chunks(text: str) -> dict[str, str]:
    """LangServe's streaming dict ``{"a": ...}``."""
    return {"a": text}


@function
def fail_with_secret_line(text: str) -> str:
    """Fails with a message of several lines."""
    raise ValueError(f"bad input {text!r}\nsecond line of the error")


@function
def held(text: str) -> str:
    """Waits until the test opens GATE, then passes the text on."""
    STARTED.set()
    GATE.wait(30)
    return text


@function
def slow(x: int) -> int:
    """Takes 0.3 s, then adds one: concurrent runs of it overlap."""
    time.sleep(0.3)
    return x + 1
