"""The PostgreSQL store's server-side function that applies a batch of journal writes: it
finds each write's run by id through the index, however many runs the store holds and
whatever its session planned when the table was small."""

from __future__ import annotations

import json
import time

from wingman_actors.store import RunStore

from .conftest import chain_shape


def test_a_batch_of_entries_reads_one_run_per_entry_however_many_runs_the_store_has(postgres_url: str) -> None:
    import psycopg

    with RunStore(postgres_url) as store, psycopg.connect(postgres_url) as conn:
        first = store.begin_run("chain", chain_shape(), 0)
        (owner,) = conn.execute("SELECT owner FROM runs WHERE id = %s", (first,)).fetchone() or (None,)
        conn.rollback()

        def entries(run_ids: list[str]) -> str:
            return json.dumps([(2, r, 1, "a", 1, None, 0, "1", time.time()) for r in run_ids])

        # this session plans the function's statements now, on a table of one run
        conn.execute("SELECT wingman_journal_ops(%s, %s, true)", (entries([first]), owner))
        conn.rollback()
        ids = [store.begin_run("chain", chain_shape(), i) for i in range(300)]
        conn.execute("SELECT wingman_journal_ops(%s, %s, true)", (entries(ids[:30]), owner))
        (read,) = conn.execute("SELECT COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) FROM "
                               "pg_stat_xact_user_tables WHERE relname = 'runs'").fetchone() or (None,)
        conn.rollback()
    assert read is not None and read <= 30 * 3  # an index lookup (and a foreign-key check) per entry
