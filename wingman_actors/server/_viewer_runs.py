"""The runs ``wingman-actors ui --store PATH`` runs itself: started from the page, or
resumed (an interrupt answered) from it, journalled into the store the viewer reads.

A run can be run here when its formation can be built here: from the formation file the
run records (``wingman-actors run`` records it), or from a file given with ``ui --formation
FILE`` that builds a formation of the same name (for a run started from Python, which
records none). Each run gets its own started formation, journalled into the viewer's store,
and keeps its events (:class:`~._live.RunLog`) for the page, as the server does. It is
cancelled from the page while it runs here (a run that another live process runs is asked
to stop through the store instead: see :mod:`._viewer_actions`).
When the viewer stops, the runs still going on here are stopped: the journal marks them
``interrupted``, and any process can resume them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._live import KEPT, RunLog
from ._run_outcome import Tracker
from ._viewer import formation_graph

if TYPE_CHECKING:
    from .._launcher.loading import FormationModule
    from .._launcher.providers import ProviderChoice
    from ..formation import Formation
    from ..formation._result import FormationResult
    from ..formation._runtime import RunningFormation
    from ..store import RunStore

__all__ = ["Offered", "UiRuns"]

_log = logging.getLogger(__name__)

_SETTLE_S = 5.0


@dataclass(frozen=True)
class Offered:
    """A formation the viewer can start: its file and what it builds.

    Attributes:
        file: the formation file (or module name) as recorded or given.
        name: the formation's name.
        graph: its graph document (formation nodes with their inner graphs).
    """

    file: str
    name: str
    graph: dict[str, Any]


@dataclass
class _Flight:
    run_id: str
    running: RunningFormation
    future: Future[FormationResult]
    tracker: Tracker
    log: RunLog
    done: threading.Event = field(default_factory=threading.Event)


class UiRuns:
    """The runs this viewer runs, by id, and the formations it can build.

    Args:
        store: the viewer's open run store (runs are journalled in it).
        params: options for every formation file's ``build()`` (``ui --param``).
        provider: the provider chosen as ``run`` chooses it (``ui --provider``, else the
            environment); None or not real: the file's sample replies, if it ships any.
    """

    def __init__(self, store: RunStore, params: Mapping[str, Any] | None = None,
                 provider: ProviderChoice | None = None) -> None:
        self.store = store
        self.params = dict(params or {})
        self.provider = provider
        self._lock = threading.Lock()
        self._modules: dict[str, FormationModule] = {}
        self._offered: dict[str, Offered] = {}  # by file
        self._flights: dict[str, _Flight] = {}
        self._logs: OrderedDict[str, RunLog] = OrderedDict()
        self._threads: list[threading.Thread] = []
        self._stopped = False

    # -- formations ------------------------------------------------------------------

    def offer(self, file: str) -> Offered:
        """Load ``file`` (``ui --formation``, or a file a run records) and remember what it builds.

        Raises:
            wingman_actors._launcher.errors.UsageError: the file cannot be loaded or built.
            FormationSetupError: it builds an invalid formation.
        """
        with self._lock:
            known = self._offered.get(file)
        if known is not None:
            return known
        formation, _ = self._build(file)
        offered = Offered(file, formation.name, formation_graph(formation))
        with self._lock:
            self._offered[file] = offered
        return offered

    def offered(self) -> list[Offered]:
        """The formations loaded so far, in the order they were."""
        with self._lock:
            return list(self._offered.values())

    def _module(self, file: str) -> FormationModule:
        from .._launcher.loading import load_module

        with self._lock:
            module = self._modules.get(file)
        if module is None:
            module = load_module(file)
            with self._lock:
                module = self._modules.setdefault(file, module)
        return module

    def _build(self, file: str) -> tuple[Formation, Any]:
        """A fresh formation from ``file`` (one per run), and the provider its run is given."""
        from .._launcher.providers import make_provider

        module = self._module(file)
        choice = self.provider
        provider = make_provider(choice) if choice is not None and choice.real else module.sample_provider(0.0)
        formation, took = module.build(provider, self.params)
        formation.source = str(Path(file).resolve()) if Path(file).is_file() else file  # type: ignore[attr-defined]
        return formation, None if took else provider

    def default_input(self, file: str) -> Any:
        """The input a run of ``file`` gets when the page sends none."""
        return self._module(file).default_input()

    # -- runs ------------------------------------------------------------------------

    def start(self, file: str, input: Any) -> str:
        """Start a run of the formation ``file`` builds; its id, once it is journalled."""
        return self._launch(file, lambda running, listener: running.submit(input, on_event=listener))

    def resume(self, run_id: str, file: str, answer: Any = None) -> str:
        """Resume ``run_id`` with the formation ``file`` builds (answering its interrupt
        with ``answer`` when given); returns once the run is claimed.

        Raises:
            wingman_actors.store.FormationMismatchError: the file builds another shape.
            wingman_actors.store.RunNotResumableError: the run cannot be resumed.
            ValueError: an answer for a run with no pending interrupt.
        """
        return self._launch(file, lambda running, listener: running.resume(run_id, answer, on_event=listener))

    def _launch(self, file: str, begin: Any) -> str:
        if self._stopped:
            raise RuntimeError("the viewer is stopping: it starts no more runs")
        formation, provider = self._build(file)
        log = RunLog("")  # its id is known once the run is journalled (its first events come before)
        tracker = Tracker(formation, log)
        running = formation.start(store=self.store, provider=provider)
        try:
            future: Future[FormationResult] = begin(running, log)
        except BaseException:
            running.stop()
            raise
        run_id: str = future.run_id  # type: ignore[attr-defined]
        log.run_id = run_id
        current = _Flight(run_id, running, future, tracker, log)
        with self._lock:
            self._flights[run_id] = current
            self._logs.pop(run_id, None)
            self._logs[run_id] = log
            while len(self._logs) > KEPT:
                self._logs.popitem(last=False)
            thread = threading.Thread(target=self._finish, args=(current,), name=f"wingman-ui-run-{run_id}",
                                      daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return run_id

    def _finish(self, current: _Flight) -> None:
        """Wait for the run, stop its formation, make its journal current, tell the pages."""
        try:
            wait_for([current.future])
            current.running.stop()
            self.store.flush()
        except Exception:  # the run's outcome is in the journal, which the page reads; say what went wrong here
            _log.warning("wingman-actors ui: run %s did not end cleanly", current.run_id, exc_info=True)
        finally:
            with self._lock:
                if self._flights.get(current.run_id) is current:
                    del self._flights[current.run_id]
            current.done.set()
            current.log.close()

    def runs_here(self, run_id: str) -> bool:
        """Whether this viewer is running ``run_id`` now."""
        with self._lock:
            return run_id in self._flights

    def traces(self, run_id: str) -> dict[str, dict[str, Any]] | None:
        """The live node traces of a run in flight here (None otherwise)."""
        with self._lock:
            current = self._flights.get(run_id)
        if current is None:
            return None
        return current.tracker.traces()

    def log(self, run_id: str) -> RunLog | None:
        """The events of a run this viewer ran lately (the last :data:`~._live.KEPT`)."""
        with self._lock:
            return self._logs.get(run_id)

    def settle(self, run_id: str, timeout: float = _SETTLE_S) -> None:
        """Wait (``timeout`` at most) until a run that ran here is over and journalled."""
        with self._lock:
            current = self._flights.get(run_id)
        if current is not None:
            current.done.wait(timeout)

    def cancel(self, run_id: str) -> bool:
        """Cancel a run in flight here and wait until it is journalled cancelled; False
        when this viewer is not running it (or it had just finished)."""
        with self._lock:
            current = self._flights.get(run_id)
        if current is None or not current.running.cancel(run_id):
            return False
        current.done.wait(_SETTLE_S)
        return True

    def stop(self) -> None:
        """Stop every run still going on here (the journal marks them ``interrupted``)."""
        self._stopped = True
        with self._lock:
            flights, threads = list(self._flights.values()), list(self._threads)
        for current in flights:
            current.running.stop()
        deadline = time.monotonic() + _SETTLE_S
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
