"""Importable value types for the round-trip tests (a resumed run re-imports them by path)."""

from __future__ import annotations

import dataclasses
import enum

from pydantic import BaseModel, Field


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Line(BaseModel):
    label: str
    amount: float
    tags: tuple[str, ...] = ()


class Statement(BaseModel):
    owner: str = Field(alias="ownerName")
    lines: list[Line]
    colour: Colour = Colour.RED


@dataclasses.dataclass
class Point:
    x: int
    y: int
