"""The supervisor actor: one per running formation.

Node actors report failures to it, and the timer reports attempt timeouts and retry
deadlines to it; it applies the node's policy (restart a fresh actor and redeliver with
exponential backoff and jitter, or give up: fail the run or skip the node). The policy
decisions live in the runtime object it serves (``handler``), so they can be unit-tested;
the actor gives them one thread, away from the node threads.
"""

from __future__ import annotations

import logging
import random
from typing import Any, Protocol

import pykka

from .envelope import Envelope

__all__ = ["Supervisor", "SupervisorHandler", "backoff_delay"]

log = logging.getLogger("wingman_actors.actors")


def backoff_delay(base: float, attempt: int, cap: float = 30.0) -> float:
    """Delay before retry number ``attempt`` (1-based): ``base * 2**(attempt-1)``, capped,
    with jitter drawn from the upper half so retries of many runs spread out."""
    if base <= 0:
        return 0.0
    ceiling = min(cap, base * (2 ** (attempt - 1)))
    return random.uniform(ceiling / 2, ceiling)


class SupervisorHandler(Protocol):
    def on_failure(self, env: Envelope) -> None: ...

    def on_timeout(self, work: Envelope, attempt: int) -> None: ...

    def redeliver(self, work: Envelope) -> None: ...


class Supervisor(pykka.ThreadingActor):
    """Receives ``failure`` envelopes and ``("timeout", work, attempt)`` /
    ``("redeliver", work)`` requests, and hands them to its handler."""

    def __init__(self, handler: SupervisorHandler, name: str = "supervisor") -> None:
        super().__init__()
        self.handler = handler
        self.name = name

    def _start_actor_loop(self) -> None:
        import threading

        thread = threading.Thread(target=self._actor_loop, name=f"wingman-supervisor-{self.name}")
        thread.daemon = self.use_daemon_thread
        self.thread = thread
        thread.start()

    def on_receive(self, message: Any) -> Any:
        try:
            if type(message) is Envelope:
                self.handler.on_failure(message)
            elif isinstance(message, tuple) and message[0] == "timeout":
                self.handler.on_timeout(message[1], message[2])
            elif isinstance(message, tuple) and message[0] == "redeliver":
                self.handler.redeliver(message[1])
            else:
                log.warning("supervisor %s ignored %r", self.name, message)
        except Exception:  # the supervisor must survive its handler's bugs
            log.exception("supervisor %s failed to handle %r", self.name, message)
        return None
