"""Supervision: what happens when a node fails.

1. ``retries`` + ``backoff``: a flaky function fails twice, and each time the supervisor
   restarts the node on a fresh actor and redelivers after an exponential backoff (with
   jitter); the third attempt succeeds.
2. ``on_error="skip"``: a node that fails for good is skipped, and so is everything that
   depends only on it; the rest of the run completes.
3. ``on_error="fail"`` (the default): the run fails with ``FormationRuntimeError``
   carrying the node, its attempts, the run id, the partial outputs and the cause.
4. ``timeout``: an attempt running past it counts as a failure (and is retried).
5. ``retry_on`` and an error edge: only the errors ``retry_on`` names are retried, and
   ``connect(node, handler, on_error=True)`` hands what still fails to a handler as a
   ``NodeFailure``; the run goes on from the handler instead of failing.

Run it with::

    python examples/supervision.py
"""

from __future__ import annotations

import threading
import time

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent


class Flaky:
    """Raises on the first ``failures`` calls, then returns x + 100."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, x: int) -> int:
        with self.lock:
            self.calls += 1
            call = self.calls
        if call <= self.failures:
            raise ConnectionError(f"service unavailable (call {call})")
        return x + 100


def show_event(event: FormationEvent) -> None:
    if event.type == "node_retry":
        d = event.data
        print(f"   retry: {event.node} attempt {d['attempt']} failed ({d['error']}); "
              f"next in {d['delay_s'] * 1000:.0f} ms")
    elif event.type in ("node_failed", "node_skipped"):
        print(f"   {event.type}: {event.node} {event.data}")


def inc(x: int) -> int:
    return x + 1


def main() -> None:
    print("1. retries with backoff (fails twice, then succeeds)")
    flaky = Flaky(failures=2)
    f = Formation("retry").add_function("flaky", flaky, retries=3, backoff=0.02)
    result = f.run(1, on_event=show_event)
    trace = result.nodes["flaky"]
    print(f"   output={result.output}, status={trace.status}, attempts={trace.attempts}, calls={flaky.calls}")

    print("\n2. on_error='skip'")
    f = (
        Formation("skip")
        .add_function("src", inc)
        .add_function("enrich", Flaky(failures=99), retries=1, backoff=0.01, on_error="skip")
        .add_function("after_enrich", inc)
        .add_function("plain", inc)
        .connect("src", "enrich", "after_enrich")
        .connect("src", "plain")
    )
    result = f.run(1, on_event=show_event)
    print(f"   outputs={result.outputs}")
    for name, t in result.nodes.items():
        print(f"   {name:<12} {t.status:<9} attempts={t.attempts} error={t.error}")

    print("\n3. on_error='fail' (the default)")
    f = (
        Formation("fail")
        .add_function("first", inc)
        .add_function("second", inc)
        .add_function("flaky", Flaky(failures=99), retries=2, backoff=0.01)
        .add_function("last", inc)
        .connect("first", "second", "flaky", "last")
    )
    try:
        f.run(1)
    except FormationRuntimeError as exc:
        print(f"   {type(exc).__name__}: {exc}")
        print(f"   node={exc.node!r} attempts={exc.attempts} run_id={exc.run_id!r}")
        print(f"   partial outputs={exc.outputs}")
        print(f"   cause={exc.__cause__!r}")

    print("\n4. a per-attempt timeout")
    calls = []

    def slow_once(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            time.sleep(0.3)  # the first attempt hangs past the 0.05 s timeout
        return x * 2

    f = Formation("timeout").add_function("slow", slow_once, timeout=0.05, retries=1, backoff=0.01)
    with f.start(on_event=show_event) as running:
        t0 = time.perf_counter()
        result = running.submit(21).result()
        elapsed = time.perf_counter() - t0
    print(f"   output={result.output} after {result.nodes['slow'].attempts} attempts in {elapsed:.2f}s: "
          "the retry ran on a fresh actor without waiting for the hung attempt")

    f = Formation("timeout").add_function("slow", lambda x: time.sleep(0.2) or x, timeout=0.05)
    try:
        f.run(1)
    except FormationRuntimeError as exc:
        print(f"   without retries: {exc}")

    print("\n5. retry_on and an error edge")

    def lookup(key: str) -> str:
        raise KeyError(key)  # not a ConnectionError: not retried

    def default(failure: NodeFailure) -> str:
        return f"default for {failure.input!r} ({type(failure.error).__name__} after {failure.attempts} attempt)"

    f = (
        Formation("fallback")
        .add_function("lookup", lookup, retries=3, backoff=0.01, retry_on=ConnectionError)
        .add_function("shout", str.upper)
        .add_function("default", default)
        .connect("lookup", "shout")
        .connect("lookup", "default", on_error=True)
    )
    result = f.run("colour", on_event=show_event)
    print(f"   status={result.status} outputs={result.outputs}")
    for name, t in result.nodes.items():
        print(f"   {name:<8} {t.status:<9} attempts={t.attempts} error={t.error}")


if __name__ == "__main__":
    main()
