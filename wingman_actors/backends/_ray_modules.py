"""Node code whose module other processes cannot import is shipped to them by value.

Ray pickles a function or class by reference (its module's name and its own) when its
module is imported in the driver, and the Ray worker imports that module by name. A
module loaded from a file under a name no import finds (the launcher loads a single-file
formation as ``wingman_formation_<stem>``; ``importlib`` lets anyone do the same) exists
only in the driver, so the worker fails to build the node and its actor dies.
:func:`ship_unimportable_by_value` registers every such module with Ray's cloudpickle to
be pickled by value, as ``__main__`` is.
"""

from __future__ import annotations

import importlib.machinery
import logging
import os
import sys
import threading
from typing import Any

__all__ = ["ship_unimportable_by_value"]

log = logging.getLogger("wingman_actors.backends")

_checked: set[str] = set()
_lock = threading.Lock()


def _importable(name: str) -> bool:
    """Whether an import statement in a fresh process finds ``name`` (ignoring
    ``sys.modules``: the finders on ``sys.meta_path``, editable installs included)."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            if find_spec(name, None) is not None:
                return True
        except Exception:  # a finder that cannot answer for this name
            continue
    return False


def ship_unimportable_by_value(cloudpickle: Any) -> list[str]:
    """Register the top-level modules loaded from source files under names no import
    finds to be pickled by value by ``cloudpickle`` (Ray's); returns their names."""
    shipped: list[str] = []
    with _lock:
        for name, module in list(sys.modules.items()):
            if name in _checked or "." in name or name == "__main__":
                continue
            _checked.add(name)
            spec = getattr(module, "__spec__", None)
            origin = getattr(spec, "origin", None)
            if not isinstance(getattr(spec, "loader", None), importlib.machinery.SourceFileLoader):
                continue
            if not (isinstance(origin, str) and os.path.isfile(origin)) or _importable(name):
                continue
            cloudpickle.register_pickle_by_value(module)
            shipped.append(name)
    if shipped:
        log.debug("shipping modules no Ray worker can import by value: %s", ", ".join(shipped))
    return shipped
