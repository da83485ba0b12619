"""Behaviours ported from LangGraph's checkpoint savers' own tests (langchain-ai/langgraph:
``libs/checkpoint/tests``, ``libs/checkpoint-sqlite/tests``, ``libs/checkpoint-postgres/tests``
and the conformance suite ``libs/checkpoint-conformance/.../spec``): values, listing and pending
writes, on both stores (SQLite file and PostgreSQL). A LangGraph thread is our run, a
checkpoint's channel values are the run's journalled visit outputs, ``put_writes`` of a task
is a fleet or map item (``record_item``), ``list(filter=...)`` is ``runs(status=...)`` and
``get_tuple`` is ``get``/``load``. (Closing, reopening, concurrency, pruning and TTL are in
``test_peer_lgckpt_more.py``.)

Deliberately different (DESIGN.md and docs/durable-runs.md document ours):
- ``get_tuple`` of a thread the saver does not have returns None; ``get``, ``load`` and
  ``history`` of an unknown run raise ``UnknownRunError`` naming how to list the runs.
- PostgresSaver strips NUL characters from metadata (``test_null_chars``: ``"\\x00abc"``
  reads back ``"abc"``); both our stores give back the string as it was written.
- ``list(filter=...)`` filters on any metadata key and takes ``limit``/``before``;
  ``runs`` filters by status only and lists every matching run, oldest first.
"""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from wingman_actors.store import FormationShape, RunStore, SerializationError, UnknownRunError

from .conftest import chain_shape


def _journal(store: RunStore, value: Any, node: str = "a") -> tuple[Any, Any, Any]:
    """Begin a run with ``value`` as input and as ``node``'s first output; read all three back."""
    run_id = store.begin_run("values", chain_shape(), value)
    store.record_visit(run_id, node, 1, value)
    store.flush()
    return store.get(run_id).input, store.load(run_id).visits[node][1], store.history(run_id)[0].output


def test_a_string_with_nul_characters_comes_back_whole(store: RunStore) -> None:
    """From checkpoint-postgres tests/test_sync.py::test_null_chars (PostgresSaver drops the NUL)."""
    assert _journal(store, "\x00abc") == ("\x00abc",) * 3
    assert _journal(store, {"k\x00": ["\x00"]}) == ({"k\x00": ["\x00"]},) * 3


@pytest.mark.parametrize("value", [
    "file-\udcff.txt",                      # a file name read with surrogateescape
    "a\ud800b",                              # a lone high surrogate
    {"name\udc80": ("\udfff", b"\x00")},     # in a key, and inside tagged values
], ids=["surrogateescape", "lone-high", "nested-tagged"])
def test_a_string_holding_a_lone_surrogate_is_journalled_and_comes_back_as_it_was(store: RunStore, value: Any) -> None:
    """From checkpoint tests/test_jsonplus.py (strings of every kind round-trip through the
    serializer). Our stores take UTF-8 only: before the fix, the input raised a bare
    ``UnicodeEncodeError`` from ``begin_run`` and an output failed its journal write."""
    assert _journal(store, value) == (value,) * 3


def test_unicode_of_every_plane_round_trips_in_values_and_keys(store: RunStore) -> None:
    """From checkpoint tests/test_jsonplus.py (unicode values)."""
    value = {"ключ": "значение", "键": "值 😀", "rtl": "שלום", "combining": "e\u0301", "bom": "\ufeff", "max": "\U0010ffff"}
    assert _journal(store, value) == (value,) * 3


def test_a_large_value_round_trips(store: RunStore) -> None:
    """From checkpoint-sqlite tests (large channel values stored as blobs): 8 MB of text."""
    value = "0123456789abcdef" * (512 * 1024)
    got = _journal(store, value)
    assert all(g == value for g in got)


def test_bytes_of_every_value_round_trip_as_bytes(store: RunStore) -> None:
    """From checkpoint tests/test_jsonplus.py (bytes and bytearray values)."""
    value = bytes(range(256)) * 4096 + os.urandom(4096)
    got = _journal(store, value)
    assert all(type(g) is bytes and g == value for g in got)


