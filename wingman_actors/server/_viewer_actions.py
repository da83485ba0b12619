"""What ``wingman-actors ui --store PATH`` does besides reading: the page's actions on a
launcher's run store, as JSON routes, and what the page is told it may do for each run.

``POST /ui/api/formations/{id}/runs`` ``{"input": ...}`` starts a run of a formation whose
file the store records (or given with ``ui --formation``): 201 ``{"run_id", "status"}`` once
the run is journalled; the run goes on in the viewer's process (follow it with ``GET
/ui/api/runs/{id}/stream``). ``POST /ui/api/runs/{id}/resume`` ``{"answer": ...}`` (answer
optional) resumes a suspended, failed, cancelled or interrupted run: 202 once it is claimed.
``POST /ui/api/runs/{id}/cancel`` cancels a run going on in this viewer, or a suspended or
interrupted run (nothing runs it: its status becomes ``cancelled``, and it can still be
resumed): 200 ``{"run_id", "status"}``. A run that another live process runs (a launcher, a
Python program, a server, on this machine or, on PostgreSQL, another) is asked to stop
through the store (``RunStore.request_cancel``): 202 ``{"run_id", "status": "running",
"cancel_requested": true}``; its process cancels it within a second, and the page, which
follows the run's journal, shows it ``cancelled``.

Like every POST of the server, these take JSON bodies only, from the page's own origin,
with the token when the viewer has one (the middleware of :func:`._viewer_store.create_store_viewer`).
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from ._deps import empty_as_default
from ._errors import ApiError
from ._viewer import RESUMABLE

if TYPE_CHECKING:
    from ..store import RunRecord, RunStore
    from ._viewer_runs import UiRuns

__all__ = ["StoreActions", "actions_router"]

_LOOK = 20
"""How many of a formation's newest runs are read for a recorded file, at most."""

_ELSEWHERE = "running in another process (the one that started or resumed it)"
_THERE = "cancel it first (Cancel on its page asks its process to)"


class StartIn(BaseModel):
    """``POST /ui/api/formations/{id}/runs``."""

    model_config = ConfigDict(extra="forbid")
    input: Any = Field(default=None, description="the run's input (default: the file's default input)")


class AnswerIn(BaseModel):
    """``POST /ui/api/runs/{id}/resume``."""

    model_config = ConfigDict(extra="forbid")
    answer: Any = Field(default=None, description="what the run's pending interrupt() returns")


