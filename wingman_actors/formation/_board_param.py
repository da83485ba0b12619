"""The ``blackboard`` parameter of a function (or map) node: found, checked and set aside.

A function node, or a map node's function, that declares a parameter named ``blackboard``
receives the run's :class:`~wingman_actors.orchestration.Blackboard` through it
(``Formation.start(blackboard=...)``, ``run(..., blackboard=...)`` or ``submit(...,
blackboard=...)``). The parameter is not an input: it takes no part in fan-in keyword
matching or input type checks (a map's function gets it beside each item), so the plan
compiles the function as if it were not there.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Literal

from ..errors import FormationSetupError
from ..orchestration._blackboard import Blackboard
from ._typecheck import CallableInfo, compatible, type_name

if TYPE_CHECKING:
    from ._plan import Plan

__all__ = ["BOARD_PARAM", "BoardNeed", "board_needed", "board_param", "check_board", "require_no_board"]

BOARD_PARAM = "blackboard"
"""The parameter name that asks for the run's blackboard."""

BoardNeed = Literal["none", "required", "optional"]
"""Whether a node function takes the board: not at all, without a default (a run must
have a board), or with a default (kept when the run has none)."""

_P = inspect.Parameter


def board_param(
    node: str, fn: Any, info: CallableInfo, preds: list[str], kind: str = "function"
) -> tuple[CallableInfo, BoardNeed, list[str]]:
    """Split the ``blackboard`` parameter off a node function's signature.

    ``kind`` is the node's (``function`` or ``map``: a map's function takes the board beside
    each item).

    Returns:
        The signature info without that parameter (what inputs are matched against), whether
        the function needs a board, and the problems with how the parameter is declared.
    """
    sig = info.signature
    param = None if sig is None else sig.parameters.get(BOARD_PARAM)
    if sig is None or param is None or param.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
        return info, "none", []
    where = f"{kind} node {node!r}: parameter {BOARD_PARAM!r} of {info.describe(fn)}"
    problems: list[str] = []
    positional = [p for p in sig.parameters.values() if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    if param.kind is _P.POSITIONAL_ONLY or (positional and positional[0] is param):
        problems.append(
            f"{where} receives the run's Blackboard by keyword, so it cannot be positional-only or the first "
            f"parameter (which receives the input); put it after the input, or make it keyword-only: "
            f"`def {getattr(fn, '__name__', 'fn')}(x, *, blackboard: Blackboard)`"
        )
    hint = info.annotation(param)
    from ..orchestration._blackboard import Blackboard  # loads with the first node that takes a board

    if not compatible(Blackboard, hint):
        problems.append(
            f"{where} receives the run's Blackboard but is annotated {type_name(hint)}; annotate it "
            "`blackboard: Blackboard` (or `Blackboard | None = None` to run without a board)"
        )
    if BOARD_PARAM in preds:
        problems.append(
            f"function node {node!r} has a predecessor named {BOARD_PARAM!r} and a {BOARD_PARAM!r} parameter "
            "(which receives the run's Blackboard); rename that node"
        )
    rest = [p for p in sig.parameters.values() if p is not param]
    hints = None if info.hints is None else {k: v for k, v in info.hints.items() if k != BOARD_PARAM}
    stripped = CallableInfo(sig.replace(parameters=rest), hints, info.returns)
    return stripped, "required" if param.default is param.empty else "optional", problems


def check_board(board: Any) -> Blackboard | None:
    if board is not None and not isinstance(board, Blackboard):
        raise TypeError(
            f"blackboard must be a wingman_actors.orchestration.Blackboard, got {type(board).__name__}"
        )
    return board


def board_needed(plan: Plan) -> tuple[str, ...]:
    """The nodes of ``plan`` that take a ``blackboard`` parameter without a default (or hold one)."""
    return tuple(n for n, spec in plan.nodes.items() if spec.blackboard == "required")


def require_no_board(plan: Plan, needy: tuple[str, ...] | None = None) -> None:
    if needy is None:
        needy = board_needed(plan)
    if needy:
        raise FormationSetupError(plan.name, [
            f"{plan.nodes[n].kind} node {n!r} takes a 'blackboard' parameter without a default, but no blackboard "
            "was given; pass one (Formation.run(..., blackboard=Blackboard()), Formation.start(blackboard=...) "
            "or submit(..., blackboard=...)), or give the parameter a default "
            "(`blackboard: Blackboard | None = None`)"
            for n in needy
        ])