def test_numbers_at_the_edges_keep_their_value_and_sign(store: RunStore) -> None:
    """From checkpoint tests/test_jsonplus.py (numbers)."""
    got = _journal(store, [-0.0, 5e-324, 10**400, -(2**63), 1.7976931348623157e308])[1]
    assert math.copysign(1, got[0]) == -1.0 and got[1:] == [5e-324, 10**400, -(2**63), 1.7976931348623157e308]


def test_a_value_nested_too_deeply_is_refused_naming_the_node_and_how_to_flatten_it(store: RunStore) -> None:
    """From checkpoint tests/test_jsonplus.py (values the serializer cannot take fail on write):
    before the fix a bare ``RecursionError`` came out of ``record_visit``."""
    run_id = store.begin_run("values", chain_shape(), 0)
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(SerializationError, match=r"node 'b'.*nested too deeply.*flatter value"):
        store.record_visit(run_id, "b", 1, deep)
    with pytest.raises(SerializationError, match=r"input .*nested too deeply"):
        store.begin_run("values", chain_shape(), (deep,))
    store.record_visit(run_id, "b", 1, "flat")
    store.flush()
    assert store.load(run_id).visits == {"b": {1: "flat"}}


def test_get_of_an_unknown_run_raises_naming_how_to_list_runs(store: RunStore) -> None:
    """From conformance spec/test_get_tuple.py::test_get_tuple_nonexistent_returns_none
    (LangGraph returns None)."""
    for read in (store.get, store.load, store.history):
        with pytest.raises(UnknownRunError, match=r"no run 'thread-9'.*store\.runs\(\)"):
            read("thread-9")


