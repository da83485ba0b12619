"""The errors of the run store.

::

    WingmanError
    └── StoreError                  anything the run store refuses or fails to do
        ├── StoreOpenError          the path is not a usable run store (also a ValueError)
        │   └── StoreVersionError   the file was written by a newer wingman-actors
        ├── UnknownRunError         no run with that id (also a KeyError)
        ├── RunExistsError          a new run was given an id the store has already (also a ValueError)
        ├── RunNotResumableError    the run cannot be claimed (running elsewhere, finished, expired)
        ├── SerializationError      a value cannot be journalled or loaded (also a TypeError)
        ├── StoreWriteError         journal writes failed (reported at flush() / close())
        ├── StoreClosedError        the store was used after close()
        └── RunTakenOverError       another store took the run over (this one's lease lapsed);
                                    also a FormationRuntimeError: the run ends with it here
    FormationSetupError
    └── FormationMismatchError      the formation differs from the one the run was recorded with
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FormationRuntimeError, FormationSetupError, WingmanError

__all__ = [
    "FormationMismatchError",
    "RunExistsError",
    "RunNotResumableError",
    "RunTakenOverError",
    "SerializationError",
    "StoreClosedError",
    "StoreError",
    "StoreOpenError",
    "StoreVersionError",
    "StoreWriteError",
    "UnknownRunError",
]


class StoreError(WingmanError):
    """Base class of the run store's errors.

    They survive pickling with their attributes (an error a node raises on the Ray backend
    reaches the driver pickled), though their constructors take more than the message.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(cls: type[StoreError], args: tuple[Any, ...], state: dict[str, Any]) -> StoreError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class StoreOpenError(StoreError, ValueError):
    """The path cannot be opened as a run store (missing folder, a directory, not SQLite,
    another application's database)."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class StoreVersionError(StoreOpenError):
    """The store file has a schema version newer than this wingman-actors understands."""

    def __init__(self, message: str, *, path: str, version: int, supported: int) -> None:
        super().__init__(message, path=path)
        self.version = version
        self.supported = supported


class UnknownRunError(StoreError, KeyError):
    """No run with this id in the store.

    With ``no_store``, the store itself is not there (a path where no file is, given to a
    call that reads a run, such as ``Formation.fork``).

    Attributes:
        run_id: the id asked for.
        store_path: the store (a PostgreSQL store's URL with its password hidden).
    """

    def __init__(self, run_id: str, path: str, *, no_store: bool = False) -> None:
        super().__init__(
            f"no run {run_id!r}: the run store {path} does not exist; give the path of the store the run was "
            "journalled in" if no_store else
            f"no run {run_id!r} in the run store {path}; list the runs with store.runs() "
            "(or `wingman-actors runs --store PATH`)"
        )
        self.run_id = run_id
        self.store_path = path

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class RunExistsError(StoreError, ValueError):
    """A new run was given an id the store has already (``begin_run(run_id=...)``, a
    formation's ``submit`` or ``run`` with ``run_id=``): the run holding it is left as it
    was. Resume that run to continue it, or start the new one under another id.

    Attributes:
        run_id: the id asked for.
        store_path: the store (a PostgreSQL store's URL with its password hidden).
    """

    def __init__(self, run_id: str, store_path: str) -> None:
        super().__init__(
            f"run id {run_id!r} already exists in the run store {store_path}: to continue that run, resume it "
            f"(Formation.resume({run_id!r}, store=...), or `wingman-actors resume {run_id}`); to start a new run, "
            "pass a new run_id, or None for a generated one")
        self.run_id = run_id
        self.store_path = store_path


class RunNotResumableError(StoreError):
    """The run cannot be claimed for resuming: ``status`` says why."""

    def __init__(self, message: str, *, run_id: str, status: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.status = status


def inner_id_taken(run_id: str, parent: str, *, formation: str, status: str,
                   taken_by: str | None) -> RunNotResumableError:
    """The error refusing run ``parent`` the id ``run_id`` of one of its inner runs (a
    nested formation's run, ``"<run id>/<node>/<visit>"``) when another run holds that id:
    a top-level run (``taken_by`` None) or an inner run of another run. Reusing that run's
    journal would give the outer run another run's outputs."""
    holder = "a top-level run" if taken_by is None else f"an inner run of run {taken_by!r}"
    return RunNotResumableError(
        f"run id {run_id!r} is where run {parent!r} journals the inner run of a nested formation node, but the run "
        f"store holds {holder} of formation {formation!r} ({status}) under that id, which is not run {parent!r}'s "
        f"to take; start the outer formation under another run_id (ids of the form '<run id>/<node>/<visit>' "
        "belong to the inner runs of run '<run id>': keep them for those)", run_id=run_id, status=status)


class NoPendingInterruptError(StoreError, ValueError):
    """An answer was given for a run that has no pending interrupt (it failed, was
    cancelled or cut short, or its interrupt was answered already): resume it without an
    answer. ``status`` is the run's status when it was refused."""

    def __init__(self, message: str, *, run_id: str, status: str) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.status = status


class SerializationError(StoreError, TypeError):
    """A value cannot be journalled (its type is not supported) or loaded (its class
    cannot be imported, or it is pickled and the store does not allow pickle)."""

    def __init__(self, message: str, *, where: str, type_name: str) -> None:
        super().__init__(message)
        self.where = where
        self.type_name = type_name


class StoreWriteError(StoreError):
    """Journal writes that did not reach the database; ``errors`` holds one line each,
    ``store`` the store they were for (its path, or its URL with the password hidden;
    None when not known), which the message names first."""

    def __init__(self, errors: Sequence[str], store: str | None = None) -> None:
        shown = "; ".join(errors[:5]) + (f"; ... and {len(errors) - 5} more" if len(errors) > 5 else "")
        where = "" if store is None else f"run store {store}: "
        super().__init__(f"{where}{len(errors)} journal write(s) failed: {shown}")
        self.errors = list(errors)
        self.store = store


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""


class RunTakenOverError(StoreError, FormationRuntimeError):
    """Another store took the run over: this store's lease lapsed (its process froze or
    lost the server) and another process claimed the run, which now journals it. This
    store's writes into the run are refused, and a formation running it here ends it with
    this error (its work in flight abandoned, nothing more journalled from here), while
    the other owner carries it on.

    Attributes:
        run_id: the run.
        store_path: the store (its URL, password hidden).
        outputs: the outputs of the nodes that finished here before the run was lost (when
            a formation's run ended with it).
    """

    def __init__(self, run_id: str, store_path: str, *, outputs: Any = None) -> None:
        super().__init__(
            f"run {run_id!r} was taken over by another owner: this store's lease lapsed (its process was frozen, "
            f"or cut off from {store_path}, for longer than the lease) and another process claimed the run and "
            "carries it on; its journal takes no more writes from this store (a formation running it here stops "
            "it). Give the store a longer lease (RunStore(url, lease=...)) if its processes pause that long",
            run_id=run_id, outputs=outputs)
        self.store_path = store_path

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.run_id, self.store_path), {"outputs": self.outputs})


class FormationMismatchError(FormationSetupError):
    """The formation's nodes, kinds or edges differ from those the run was recorded with.

    Attributes:
        formation: the formation's name.
        run_id: the run.
        differences: one readable line per difference (also in ``problems``).
    """

    def __init__(self, formation: str, run_id: str, differences: Sequence[str]) -> None:
        super().__init__(formation, differences)
        self.run_id = run_id
        self.differences = list(differences)
        lines = "\n".join(f"  - {d}" for d in self.differences)
        self.args = (
            f"formation {formation!r} does not match run {run_id!r}: a run resumes only in the formation "
            f"it started with (same nodes, kinds and edges). Differences:\n{lines}\n"
            "Rebuild the formation as it was when the run started, or start a new run.",
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.formation, self.run_id, self.differences), dict(self.__dict__))