class StoreActions:
    """The viewer's actions on its run store.

    Args:
        store: the viewer's open store.
        runs: the runs the viewer runs.
        shown: the store as the page shows it (no password).
    """

    def __init__(self, store: RunStore, runs: UiRuns, shown: str) -> None:
        self.store = store
        self.runs = runs
        self.shown = shown

    # -- which file builds a run's formation -----------------------------------------

    def file_for(self, record: RunRecord) -> str | None:
        """The file that builds ``record``'s formation: the one it records, else a
        ``--formation`` file that builds a formation of its name; None when neither."""
        from ..store import SERVER_SOURCE

        if record.source and not record.source.startswith(SERVER_SOURCE):
            return record.source
        if record.source:  # a run of the HTTP server: resumed there
            return None
        return next((o.file for o in self.runs.offered() if o.name == record.formation), None)

    def files(self, names: Collection[str] | None = None) -> dict[str, str | None]:
        """The file to start runs of each formation from (``names``, else every one the
        store has runs of or a ``--formation`` file builds), by name: a ``--formation`` file
        building it, else the newest file its runs record (among its :data:`_LOOK` newest
        runs); None when neither. One pass over the store's runs."""
        found: dict[str, str | None] = {o.name: o.file for o in self.runs.offered()}
        looked: Counter[str] = Counter()
        for summary in reversed(self.store.runs()):  # newest first
            name = summary.formation
            if found.get(name) is not None or looked[name] >= _LOOK or (names is not None and name not in names):
                continue
            looked[name] += 1
            found[name] = self.file_for(self.store.get(summary.id))
        return found

    def controls(self, doc: dict[str, Any], record: RunRecord) -> None:
        """Tell the page what it may do with the run ``doc`` shows: ``can_resume`` (resume or
        answer it here), ``cancel_blocked`` (why cancel is disabled: an inner run, cancelled
        with its outer run), ``cancel_requested`` (when a cancel was asked of the process that
        runs it, not acted on yet), ``resume`` (the command that resumes it elsewhere, when it
        cannot be resumed here)."""
        here = self.runs.runs_here(record.id)
        file = None if record.parent else self.file_for(record)
        doc["file"] = file
        doc["can_resume"] = bool(doc["resumable"] and file is not None and not here)
        doc["cancel_blocked"] = (f"This is an inner run of run {record.parent}: cancel that run"
                                 if record.parent and doc["status"] == "running" else None)
        requested = record.cancel_requested
        doc["cancel_requested"] = None if requested is None else requested.isoformat(timespec="seconds")
        command = None
        if doc["resumable"] and file is None and record.source:  # a run of the HTTP server
            command = f"POST /runs/{record.id}/resume on the server that ran it (wingman-actors serve)"
        elif doc["resumable"] and file is None:
            command = shlex.join(["wingman-actors", "resume", record.id, "--store", self.shown, "--formation", "FILE"])
        doc["resume"] = command

    # -- actions ---------------------------------------------------------------------

    def start(self, formation_id: str, body: StartIn) -> dict[str, Any]:
        from .._launcher.errors import UsageError
        from ..errors import FormationSetupError

        files = self.files()
        if formation_id not in files:
            known = ", ".join(repr(name) for name in files) or "none yet"
            raise ApiError(404, f"no formation {formation_id!r} in the run store {self.shown} or the viewer's "
                                f"--formation files; the formations: {known} (GET /ui/api/formations lists them)")
        file = files[formation_id]
        if file is None:
            raise ApiError(409, f"formation {formation_id!r}: no run of it records its file (runs started from "
                                "Python record none), so this viewer cannot build it; give the file with "
                                "`wingman-actors ui --formation FILE`", kind="no_file")
        try:
            value = body.input if "input" in body.model_fields_set else self.runs.default_input(file)
            if value is None and "input" not in body.model_fields_set:  # as `wingman-actors run` without --input
                raise ApiError(400, f"input: formation {formation_id!r} ({file}) has no default input; give the run "
                                    'an input: {"input": ...}', fields=["input"])
            run_id = self.runs.start(file, value)
        except (UsageError, FormationSetupError) as exc:
            raise ApiError(409, f"formation {formation_id!r} cannot be built from {file}: {exc}",
                           kind="formation_file") from None
        return {"run_id": run_id, "status": "running", "file": file}

    def resume(self, run_id: str, body: AnswerIn) -> dict[str, Any]:
        from .._launcher.errors import UsageError
        from ..errors import FormationSetupError
        from ..store import FormationMismatchError, RunNotResumableError

        record = self._record(run_id)
        if self.runs.runs_here(run_id):
            raise ApiError(409, f"run {run_id} is running in this viewer already; wait for it or cancel it",
                           kind="running", run_id=run_id)
        file = self.file_for(record)
        if file is None:
            raise ApiError(409, f"run {run_id} cannot be resumed here: it records no formation file "
                                f"({'it is a run of the HTTP server; resume it there' if record.source else 'it was started from Python'}); "
                                f"start the viewer with `--formation FILE` naming the file that builds formation "
                                f"{record.formation!r}, or run: wingman-actors resume {run_id} --store {self.shown} "
                                "--formation FILE", kind="no_file", run_id=run_id)
        if record.status == "running" and self.store.mark_interrupted():
            record = self._record(run_id)  # its process had died: now interrupted
        if record.status == "running":
            raise ApiError(409, f"run {run_id} cannot be resumed: it is {_ELSEWHERE}; wait for it, or {_THERE}",
                           kind="running", run_id=run_id)
        if record.status not in RESUMABLE:
            raise ApiError(409, f"run {run_id} cannot be resumed: it is {record.status}", kind=record.status,
                           run_id=run_id)
        try:
            self.runs.resume(run_id, file, body.answer)
        except FormationMismatchError as exc:
            raise ApiError(409, f"run {run_id} cannot be resumed with {file}: the formation it builds now differs "
                                f"from the run's ({'; '.join(exc.differences)}); if its build() takes options, give "
                                "the run's with `wingman-actors ui --param NAME=VALUE`", kind="mismatch",
                           run_id=run_id) from None
        except RunNotResumableError as exc:
            raise ApiError(409, str(exc), kind=exc.status, run_id=run_id) from None
        except (UsageError, FormationSetupError) as exc:
            raise ApiError(409, f"run {run_id}: its formation cannot be built from {file}: {exc}",
                           kind="formation_file", run_id=run_id) from None
        except ValueError as exc:  # an answer for a run with no pending interrupt
            raise ApiError(400, f"answer: {exc}", fields=["answer"], run_id=run_id) from None
        return {"run_id": run_id, "status": "running"}

    def cancel(self, run_id: str) -> dict[str, Any]:
        """Cancel the run (see the module docs); ``cancel_requested`` in the answer when
        its process was asked to."""
        from ..store import StoreError

        if self.runs.cancel(run_id):
            return {"run_id": run_id, "status": self._record(run_id).status}
        record = self._record(run_id)
        if record.status == "running" and self.store.mark_interrupted():
            record = self._record(run_id)
        if record.status == "running":  # in another live process: ask it to
            try:
                if self.store.request_cancel(run_id):
                    return {"run_id": run_id, "status": "running", "cancel_requested": True}
            except StoreError as exc:  # an inner run
                raise ApiError(409, str(exc), kind="inner", run_id=run_id) from None
            record = self._record(run_id)  # it ended meanwhile
        if record.status in ("suspended", "interrupted"):  # nothing runs it: only its status changes
            self.store.set_status(run_id, "cancelled", error=f"cancelled from the run viewer while {record.status}",
                                  wait=True)
            return {"run_id": run_id, "status": "cancelled"}
        raise ApiError(409, f"run {run_id} cannot be cancelled: it has already finished ({record.status})",
                       kind=record.status, run_id=run_id)

    def _record(self, run_id: str) -> RunRecord:
        from ..store import UnknownRunError

        try:
            return self.store.get(run_id)
        except UnknownRunError:
            raise ApiError(404, f"no run {run_id!r} in the run store {self.shown}; GET /ui/api/runs lists them") from None


def actions_router(actions: Callable[[], StoreActions],
                   work: Callable[..., Awaitable[Any]]) -> APIRouter:
    """The action routes over ``actions()`` (made when the app starts), each run on the
    worker pool through ``work(fn, *args)``."""
    router = APIRouter(prefix="/ui/api")

    @router.post("/formations/{formation_id}/runs", status_code=201)
    async def start(formation_id: str, body: Annotated[StartIn, empty_as_default(StartIn)]) -> dict[str, Any]:
        return await work(actions().start, formation_id, body)  # type: ignore[no-any-return]

    @router.post("/runs/{run_id}/resume")
    async def resume(run_id: str, body: AnswerIn | None = None) -> JSONResponse:
        done = await work(actions().resume, run_id, body or AnswerIn())
        return JSONResponse(done, status_code=202)

    @router.post("/runs/{run_id}/cancel")
    async def cancel(run_id: str) -> JSONResponse:
        done = await work(actions().cancel, run_id)
        return JSONResponse(done, status_code=202 if done.get("cancel_requested") else 200)

    return router
