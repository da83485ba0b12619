"""The launcher's own error: bad usage or a bad formation module (exit code 2)."""

from __future__ import annotations

from ..errors import WingmanError

__all__ = ["UsageError"]


class UsageError(WingmanError):
    """The command line or the formation module is wrong; the message says how to fix it.

    The launcher prints it on one line (no traceback unless ``--debug``) and exits with 2.
    """
