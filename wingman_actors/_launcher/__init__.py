"""The launcher behind the ``wingman-actors`` command (see :mod:`wingman_actors.cli`).

* :mod:`.loading` — find a formation module by path or name; build its formation.
* :mod:`.ready` — the ready formations (``budget``, ``research``) by name.
* :mod:`.providers` — choose the provider of a run (flags, environment, sample replies).
* :mod:`.progress` — show a run's events: a live table on a terminal, plain lines or JSON
  lines otherwise.
* :mod:`.run` and :mod:`.graph` — the ``run`` and ``graph`` commands.

The names below are imported on first use, so the launcher starts without loading the
runtime for commands that do not need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .errors import UsageError
    from .loading import FormationModule, load_module
    from .providers import ProviderChoice, choose_provider

__all__ = ["FormationModule", "ProviderChoice", "UsageError", "choose_provider", "load_module"]

_WHERE = {
    "FormationModule": ".loading",
    "ProviderChoice": ".providers",
    "UsageError": ".errors",
    "choose_provider": ".providers",
    "load_module": ".loading",
}


__getattr__ = lazy_exports(__name__, _WHERE, globals())
