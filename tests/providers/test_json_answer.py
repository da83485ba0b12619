"""An answer's JSON body is decoded by pydantic's parser where it can be, and by
``json.loads`` where not: what comes back, and the error raised, are always what
``json.loads`` gives (``_http.loads``), as httpx's ``Response.json()`` gave them."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from wingman_actors.errors import AgentError
from wingman_actors.providers._aiohttp import Whole
from wingman_actors.providers._http import json_answer, loads

BODIES = [
    b'{"a": 1, "b": [true, false, null], "c": "\\u00e9\\n"}',
    '{"a": "é ☃ 𝄞"}'.encode(),
    b'{"a": 123456789012345678901234567890, "b": -0, "c": 1e400, "d": 2.5e-310, "e": 0.1}',
    b'{"a": NaN, "b": Infinity, "c": -Infinity}',
    b'{"a": 1, "a": 2}',
    b'{"a": "\\ud800"}',  # a lone surrogate: json.loads keeps it, pydantic's parser refuses it
    '{"a": "é"}'.encode("utf-16"),  # json.loads detects UTF-16 and UTF-32
    '{"a": "é"}'.encode("utf-32-le"),
    b'\xef\xbb\xbf{"a": 1}',  # a UTF-8 byte order mark
    b'  "text"  \n',
    b"[" * 300 + b"]" * 300,  # deeper than pydantic's parser goes
]

NOT_JSON = [b"", b"{", b'{"a": 1,}', b'{"a": 01}', b'{"a": "x\ny"}', b'{"a": 1} x', b'{"a": "\xff"}', b"<html>"]


@pytest.mark.parametrize("body", BODIES)
def test_a_body_is_decoded_as_json_loads_decodes_it(body: bytes) -> None:
    assert repr(loads(body)) == repr(json.loads(body))


@pytest.mark.parametrize("body", NOT_JSON)
def test_a_body_that_is_not_json_raises_json_loads_error(body: bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(body)
    with pytest.raises(ValueError) as got:
        loads(body)
    assert (type(got.value), str(got.value)) == (type(expected.value), str(expected.value))


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(10**30), 10**30)
    if kind == 2:
        return rng.choice([rng.uniform(-1e6, 1e6), rng.random() * 10 ** rng.randrange(-320, 308), 0.0, -0.0])
    if kind in (3, 4, 5):
        return _text(rng)
    if kind in (6, 7):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


def _text(rng: random.Random) -> str:
    # control characters, non-ASCII, astral characters and now and then a lone surrogate
    ranges = [(32, 127), (0, 32), (0xA0, 0xD7FF), (0xE000, 0x10FFFF), (0xD800, 0xDFFF)]
    return "".join(chr(rng.randrange(*rng.choices(ranges, weights=[8, 1, 2, 2, 0.2])[0]))
                   for _ in range(rng.randrange(12)))


def test_random_documents_decode_as_json_loads_decodes_them() -> None:
    rng = random.Random(25)
    for _ in range(500):
        doc = json.dumps(_value(rng), ensure_ascii=rng.random() < 0.5, separators=rng.choice([(",", ":"), (", ", ": ")]))
        body = doc.encode("utf-8", "surrogatepass")
        assert repr(loads(body)) == repr(json.loads(body)), body


def test_a_body_that_is_not_json_is_an_agent_error_quoting_it() -> None:
    with pytest.raises(AgentError, match=r"not JSON.*<html>busy"):
        json_answer("openai", Whole(200, {}, b"<html>busy</html>"))
