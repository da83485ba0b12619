"""Stored formations' declarations kept in memory for their runs, so a run over HTTP does
not read them from the database each time.

An entry is a formation's record, its declaration and those of the formations it nests,
as loaded together, with the key :mod:`._started` keeps its started formations under.
``PUT`` and ``DELETE`` of a formation drop the entries involving it (as they drop its
started formations), so a run on this server after the change uses the new declaration.

Another server process sharing the database file may change a declaration too; this one
cannot see that without reading. An entry is therefore trusted for :data:`FRESH_S` after
it was read: a run started later reads the declarations again (on a worker thread) and
keeps or replaces the entry. So a declaration replaced or deleted by another process is
used by this one's runs for at most :data:`FRESH_S` after the change is committed (before,
every run read it; a run that read it just before the change used the old one as well).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._declaration import FormationDecl
from ._errors import ApiError
from ._nesting import agent_ids, declaration_of, load_nested
from ._schemas import FormationOut

if TYPE_CHECKING:
    from ._context import ServerContext

__all__ = ["FRESH_S", "Declarations", "Entry"]

FRESH_S = 1.0
"""Seconds a declaration read from the database is used without reading it again (see the
module docs: the longest another process's change goes unseen)."""

_Key = tuple[str, ...]


@dataclass(frozen=True, eq=False)
class Entry:
    """One stored formation, loaded.

    Attributes:
        record: its stored record.
        decl: its declaration.
        nested: the declarations of the formations it nests (at any depth), by id.
        key: the declaration and those it nests as stored (what started formations are kept by).
        ids: its own id and those of the formations it nests.
        agents: whether it has agent or fleet nodes, at any depth (not kept started).
        fresh_until: ``time.monotonic()`` until which it is used without reading it again.
    """

    record: FormationOut
    decl: FormationDecl
    nested: dict[str, FormationDecl]
    key: _Key
    ids: frozenset[str]
    agents: bool
    fresh_until: float


class Declarations:
    """The loaded declarations of stored formations, by formation id."""

    def __init__(self, fresh_s: float | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Entry] = {}
        self._drops = 0  # how many drops so far: a load that began before one is not kept
        self._fresh_s = FRESH_S if fresh_s is None else fresh_s

    def cached(self, id: str) -> Entry | None:
        """Formation ``id``'s entry if it is fresh (no database read), else None."""
        entry = self._entries.get(id)
        if entry is None or entry.fresh_until < time.monotonic():
            return None
        return entry

    def load(self, ctx: ServerContext, id: str) -> Entry:
        """Formation ``id``'s entry: the fresh one, else read from the database now (and
        kept). Blocking: on a worker thread.

        Raises:
            ApiError: 404 for an unknown formation.
        """
        entry = self.cached(id)
        if entry is not None:
            return entry
        with self._lock:
            drops = self._drops
        try:
            record = ctx.store.get_formation(id)
        except ApiError:  # deleted (by another process: this one drops it at once)
            with self._lock:
                self._entries.pop(id, None)
            raise
        decl = declaration_of(record)
        nested = load_nested(ctx.store, decl, id)
        key = (id, decl.model_dump_json(), *(f"{k}\0{v.model_dump_json()}" for k, v in sorted(nested.items())))
        old = self._entries.get(id)
        if old is not None and old.key == key and old.record == record:
            decl, nested = old.decl, old.nested  # unchanged: the started formations' key objects stay
        entry = Entry(record, decl, nested, key, frozenset((id, *nested)), bool(agent_ids(decl, nested)),
                      time.monotonic() + self._fresh_s)
        with self._lock:
            if self._drops == drops:
                self._entries[id] = entry
        return entry

    def drop(self, formation_id: str) -> None:
        """Formation ``formation_id`` was replaced or deleted: forget the entries involving
        it (its own, and those of the formations nesting it)."""
        with self._lock:
            self._drops += 1
            for fid, entry in list(self._entries.items()):
                if formation_id in entry.ids:
                    del self._entries[fid]
