"""Which run store a launcher command uses: ``--store PATH``, ``--no-store``, or by
default a store in the user's data directory.

The default store is ``runs.sqlite`` in ``platformdirs.user_data_dir("wingman-actors")``
(``~/.local/share/wingman-actors`` on Linux, or ``$XDG_DATA_HOME/wingman-actors``;
``~/Library/Application Support/wingman-actors`` on macOS; ``%LOCALAPPDATA%`` on
Windows), or in ``$WINGMAN_ACTORS_DATA_DIR`` when that is set. ``run``, ``runs`` and
``resume`` use it when given no ``--store``, so a run cut short by Ctrl-C or a crash is
continued with ``wingman-actors resume RUN_ID``. A data directory that cannot be written
costs ``run`` one warning, never the run. Runs of the default store not updated for
:data:`PRUNE_AFTER` are deleted when a ``run`` ends (a store given with ``--store`` is
never pruned).
"""

from __future__ import annotations

import datetime
import logging
import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .._extras import require
from ..store import RunStore, StoreError
from ..store._values import POSTGRES_SCHEMES, masked, other_scheme
from .errors import UsageError

__all__ = ["DATA_DIR_ENV", "PRUNE_AFTER", "StoreChoice", "default_store_path", "open_for_run"]

log = logging.getLogger("wingman_actors._launcher")

DATA_DIR_ENV = "WINGMAN_ACTORS_DATA_DIR"
"""Environment variable naming the directory of the default store instead of the user
data directory (for tests, CI and sandboxes)."""

PRUNE_AFTER = datetime.timedelta(days=30)
"""Runs of the default store not updated for this long are deleted when ``run`` ends."""

STORE_FILE = "runs.sqlite"



def default_store_path() -> Path:
    """The default store's file: ``$WINGMAN_ACTORS_DATA_DIR/runs.sqlite`` when that
    variable is set, else ``runs.sqlite`` in the user data directory of ``wingman-actors``."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser() / STORE_FILE
    with require("cli", "the launcher's default run store"):
        import platformdirs  # imported by the commands that journal only: --help stays fast

    return Path(platformdirs.user_data_dir("wingman-actors", appauthor=False)) / STORE_FILE


@dataclass(frozen=True)
class StoreChoice:
    """The run store of one command.

    Attributes:
        path: the store's file (for a PostgreSQL store, its URL as a path: use ``target``).
        default: whether it is the default store (commands that name it need no ``--store``).
        url: a PostgreSQL store's URL (``--store postgresql://...``), else None.
    """

    path: Path
    default: bool
    url: str | None = None

    @classmethod
    def of(cls, store: str | None) -> StoreChoice:
        """``--store PATH`` (or ``--store postgresql://...``) when given, else the default store.

        Raises:
            UsageError: ``--store`` is a URL of another scheme (``mysql://...``).
        """
        if store is not None and store.startswith(POSTGRES_SCHEMES):
            return cls(Path(store), False, store)
        wrong_scheme = None if store is None else other_scheme(store)
        if wrong_scheme is not None:  # (not a file to look for: say what --store takes)
            raise UsageError(f"--store {wrong_scheme.removeprefix('RunStore ')}")
        if store is not None:
            return cls(Path(store), False)
        return cls(default_store_path(), True)

    @property
    def target(self) -> str:
        """What ``RunStore(...)`` opens: the file's path, or the URL."""
        return self.url if self.url is not None else str(self.path)

    def exists(self) -> bool:
        """Whether the store is there to read (a PostgreSQL store is assumed to be)."""
        return self.url is not None or self.path.is_file()

    @property
    def shown(self) -> str:
        """The store as messages name it: a URL's password masked (``postgresql://me:***@host/db``)."""
        return masked(self.target)

    def unusable(self, exc: BaseException, doing: str = "use") -> UsageError:
        """The one-line usage error for a store that cannot be opened or read (``exc``:
        the store's error), naming the store without its password."""
        reason = " ".join(part.strip() for part in str(exc).splitlines())
        return UsageError(f"cannot {doing} the run store {self.shown}: {reason}")

    @property
    def flag(self) -> list[str]:
        """The ``--store PATH`` arguments that name this store in a command a message suggests
        (none for the default): a URL's password masked, as :attr:`shown` (messages end up in
        logs; the user knows the password)."""
        return [] if self.default else ["--store", self.shown]

    def missing(self) -> str:
        """Why a command that reads the store finds nothing (the store file is missing, or
        the path is a folder)."""
        if self.path.is_dir():
            return (f"--store {self.path} is a folder, not a run store; give the run store's file, e.g. "
                    f"--store {self.path / STORE_FILE}")
        if self.default:
            return (f"no runs journalled yet: the default run store {self.path} does not exist "
                    "(`wingman-actors run` creates it; give another store with --store PATH)")
        return f"--store {self.path}: no such file; give the run store the run was journalled in"


def open_for_run(choice: StoreChoice, info: IO[str] | None = None, *, required: bool = False) -> RunStore | None:
    """Open the store ``run`` journals into.

    A store named with ``--store``, or one a ``resume`` needs (``required``), must open:
    its errors reach the user. The default store is created on first use; when its
    directory cannot be made or written, one warning goes to ``info`` (stderr) and the
    run goes on without a store.

    Raises:
        UsageError: a ``--store`` file, or a required store, cannot be used as a run store
            (a folder, a file of another kind, a server that cannot be reached).
    """
    if required or not choice.default:
        try:
            return RunStore(choice.target)
        except StoreError as exc:
            raise choice.unusable(exc) from exc
    try:
        choice.path.parent.mkdir(parents=True, exist_ok=True)
        return RunStore(choice.path)
    except (OSError, sqlite3.Error, StoreError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        print(f"wingman-actors: warning: cannot journal this run in {choice.path} ({reason}); running it "
              f"without a store, so it cannot be resumed. Set {DATA_DIR_ENV}=DIR, pass --store PATH, "
              "or --no-store to silence this", file=info or sys.stderr, flush=True)
        return None


def close_after_run(store: RunStore, choice: StoreChoice) -> None:
    """Prune the default store's old runs, then close it (errors are logged, not raised:
    the run is over, its output already printed)."""
    try:
        if choice.default:
            store.prune(PRUNE_AFTER)
    except StoreError as exc:
        log.debug("pruning the default run store failed: %s", exc)
    finally:
        try:
            store.close()
        except StoreError as exc:
            log.warning("closing the run store %s: %s", choice.shown, exc)
