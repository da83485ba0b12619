"""The launcher's own errors: bad usage or a bad formation module (exit code 2), and
SIGTERM turned into an interrupt (exit code 143)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import WingmanError

if TYPE_CHECKING:
    from ..store import UnknownRunError

__all__ = ["Terminated", "UsageError", "cut_short", "unknown_run"]


class UsageError(WingmanError):
    """The command line or the formation module is wrong; the message says how to fix it.

    The launcher prints it on one line (no traceback unless ``--debug``) and exits with 2.
    """


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``, ``docker stop``, systemd), raised in the launcher's main thread
    so that a run stops as on Ctrl-C: the formation is stopped, a journalled run becomes
    ``interrupted`` and the ``resume`` command is printed; the exit code is 143."""


def cut_short(exc: KeyboardInterrupt) -> tuple[str, int]:
    """What the launcher says of a command cut short by ``exc`` (Ctrl-C, or SIGTERM as
    :class:`Terminated`), and its exit code."""
    return ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted", 130)


def unknown_run(exc: UnknownRunError, flag: Sequence[str]) -> UsageError:
    """The usage error for a run id the store does not have, with the command that lists
    its runs (``flag``: the ``--store`` arguments that name the store, if any)."""
    listing = shlex.join(["wingman-actors", "runs", *flag])
    return UsageError(f"no run {exc.run_id!r} in the run store {exc.store_path}; list its runs with: {listing}")
