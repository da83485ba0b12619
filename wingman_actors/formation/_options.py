"""The options of a run, as one object: :class:`RunOptions`.

``Formation.run``, ``run_stream``, ``resume``, ``resume_stream``, ``start`` and
``RunningFormation.submit``/``resume`` take these options as keywords, and also as one
``options=RunOptions(...)``; inside the package they travel as one :class:`RunOptions`
(the running formation, ``run_once``/``run_stream``, the launcher), not as nine keywords
repeated through every signature (as Temporal's SDK passes a worker's settings as one
``WorkerConfig``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Collection, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _timeouts as timeouts

if TYPE_CHECKING:
    from ..orchestration._blackboard import Blackboard
    from ..providers._base import Provider
    from ._durable import StoreArg
    from .events import FormationEvent

__all__ = ["RunOptions", "check_run_args", "merge_options", "require_run_id"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """How to run a formation: every option of ``Formation.run``, as one value.

    Build one and pass it around, or to any run method as ``options=``; the method's
    own keywords still work, alone or beside it. A keyword left at its default takes
    the options' value; naming the same option both ways with different values is a
    ``TypeError``, and so is an option the method does not take (``start()`` takes no
    ``timeout``: a timeout belongs to each run, given to ``submit()``).

    Attributes:
        timeout: seconds the whole run may take (None or ``math.inf``: no limit).
        on_event: called with every :class:`~wingman_actors.formation.events.FormationEvent`.
        provider: replaces the provider of every agent and fleet node.
        work_dir: where agent and fleet sessions run their tools (default: the current
            directory).
        backend: where the node actors live: ``"threads"`` (the default) or ``"ray"``.
        backend_options: for ``backend="ray"``: ``address``, ``num_cpus``, ``init``.
        blackboard: a :class:`~wingman_actors.orchestration.Blackboard` the nodes share.
        store: journal runs in this :class:`~wingman_actors.store.RunStore` (or the
            SQLite file at this path), so they can be resumed.
        run_id: the id of a journalled run (a new one when None).
        break_before: names of nodes to stop the run before (a journalled run suspends
            there, as at an ``interrupt()``; ``resume`` continues it).
        break_after: names of nodes to stop the run after (likewise). For a resume, None
            keeps the run's own breakpoints and a list replaces them.

    Example:
        >>> from wingman_actors.formation import RunOptions
        >>> options = RunOptions(timeout=30, backend="threads")
        >>> result = formation.run("input", options=options)  # doctest: +SKIP
        >>> result = formation.run("input", timeout=30)  # the same run  # doctest: +SKIP
    """

    timeout: float | timedelta | None = None
    on_event: Callable[[FormationEvent], None] | None = None
    provider: Provider | None = None
    work_dir: str | Path | None = None
    backend: str = "threads"
    backend_options: Mapping[str, Any] | None = None
    blackboard: Blackboard | None = None
    store: StoreArg | None = None
    run_id: str | None = None
    break_before: Collection[str] | None = None
    break_after: Collection[str] | None = None

    def __post_init__(self) -> None:
        check_run_args(self.timeout, self.on_event)
        if self.provider is not None and not callable(getattr(self.provider, "run_inference", None)):
            raise TypeError(
                "provider must be a Provider (it replaces every agent's), e.g. "
                "wingman_actors.providers.new_provider('openai', {'model': ...}) or "
                f"wingman_actors.testing.ScriptedProvider([...]), got {type(self.provider).__name__} {self.provider!r}"
            )
        if self.work_dir is not None and not isinstance(self.work_dir, str | os.PathLike):
            raise TypeError(f"work_dir must be a directory path (str or pathlib.Path) or None, got {self.work_dir!r}")
        if self.backend_options is not None and not isinstance(self.backend_options, Mapping):
            raise TypeError("backend_options must be a mapping (e.g. {'address': 'auto'} for backend='ray') or None, "
                            f"got {self.backend_options!r}")
        if not isinstance(self.backend, str):
            raise TypeError(f"backend must be a name, 'threads' or 'ray', got {self.backend!r}")
        if self.run_id is not None:
            check_new_run_id(self.run_id)


def check_new_run_id(run_id: Any) -> None:
    """Refuse a ``run_id`` for a new run that is not a non-empty str (None, for a generated
    id, is the caller's to let through). An empty one would otherwise reach the store, whose
    error names its own method, or read as "no store given".

    Raises:
        TypeError: ``run_id`` is not a str.
        ValueError: it is empty.
    """
    if not isinstance(run_id, str):
        raise TypeError(f"run_id must be a str (the new run's id) or None for a generated one, got {run_id!r}")
    if not run_id:
        raise ValueError("run_id must be a non-empty str (the new run's id) or None for a generated one, got ''")


def require_run_id(run_id: Any, call: str) -> None:
    """Refuse a ``run_id`` to resume that is no run's id (None above all: it would read as
    "no run id", which starts a new run where a resume was asked for).

    Raises:
        TypeError: ``run_id`` is not a str.
        ValueError: it is empty.
    """
    if not isinstance(run_id, str):
        raise TypeError(f"{call} needs run_id, the id of a journalled run (a str: FormationResult.run_id, "
                        f"future.run_id, or `wingman-actors runs --store PATH` lists them), got {run_id!r}")
    if not run_id:
        raise ValueError(f"{call} needs run_id, the id of a journalled run, got an empty string")


def check_run_args(timeout: Any, on_event: Any = None) -> float | None:
    """Refuse a run ``timeout`` that is not a number of seconds > 0, ``math.inf`` or None
    and an ``on_event`` that is not callable (or None): the checks of every run method.

    Returns:
        The timeout to run with: None for no limit (``math.inf`` included).

    Raises:
        TypeError: ``timeout`` is not a number, or ``on_event`` not callable.
        ValueError: ``timeout`` is not > 0 (nan included).
    """
    limit = timeouts.limit("timeout", timeout)
    if on_event is not None and not callable(on_event):
        raise TypeError(f"on_event must be a callable taking a FormationEvent, got {on_event!r}")
    return limit


_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(RunOptions)}
# options of one run, given to submit() of a started formation
_PER_RUN = ("timeout", "run_id", "break_before", "break_after")
_PER_START = ("provider", "work_dir", "backend", "backend_options", "store")  # fixed by start()


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # a value whose == does not give a bool: only itself is the same
        return False


def merge_options(options: RunOptions | None, call: str, **keywords: Any) -> RunOptions:
    """The options of the call ``call`` (e.g. ``"Formation.run()"``): its ``keywords``,
    each one it takes, merged with ``options``.

    A keyword at its default takes the value of ``options``; a keyword that differs
    from its default wins over a default in ``options``.

    Raises:
        TypeError: ``options`` is not a :class:`RunOptions`; it sets an option the call
            does not take; or a keyword and ``options`` give the same option two
            different values.
        ValueError: a ``Formation`` method got a ``run_id`` (or a run to resume) and no store.
    """
    merged = _merged(options, call, keywords)
    if merged.run_id is not None and merged.store is None and call.startswith("Formation."):
        # (a started formation's submit and resume say this themselves: their store is start()'s)
        if "resume" in call:
            raise ValueError(f"{call} needs the run's store: pass store= (the RunStore, or the path of its file, "
                             f"the run is journalled in), e.g. formation.resume(run_id, store='runs.sqlite')")
        raise ValueError(f"run_id={merged.run_id!r} names a journalled run: give {call} a store too, "
                         f"e.g. store='runs.sqlite'")
    return merged


def _merged(options: RunOptions | None, call: str, keywords: dict[str, Any]) -> RunOptions:
    if options is None:
        return RunOptions(**keywords)
    if not isinstance(options, RunOptions):
        raise TypeError(
            f"{call}: options must be a wingman_actors.formation.RunOptions, got {type(options).__name__}; "
            f"e.g. options=RunOptions(timeout=30)"
        )
    unused = [n for n, default in _DEFAULTS.items() if n not in keywords and not _same(getattr(options, n), default)]
    if unused:
        where = ""
        if any(n in _PER_RUN for n in unused):
            where = " (timeout, run_id, break_before and break_after belong to one run: give them to submit())"
        elif any(n in _PER_START for n in unused):
            where = " (provider, work_dir, backend, backend_options and store are fixed by start())"
        raise TypeError(
            f"{call} does not take {', '.join(unused)}{where}, but options sets it; it takes "
            f"{', '.join(keywords)}: leave the others unset in the RunOptions given to it"
        )
    changes: dict[str, Any] = {}
    clashes: list[str] = []
    for name, value in keywords.items():
        default = _DEFAULTS[name]
        if _same(value, default):
            continue
        theirs = getattr(options, name)
        if _same(theirs, default):
            changes[name] = value
        elif not _same(theirs, value):
            clashes.append(f"{name}={value!r} and options.{name}={theirs!r}")
    if clashes:
        raise TypeError(
            f"{call} got two values for the same option: {'; '.join(clashes)}; "
            "give each option once, as a keyword or in options"
        )
    return dataclasses.replace(options, **changes) if changes else options
