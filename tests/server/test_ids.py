"""Record ids and times (``_ids``)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from wingman_actors.server._ids import now, rfc3339


def _isoformat(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_rfc3339_writes_what_datetime_writes_rounding_included() -> None:
    rng = random.Random(3339)
    stamps = [rng.uniform(1.7e9, 1.9e9) for _ in range(20_000)]
    stamps += [s + 0.9999995 for s in range(1_795_728_000, 1_795_728_200)]  # rounds up into the next second
    stamps += [s + 0.0005 for s in range(1_795_728_000, 1_795_728_200)]
    stamps += [0, 0.0, 1e-7, 59.9999996, 1_795_728_114, 253_402_300_799.9]
    assert [rfc3339(s) for s in stamps] == [_isoformat(s) for s in stamps]


def test_rfc3339_keeps_none() -> None:
    assert rfc3339(None) is None


def test_now_is_the_current_second_in_rfc3339() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamp = now()
    after = datetime.now(UTC)
    assert stamp.endswith("Z") and len(stamp) == len("2026-04-25T10:00:00Z")
    assert before <= datetime.fromisoformat(stamp.replace("Z", "+00:00")) <= after
