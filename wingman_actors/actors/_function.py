"""A pure Python function as a node actor."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..core import Usage
from ..errors import PayloadError
from ..orchestration._blackboard import current_blackboard
from ._base import NodeActor
from ._envelope import Work
from ._payloads import isolate

__all__ = ["FunctionActor"]

_NO_BOARD: dict[str, Any] = {}  # never written: the keywords of a call without the board


class FunctionActor(NodeActor):
    """A pure Python function as an actor.

    Args:
        fn: the function.
        mode: ``single`` (``fn(payload)``), ``dict`` (``fn({pred: value})``) or ``kwargs``
            (``fn(**{pred: value})``).
        input_adapter: validates the payload in ``single``/``dict`` mode (None: no check).
        kwarg_adapters: validates each keyword argument in ``kwargs`` mode.
        board_param: ``required`` or ``optional`` when ``fn`` takes the run's blackboard
            as its ``blackboard`` keyword (optional: not passed when there is no board, so
            its default applies); ``none`` otherwise.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        mode: str = "single",
        input_adapter: TypeAdapter[Any] | None = None,
        kwarg_adapters: Mapping[str, TypeAdapter[Any] | None] | None = None,
        board_param: str = "none",
        **kwargs: Any,
    ) -> None:
        super().__init__(name or str(getattr(fn, "__name__", "function")), **kwargs)
        self.fn = fn
        self.mode = mode
        self.input_adapter = input_adapter
        self.kwarg_adapters = dict(kwarg_adapters or {})
        self.board_param = board_param
        self._fast_type = _plain_class(input_adapter)
        self._required: frozenset[str] = frozenset()
        if mode == "kwargs":
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):
                params = ()  # type: ignore[assignment]
            self._required = frozenset(
                p.name for p in params
                if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and not (p.name == "blackboard" and board_param != "none")
            )

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        payload = isolate(env.payload)  # the function may change it: a copy of its own
        board = _NO_BOARD
        if self.board_param != "none":
            found = current_blackboard()  # the run's board, made active by handle_work
            if found is not None:
                board = {"blackboard": found}
            elif self.board_param == "required":
                raise PayloadError(
                    f"function node {self.name!r} takes a 'blackboard' parameter but no blackboard was "
                    "shared; pass blackboard=Blackboard() (to the formation, or to the actor), or give the "
                    "parameter a default"
                )
        if self.mode == "kwargs":
            args = dict(payload)
            missing = self._required - args.keys()
            if missing:
                raise PayloadError(
                    f"node {self.name!r} got no value for parameter(s) {', '.join(sorted(missing))}: "
                    "their predecessors were skipped (a when= condition did not fire, or on_error='skip'); "
                    "give those parameters defaults, e.g. `x: int | None = None`, to accept a partial fan-in"
                )
            for key, adapter in self.kwarg_adapters.items():
                if adapter is not None and key in args:
                    args[key] = self._check(adapter, args[key], f"edge {key!r} → {self.name!r}", key)
            return self.fn(**args, **board), None
        adapter = self.input_adapter
        if adapter is not None and type(payload) is not self._fast_type:
            payload = self._check(adapter, payload, f"edge {env.sender!r} → {self.name!r}", None)
        return self.fn(payload, **board), None

    def _check(self, adapter: TypeAdapter[Any], value: Any, edge: str, param: str | None) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            what = f"parameter {param!r}" if param else "its input parameter"
            raise PayloadError(
                f"{edge}: a {type(value).__name__} does not fit {what} of type "
                f"{_type_name(adapter)}: {_problems(exc)}"
            ) from exc


def _problems(exc: ValidationError) -> str:
    """The first five problems pydantic found, ``loc: message`` each."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5])


def _plain_class(adapter: TypeAdapter[Any] | None) -> type | None:
    """The annotation when it is a plain class whose exact instances pydantic passes
    through unchanged (int, str, a BaseModel subclass...): a payload of exactly that class
    needs no validation. None for generics, unions and the like."""
    core = getattr(adapter, "_type", None)
    if core in (int, float, str, bytes, dict, list):  # bare dict/list: pydantic would only copy it
        return core  # type: ignore[no-any-return]
    if (
        isinstance(core, type)
        and issubclass(core, BaseModel)
        and core.model_config.get("revalidate_instances", "never") == "never"
    ):
        return core
    return None


def _type_name(adapter: TypeAdapter[Any]) -> str:
    core = getattr(adapter, "_type", None)
    return getattr(core, "__name__", None) or str(core)
