"""What a JSON body may hold (``_body.body_problems``), read straight from its bytes."""

from __future__ import annotations

import json

from wingman_actors.server._body import MAX_DEPTH, body_problems


def test_a_plain_ascii_body_has_no_problems() -> None:
    assert body_problems(b'{"input": " request 1-1 ", "timeout": 5, "list": [1, {"a": null}]}') == []


def test_an_escaped_lone_surrogate_is_named_by_its_field() -> None:
    assert body_problems(b'{"input": {"a": ["ok", "x\\ud800"]}}') == [
        ("input.a[1]", "contains a lone UTF-16 surrogate (\\ud800); send valid Unicode text")]


def test_a_lone_surrogate_in_utf8_bytes_is_named_by_its_field() -> None:
    assert body_problems('{"title": "\ud800"}'.encode("utf-8", "surrogatepass"))[0][0] == "title"


def test_a_lone_surrogate_in_a_utf16_body_is_named_by_its_field() -> None:
    assert body_problems('{"title": "\udc00"}'.encode("utf-16-le", "surrogatepass"))[0][0] == "title"


def test_nan_is_refused() -> None:
    assert body_problems(b'{"input": NaN}') == [("body", "NaN is not a JSON value; send a number or null")]


def test_nesting_deeper_than_the_limit_is_refused_and_the_limit_itself_is_not() -> None:
    assert body_problems(b"[" * MAX_DEPTH + b"1" + b"]" * MAX_DEPTH) == []
    deeper = body_problems(b"[" * (MAX_DEPTH + 1) + b"1" + b"]" * (MAX_DEPTH + 1))
    assert deeper == [("body", f"nested too deeply; at most {MAX_DEPTH} levels of arrays and objects")]


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    assert body_problems(json.dumps({"input": "[" * (MAX_DEPTH + 5)}).encode()) == []


def test_malformed_json_is_left_to_validation() -> None:
    assert body_problems(b'{"input": ') == []


def test_a_number_beyond_a_floats_range_is_refused_as_infinity_is() -> None:
    for literal in ("1e400", "-1E+400", "1" + "0" * 400 + ".5"):
        ((field, message),) = body_problems(f'{{"input": [{literal}]}}'.encode())
        assert field == "body" and "beyond the range" in message
    assert body_problems(b'{"input": [1e308, -2.5e-400, 1.5, 10000000000000000000000000000]}') == []
    assert body_problems('{"input": "é", "n": 1e999}'.encode()) != []  # (bodies that are not ASCII too)


def test_a_body_that_is_not_utf8_is_named_with_its_first_bad_byte() -> None:
    ((field, message),) = body_problems('{"input": "café"}'.encode("latin-1"))
    assert field == "body" and "not UTF-8" in message and "0xe9 at offset 14" in message
    assert body_problems('{"input": "café"}'.encode("utf-16")) == []  # (UTF-16 with its BOM is still read)
