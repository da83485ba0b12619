"""Breakpoints: ``run(..., break_before=[...], break_after=[...], store=...)`` suspends a
journalled run before or after a node's visits, as ``interrupt()`` would.

The run stops with ``status == "suspended"`` and ``interrupt == {"node": n, "payload":
{"breakpoint": "before", "input": value}}`` (before the visit runs: the input it would
get) or ``{"breakpoint": "after", "output": value}`` (after it finished and was
journalled, before its output moves on). ``Formation.resume`` continues it:

* the visit it stopped at does not stop again (a "before" stop runs that visit; an
  "after" stop sends its journalled output on);
* every other visit of a breakpoint's node stops, later ones of the same node (a loop)
  included, and so do the other breakpoints;
* breakpoints reached while the run is already stopping (parallel branches) are not
  lost: a "before" one is not journalled, so the resume stops there; an "after" one's
  visit is journalled and not routed on, and the resume stops after it (:func:`owed_after`)
  before sending its output on;
* the run keeps its breakpoints across resumes (they are journalled with it); a resume
  given ``break_before``/``break_after`` replaces them (``[]`` clears them).

An answer given to a breakpoint's resume is recorded and ignored: a breakpoint asks
nothing. Breakpoints name the run's own nodes (not the nodes inside a nested formation).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from ..errors import FormationSetupError

if TYPE_CHECKING:
    from ..store import RunJournal

__all__ = ["JOURNAL_KEY", "Breakpoints", "is_breakpoint", "owed_after", "passed"]

JOURNAL_KEY = ("", 0, None)
"""Where a run's breakpoints are journalled: a progress value of no node (``""``), visit 0
(``RunJournal.notes[0]``)."""


class Breakpoints:
    """The breakpoints of one run: node names to stop ``before`` and ``after``."""

    __slots__ = ("after", "before")

    def __init__(self, before: frozenset[str], after: frozenset[str]) -> None:
        self.before = before
        self.after = after

    @classmethod
    def of(cls, plan_name: str, nodes: Collection[str], before: Collection[str] | None,
           after: Collection[str] | None, journalled: bool) -> Breakpoints | None:
        """Checked breakpoints (None when there are none).

        Raises:
            FormationSetupError: a name is not a node of the formation, or the run has no
                store to suspend into (its message blames the option, not the formation).
        """
        problems = []
        wrong: list[str] = []  # the options at fault: the formation itself is fine
        names: dict[str, frozenset[str]] = {}
        for option, given in (("break_before", before), ("break_after", after)):
            if given is None:
                names[option] = frozenset()
                continue
            if isinstance(given, str) or not all(isinstance(n, str) for n in given):
                problems.append(f"{option} must be a list of node names, e.g. {option}=['review'], got {given!r}")
                wrong.append(option)
                continue
            unknown = [n for n in given if n not in nodes]
            inside = [n for n in unknown if n.split("/", 1)[0] in nodes and "/" in n]
            for name in inside:  # a path into a nested formation, as its events name it
                outer, inner = name.split("/", 1)[0], name.rsplit("/", 1)[1]
                problems.append(
                    f"{option}: {name!r} is inside the nested formation {outer!r}, and breakpoints name this "
                    f"formation's own nodes: stop at the nested node as a whole ({option}=[{outer!r}]), or run "
                    f"the inner formation on its own with {option}=[{inner!r}]")
            unknown = [n for n in unknown if n not in inside]
            if unknown:
                problems.append(f"{option}: no node named {', '.join(map(repr, unknown))}; "
                                f"the nodes are {', '.join(map(repr, nodes))}")
            if unknown or inside:
                wrong.append(option)
            names[option] = frozenset(given)
        if problems:
            options = ", ".join(f"{o}=" for o in wrong)
            heading = (f"breakpoint option{'s' if len(wrong) > 1 else ''} {options} "
                       f"{'are' if len(wrong) > 1 else 'is'} wrong for formation {plan_name!r}")
            raise FormationSetupError(plan_name, problems, heading)
        if not names["break_before"] and not names["break_after"]:
            return None
        if not journalled:
            raise FormationSetupError(plan_name, [
                "break_before/break_after suspend the run like interrupt(), which needs a journalled run: "
                "give it a store, e.g. formation.run(input, break_before=[...], store='runs.sqlite')"],
                f"breakpoints need a store on this run of formation {plan_name!r}")
        return cls(names["break_before"], names["break_after"])

    def to_json(self) -> dict[str, list[str]]:
        return {"break_before": sorted(self.before), "break_after": sorted(self.after)}

    @classmethod
    def journalled(cls, journal: RunJournal) -> Breakpoints | None:
        """The breakpoints a run was given, as journalled (None when it had none)."""
        values = journal.notes.get(JOURNAL_KEY[1])
        if not values:
            return None
        last = values[-1]
        before, after = frozenset(last.get("break_before", ())), frozenset(last.get("break_after", ()))
        return cls(before, after) if before or after else None


def is_breakpoint(payload: Any) -> bool:
    """Whether an interrupt's payload is a breakpoint's."""
    return (type(payload) is dict and len(payload) == 2 and payload.get("breakpoint") in ("before", "after")
            and ("input" in payload or "output" in payload))


def passed(journal: RunJournal, node: str, visit: int) -> bool:
    """Whether the run stopped before this visit already (it runs now, without stopping)."""
    return any(i.node == node and i.visit == visit and i.item is None and is_breakpoint(i.payload)
               and i.payload["breakpoint"] == "before" for i in journal.interrupts)


def owed_after(journal: RunJournal, node: str, visit: int) -> bool:
    """Whether a journalled visit of ``node`` still owes its "after" stop: the run had a
    ``break_after`` on the node when it was journalled, and never stopped after that visit
    (it finished while the run was stopping at another breakpoint or interrupt). Breakpoints
    a resume adds do not stop visits journalled before it, nor do a fork's reused visits."""
    given = Breakpoints.journalled(journal)
    if given is None or node not in given.after:
        return False
    return not any(i.node == node and i.visit == visit and i.item is None and is_breakpoint(i.payload)
                   and i.payload["breakpoint"] == "after" for i in journal.interrupts)