def test_a_run_record_carries_its_formation_source_parent_input_and_fingerprint(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_sqlite.py::test_combined_metadata."""
    shape = chain_shape()
    outer = store.begin_run("outer", shape, {"q": 1}, run_id="thread-2", source="/srv/flows/outer.py")
    inner = store.begin_run("inner", chain_shape("x", "y"), [1, 2], parent=outer)
    record, child = store.get(outer), store.get(inner)
    assert (record.id, record.formation, record.source, record.parent, record.input) == (
        "thread-2", "outer", "/srv/flows/outer.py", None, {"q": 1})
    assert record.fingerprint == shape.fingerprint != child.fingerprint
    assert (child.formation, child.parent, child.input) == ("inner", "thread-2", [1, 2])


def test_runs_filtered_by_status_list_only_matching_runs_and_none_when_nothing_matches(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_sqlite.py::test_search (one key, no key, no match)."""
    shape = chain_shape()
    done = store.begin_run("f", shape, 1)
    store.set_status(done, "succeeded")
    failed = store.begin_run("f", shape, 2)
    store.set_status(failed, "failed", error="boom")
    running = store.begin_run("f", shape, 3)
    store.flush()
    assert [r.id for r in store.runs(status="succeeded")] == [done]
    assert [r.id for r in store.runs(status="failed")] == [failed]
    assert [r.id for r in store.runs()] == [done, failed, running]
    assert store.runs(status="cancelled") == []


def test_runs_with_a_status_that_does_not_exist_is_refused_listing_the_statuses(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_sqlite.py::test_search_where (a bad filter)."""
    with pytest.raises(ValueError, match=r"status must be one of running, succeeded.*got 'done'"):
        store.runs(status="done")  # type: ignore[arg-type]


def test_runs_are_listed_in_the_order_they_began_whatever_their_ids(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_non_monotonic_ids.py (ids that do not sort by time)."""
    ids = ["zzz", "aaa", "mmm", "0-last", "ÿ"]
    for i, run_id in enumerate(ids):
        store.begin_run("f", chain_shape(), i, run_id=run_id)
    assert [r.id for r in store.runs()] == ids


def test_runs_begun_in_the_same_instant_are_listed_in_a_stable_order(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_sqlite_deterministic_ordering.py."""
    shape = chain_shape()
    ids = [store.begin_run("f", shape, i, wait=False) for i in range(60)]
    store.flush()
    assert [r.id for r in store.runs()] == ids
    assert [r.id for r in store.runs()] == ids  # and again: the order does not depend on the read


def test_inner_runs_are_listed_only_when_asked_for_with_their_parent(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_sqlite.py::test_search (search_results_5: a thread's
    checkpoints across namespaces; a nested formation's run is our inner namespace)."""
    outer = store.begin_run("outer", chain_shape(), 0, run_id="thread-2")
    inner = store.begin_run("inner", chain_shape(), 0, parent=outer)
    assert [r.id for r in store.runs()] == [outer]
    assert {(r.id, r.parent) for r in store.runs(nested=True)} == {(outer, None), (inner, outer)}


def test_items_of_one_visit_come_back_keyed_by_index_whatever_the_order_written(store: RunStore) -> None:
    """From conformance spec/test_put_writes.py::test_put_writes_multiple_writes_same_task."""
    run_id = store.begin_run("f", chain_shape(), [1, 2, 3])
    for index, value in [(2, "v2"), (0, {"data": 123}), (1, ("t", 1))]:
        store.record_item(run_id, "b", 1, index, value)
    store.flush()
    assert store.load(run_id).items == {("b", 1): {0: {"data": 123}, 1: ("t", 1), 2: "v2"}}


def test_items_of_different_nodes_and_visits_are_kept_apart(store: RunStore) -> None:
    """From conformance spec/test_put_writes.py::test_put_writes_across_namespaces and
    ::test_put_writes_cleared_on_next_checkpoint (a new visit starts with no items)."""
    run_id = store.begin_run("f", chain_shape(), [1])
    store.record_item(run_id, "b", 1, 0, "b1")
    store.record_item(run_id, "c", 1, 0, "c1")
    store.record_visit(run_id, "b", 1, ["b1"])
    store.record_item(run_id, "b", 2, 1, "b2")
    store.flush()
    assert store.load(run_id).items == {("b", 1): {0: "b1"}, ("c", 1): {0: "c1"}, ("b", 2): {1: "b2"}}


def test_an_item_written_twice_is_kept_once(store: RunStore, location: str) -> None:
    """From conformance spec/test_put_writes.py::test_put_writes_idempotent and
    ::test_put_writes_idempotent_across_restart (the second write after reopening the store)."""
    run_id = store.begin_run("f", chain_shape(), [1])
    store.record_item(run_id, "b", 1, 0, "val")
    store.record_item(run_id, "b", 1, 0, "val")
    store.flush()
    assert store.load(run_id).items == {("b", 1): {0: "val"}}
    store.close()  # a restart: the run is left unfinished, and resumed by the next process
    with RunStore(location) as reopened:
        assert reopened.get(run_id).status == "interrupted"
        assert reopened.claim_run(run_id).items == {("b", 1): {0: "val"}}
        reopened.record_item(run_id, "b", 1, 0, "val")
        reopened.flush()
        assert reopened.load(run_id).items == {("b", 1): {0: "val"}}


def test_an_interrupt_and_an_error_are_kept_beside_the_items_of_the_visit(store: RunStore) -> None:
    """From conformance spec/test_put_writes.py::test_put_writes_special_channels (ERROR and
    INTERRUPT writes)."""
    run_id = store.begin_run("f", chain_shape(), [1, 2])
    store.record_item(run_id, "b", 1, 0, "done")
    store.record_interrupt(run_id, "b", 1, {"reason": "human_input"}, item=1)
    store.set_status(run_id, "suspended", wait=True)
    record = store.get(run_id)
    assert record.interrupt is not None
    assert (record.interrupt.node, record.interrupt.item, record.interrupt.payload) == ("b", 1, {"reason": "human_input"})
    assert store.load(run_id).items == {("b", 1): {0: "done"}}
    failed = store.begin_run("f", chain_shape(), 0)
    store.set_status(failed, "failed", error="something went wrong", wait=True)
    assert store.get(failed).error == "something went wrong"


def test_a_shape_given_as_a_graph_and_as_a_formation_shape_is_the_same_run_shape(store: RunStore) -> None:
    """From conformance spec/test_put.py::test_put_returns_config (what is written is what
    identifies the checkpoint): a run records the fingerprint of its formation's shape."""
    import networkx as nx

    g = nx.DiGraph([("a", "b")])
    nx.set_node_attributes(g, "function", "kind")
    run_id = store.begin_run("f", g, 0)
    assert store.get(run_id).fingerprint == FormationShape.of(g).fingerprint
