"""The launcher behind the ``wingman-actors`` command (see :mod:`wingman_actors.cli`).

* :mod:`.loading` — find a formation module by path or name; build its formation.
* :mod:`.providers` — choose the provider of a run (flags, environment, sample replies).
* :mod:`.progress` — show a run's events: a live table on a terminal, plain lines or JSON
  lines otherwise.
* :mod:`.run` and :mod:`.graph` — the ``run`` and ``graph`` commands.
"""

from .errors import UsageError
from .loading import FormationModule, load_module
from .providers import ProviderChoice, choose_provider

__all__ = ["FormationModule", "ProviderChoice", "UsageError", "choose_provider", "load_module"]
