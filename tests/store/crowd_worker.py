"""One process of the crowd test: many threads run, suspend, fail and resume journalled
runs on one store file that another process uses at the same time.

``work`` runs in a child process (the spawn context: a fresh interpreter, as a second
worker process of a user's would be). Threads of even number pass the store's path to
every ``run``/``resume`` (a store opened and closed per call); odd ones share one
``RunStore`` of the process; half the resumes use the other kind. One more thread lists runs and prunes old ones meanwhile.
Each run's outcome is written to ``<out>`` as JSON: ``{run_id: [status, detail]}`` for
the parent to check against the store.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import FormationShape, RunStore

__all__ = ["SEEDED", "expected", "open_fresh", "start_together", "work"]

SEEDED = "seeded"
"""The formation name of the old runs the parent seeds (and the pruners delete)."""


def start_together(folder: str | Path, tag: str) -> None:
    """Say this process is ready (``ready-<tag>``), then wait for the parent's ``go``."""
    Path(folder, f"ready-{tag}").touch()
    go = Path(folder, "go")
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.001)


def _gate(x: int) -> int:
    if x % 5 == 3:
        return int(interrupt({"x": x}))  # suspends; resumed with the answer 1000 + x
    if x % 5 == 4:
        raise ValueError(f"input {x} is refused")  # fails; resumed, it fails again
    return x * 2


def formation() -> Formation:
    """inc -> gate: succeeds, suspends (x % 5 == 3) or fails (x % 5 == 4)."""
    return Formation("crowd").add_function("inc", lambda x: x + 1).add_function("gate", _gate).connect("inc", "gate")


def expected(x: int) -> tuple[str, int | None]:
    """The final status of the run of input ``x`` after this worker's resume, and its output."""
    if (x + 1) % 5 == 3:
        return "succeeded", 1000 + x
    if (x + 1) % 5 == 4:
        return "failed", None
    return "succeeded", (x + 1) * 2


def _one(f: Formation, store: RunStore | str, again: RunStore | str, run_id: str, x: int) -> list[Any]:
    """Run ``x`` on ``store`` (resuming it on ``again`` if it suspends or fails): [status,
    output or error]."""
    try:
        result = f.run(x, store=store, run_id=run_id)
        if result.status == "suspended":
            result = f.resume(run_id, store=again, answer=1000 + x)
        return [result.status, result.output]
    except FormationRuntimeError as exc:
        if "is refused" not in str(exc):
            return ["error", f"{type(exc).__name__}: {exc}"]
        try:
            f.resume(run_id, store=again)
        except FormationRuntimeError as again:
            return ["failed", None] if "is refused" in str(again) else ["error", f"resume: {again}"]
        return ["error", "the resumed run of a refused input succeeded"]
    except BaseException as exc:  # the test reports any other error with the run
        return ["error", "".join(traceback.format_exception_only(exc)).strip()]


def work(path: str, tag: str, threads: int, runs: int, out: str) -> None:
    """Run ``threads`` x ``runs`` runs (ids ``<tag>-<thread>-<i>``, inputs ``i``) on ``path``
    while one more thread lists and prunes; write the outcomes to ``out``."""
    f = formation()
    start_together(Path(out).parent, tag)
    outcomes: dict[str, list[Any]] = {}
    lock = threading.Lock()
    done = threading.Event()
    with RunStore(path) as shared:
        def runner(t: int) -> None:
            store: RunStore | str = shared if t % 2 else path
            for i in range(runs):
                run_id = f"{tag}-{t}-{i}"
                # every other run resumes on the other kind of store
                outcome = _one(f, store, (path if t % 2 else shared) if i % 4 >= 2 else store, run_id, i)
                with lock:
                    outcomes[run_id] = outcome

        def housekeeper() -> None:
            try:
                while not done.is_set():
                    shared.runs()
                    shared.prune(older_than=3600)  # the parent's seeded runs are a day old
                    with RunStore(path) as own:
                        own.runs("suspended")
                    done.wait(0.01)
            except BaseException as exc:
                with lock:
                    outcomes[f"{tag}-housekeeper"] = ["error", "".join(traceback.format_exception_only(exc)).strip()]

        keeper = threading.Thread(target=housekeeper, name=f"crowd-{tag}-keeper")
        workers = [threading.Thread(target=runner, args=(t,), name=f"crowd-{tag}-{t}") for t in range(threads)]
        keeper.start()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        done.set()
        keeper.join()
    Path(out).write_text(json.dumps(outcomes))


def open_fresh(folder: str, tag: str, threads: int, files: int, out: str) -> None:
    """For each k < ``files``: once ``<folder>/go-k`` exists, every thread opens the store
    ``<folder>/fresh-k.sqlite`` (all at once, the file does not exist yet), begins the run
    ``<tag>-<thread>-k`` and closes it. Errors are written to ``out`` (``{run_id: error}``)."""
    errors: dict[str, str] = {}
    lock = threading.Lock()
    shape = FormationShape.of(formation().graph)
    start_together(folder, tag)

    def opener(t: int) -> None:
        for k in range(files):
            go = Path(folder, f"go-{k}")
            while not go.exists():
                time.sleep(0.0005)
            try:
                with RunStore(Path(folder, f"fresh-{k}.sqlite")) as store:
                    store.begin_run("crowd", shape, k, run_id=f"{tag}-{t}-{k}")
            except BaseException as exc:
                with lock:
                    errors[f"{tag}-{t}-{k}"] = "".join(traceback.format_exception_only(exc)).strip()

    workers = [threading.Thread(target=opener, args=(t,), name=f"fresh-{tag}-{t}") for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    Path(out).write_text(json.dumps(errors))
