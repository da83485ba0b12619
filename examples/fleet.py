"""Fleet: one agent over many tasks, each in its own fresh session, at most
``max_workers`` at once. Tasks carry their own instructions and ``data`` (handed back on
the result). ``run()`` returns results in task order; ``run_stream()`` yields them as
tasks finish. A failing task never disturbs the others: it yields a ``FleetResult`` with
``error`` set.

The scripted model is a callable: it answers from the request (instructions and message),
sleeps a little to simulate work, and raises ``AgentError`` for one message.

Run it with::

    python examples/fleet.py
"""

from __future__ import annotations

import threading
import time

from wingman_actors import Agent, Fleet, Task
from wingman_actors.core import InferenceRequest
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider

CITIES = {"Lima": 0.12, "Oslo": 0.02, "Accra": 0.08, "Atlantis": 0.01, "Hanoi": 0.04}

running = 0
peak = 0
lock = threading.Lock()


def model(request: InferenceRequest) -> str:
    """A fake model: 'work' for a while, then answer in the style the instructions ask for."""
    global running, peak
    city = request.messages[-1].text.removeprefix("Describe ").rstrip(".")
    with lock:
        running += 1
        peak = max(peak, running)
    try:
        time.sleep(CITIES[city])
        if city == "Atlantis":
            raise AgentError(f"no data about {city}", kind=ErrorKind.INVALID, provider="scripted")
        style = "SHOUTING" if "shout" in request.instructions else "calm"
        text = f"{city} is a fine city."
        return text.upper() if style == "SHOUTING" else text
    finally:
        with lock:
            running -= 1


def main() -> None:
    agent = Agent("guide", instructions="Describe the city in one sentence.",
                  provider=ScriptedProvider([model], cycle=True))
    tasks = [
        Task(f"Describe {city}.", data={"city": city, "n": i},
             instructions="Describe the city; shout." if city == "Oslo" else None)
        for i, city in enumerate(CITIES)
    ]
    fleet = Fleet(agent, tasks, max_workers=2)
    print(fleet)

    print("\nrun(): results in task order")
    t0 = time.perf_counter()
    for r in fleet.run():
        outcome = r.response if r.ok else f"ERROR {type(r.error).__name__}: {r.error}"
        print(f"  #{r.task_index} {r.worker_name:<8} data={r.data}  {outcome}")
    print(f"  (took {time.perf_counter() - t0:.2f}s; at most {peak} sessions ran at once)")

    print("\nrun_stream(): results as tasks finish (completion order)")
    order = []
    for r in Fleet(agent, tasks, max_workers=2).run_stream():
        order.append(r.data["city"])
        print(f"  finished #{r.task_index} {r.data['city']:<9} ok={r.ok}  ({r.duration_s * 1000:.0f} ms)")
    print(f"  completion order: {order}")
    print(f"  task order:       {list(CITIES)}")


if __name__ == "__main__":
    main()
