"""The supervisor actor (one per running formation) and the messages it takes.

Node actors report failed attempts to it, and the timer reports attempt timeouts and
retry deadlines to it, as typed messages (:class:`AttemptFailed`,
:class:`AttemptTimedOut`, :class:`Redeliver`). It gives them one thread, away from the
node threads, and hands each to its policy
(:class:`~wingman_actors.formation.supervision.Supervision`): restart the replica,
redeliver with backoff, or give up.
"""

from __future__ import annotations

import logging
import random
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import pykka

from .envelope import Work

__all__ = [
    "AttemptFailed",
    "AttemptTimedOut",
    "Redeliver",
    "SupervisionPolicy",
    "Supervisor",
    "SupervisorMessage",
    "backoff_delay",
]

log = logging.getLogger("wingman_actors.actors")


def backoff_delay(base: float, attempt: int, cap: float = 30.0) -> float:
    """Delay before retry number ``attempt`` (1-based): ``base * 2**(attempt-1)``, capped,
    with jitter drawn from the upper half so retries of many runs spread out."""
    if base <= 0:
        return 0.0
    ceiling = min(cap, base * (2 ** (attempt - 1)))
    return random.uniform(ceiling / 2, ceiling)


@dataclass(frozen=True, slots=True)
class AttemptFailed:
    """An attempt at ``work`` raised (or timed out: see :class:`AttemptTimedOut`).

    Attributes:
        work: the delivery of the work envelope.
        attempt: which attempt failed (1-based).
        error: what it raised.
        started: ``perf_counter`` when the attempt began.
        finished: ``perf_counter`` when it failed.
        replica: the replica index that ran it.
        retired: the replica retired after the failure and needs a fresh successor.
        actor: the replica's actor object, when it retired (the one to replace).
    """

    work: Work
    attempt: int
    error: BaseException
    started: float
    finished: float
    replica: int
    retired: bool
    actor: Any = None


@dataclass(frozen=True, slots=True)
class AttemptTimedOut:
    """Attempt ``attempt`` at ``work`` ran past its node's ``timeout``."""

    work: Work
    attempt: int


@dataclass(frozen=True, slots=True)
class Redeliver:
    """The backoff before retrying ``work`` is over: deliver it again."""

    work: Work


SupervisorMessage = AttemptFailed | AttemptTimedOut | Redeliver


class SupervisionPolicy(Protocol):
    def on_failure(self, failure: AttemptFailed) -> None: ...

    def on_timeout(self, timeout: AttemptTimedOut) -> None: ...

    def redeliver(self, work: Work) -> None: ...


class Supervisor(pykka.ThreadingActor):
    """Takes :data:`SupervisorMessage` objects and hands them to its policy."""

    use_daemon_thread = True  # never keeps the interpreter alive (a forgotten formation)

    def __init__(self, policy: SupervisionPolicy, name: str = "supervisor") -> None:
        super().__init__()
        self.policy = policy
        self.name = name

    def _start_actor_loop(self) -> None:
        thread = threading.Thread(target=self._actor_loop, name=f"wingman-supervisor-{self.name}")
        thread.daemon = self.use_daemon_thread
        self.thread = thread
        thread.start()

    def on_receive(self, message: Any) -> Any:
        try:
            if type(message) is AttemptFailed:
                self.policy.on_failure(message)
            elif type(message) is AttemptTimedOut:
                self.policy.on_timeout(message)
            elif type(message) is Redeliver:
                self.policy.redeliver(message.work)
            else:
                log.warning("supervisor %s ignored %r", self.name, message)
        except Exception:  # the supervisor must survive its policy's bugs
            log.exception("supervisor %s failed to handle %r", self.name, message)
        return None
