"""Routing and loops.

1. Conditional edges: ``connect(a, b, when=predicate)`` carries a's output only when the
   predicate on it is true. The branch not taken is skipped, and so is whatever depends
   only on it (see the node statuses).
2. A bounded loop: draft → review → back to draft until the review approves. The round
   counter travels in the payload; the back edge carries a ``when=``, so the cycle can end.
3. A loop that never ends fails once a node is visited more than its ``max_visits``
   (default 10): ``FormationRuntimeError`` naming the node.

Run it with::

    python examples/routing_and_loops.py
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError

# -- 1. conditional routing ---------------------------------------------------------------


class Ticket(BaseModel):
    subject: str
    priority: int


def is_urgent(t: Ticket) -> bool:
    return t.priority >= 8


def is_routine(t: Ticket) -> bool:
    return t.priority < 8


def triage(raw: dict[str, Any]) -> Ticket:
    return Ticket.model_validate(raw)


def routing() -> Formation:
    return (
        Formation("triage")
        .add_function("triage", triage)
        .add_function("page_oncall", lambda t: f"paged on-call about {t.subject!r}")
        .add_function("queue", lambda t: f"queued {t.subject!r}")
        .add_function("ack", lambda text: text + " and sent an acknowledgement")
        .connect("triage", "page_oncall", when=is_urgent)
        .connect("triage", "queue", when=is_routine)
        .connect("queue", "ack")
    )


# -- 2. a bounded loop --------------------------------------------------------------------


class Draft(BaseModel):
    topic: str
    round: int = 0
    text: str = ""
    approved: bool = False


def start(topic: str) -> Draft:
    return Draft(topic=topic)


def write(d: Draft) -> Draft:
    n = d.round + 1
    return d.model_copy(update={"round": n, "text": f"{d.topic}, draft {n}" + "!" * n})


def review(d: Draft) -> Draft:
    return d.model_copy(update={"approved": d.text.count("!") >= 3})  # happy from the third draft on


def needs_work(d: Draft) -> bool:
    return not d.approved


def approved(d: Draft) -> bool:
    return d.approved


def publish(d: Draft) -> str:
    return f"published {d.text!r} after {d.round} round(s)"


def loop(review_fn: Callable[[Draft], Draft] = review, max_visits: int = 10) -> Formation:
    return (
        Formation("editing")
        .add_function("start", start)
        .add_function("draft", write, max_visits=max_visits)
        .add_function("review", review_fn)
        .add_function("publish", publish)
        .connect("start", "draft", "review")
        .connect("review", "draft", when=needs_work)  # the back edge closes the loop
        .connect("review", "publish", when=approved)
    )


def never_satisfied(d: Draft) -> Draft:
    return d.model_copy(update={"approved": False})


def main() -> None:
    print("1. conditional edges")
    for ticket in ({"subject": "site down", "priority": 9}, {"subject": "typo on /about", "priority": 2}):
        result = routing().run(ticket)
        print(f"   {ticket['subject']!r}: outputs={result.outputs}")
        print("     statuses:", {n: str(t.status) for n, t in result.nodes.items()})

    print("\n2. a bounded loop")
    f = loop()
    print("   " + f.to_mermaid().replace("\n", "\n   "))
    result = f.run("Why owls hoot")
    print(f"   {result.output}")
    print("   visits:", {n: t.visits for n, t in result.nodes.items()})

    print("\n3. a loop that does not end: max_visits=4 on 'draft'")
    try:
        loop(never_satisfied, max_visits=4).run("An endless essay")
    except FormationRuntimeError as exc:
        print(f"   FormationRuntimeError (node={exc.node!r}, run_id={exc.run_id!r}):\n   {exc}")
        last = exc.outputs.get("review")
        print(f"   last review before giving up: round {last.round if last else '?'}")


if __name__ == "__main__":
    main()
