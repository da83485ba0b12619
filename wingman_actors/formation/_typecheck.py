"""Static type compatibility between nodes, and the signatures of node functions.

The check is conservative: it answers ``False`` only when the declared types clearly
disagree (``str`` into an ``int`` parameter) and ``True`` whenever it cannot tell, so a
formation is never refused for a type the checker does not understand. Pydantic still
validates every payload at run time.

Example:
    >>> from collections.abc import Sequence
    >>> compatible(list[int], Sequence[float])
    True
    >>> compatible(str, int)
    False
"""

from __future__ import annotations

import collections
import collections.abc as cabc
import functools
import inspect
import logging
import types
import typing
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import typing_extensions
from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError

from ._failure import NodeFailure

log = logging.getLogger(__name__)

__all__ = [
    "CallableInfo",
    "adapter_for",
    "shared_adapters",
    "compatible",
    "edge_type_problem",
    "inspect_callable",
    "warn_unresolved",
    "is_sequence",
    "guard_type",
    "when_types",
    "item_type",
    "narrow",
    "prompt_fields",
    "type_name",
]

_UNIONS = (Union, types.UnionType)
_CALLABLE: Any = cabc.Callable
_NUMERIC: dict[type, tuple[type, ...]] = {int: (float, complex), float: (complex,)}
# Abstract types a list or a tuple may be declared as: a fleet can take them (unsure, allowed).
_ABSTRACT_SEQUENCES = (cabc.Sequence, cabc.MutableSequence, cabc.Iterable, cabc.Collection, cabc.Reversible)


def _is_unknown(tp: Any) -> bool:
    return tp is None or tp is Any or tp is object or isinstance(tp, TypeVar | typing.ForwardRef | str)


def _strip(tp: Any) -> Any:
    """``Annotated[X, ...]`` → ``X``; ``NewType`` → its supertype."""
    while True:
        if get_origin(tp) is typing.Annotated:
            tp = get_args(tp)[0]
        elif isinstance(tp, typing.NewType):
            tp = tp.__supertype__
        else:
            return tp


def _split(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """A type's runtime class (the origin of a generic alias) and its arguments."""
    origin = get_origin(tp)
    if origin is None:
        return tp, ()
    return origin, get_args(tp)


def _issubclass(src: Any, dst: Any) -> bool | None:
    try:
        return issubclass(src, dst)
    except TypeError:  # protocols, TypedDicts and other classes that refuse the check
        return None


def compatible(src: Any, dst: Any) -> bool:
    """Whether a value declared as ``src`` may be passed where ``dst`` is declared.

    ``True`` when either side is unknown (``None``, ``Any``, a type variable, an unresolved
    name) or when the checker cannot tell; ``False`` only for a clear mismatch.

    Args:
        src: the upstream's declared output type.
        dst: the downstream parameter's declared type.

    Returns:
        False when the declared types clearly disagree, else True.
    """
    src, dst = _strip(src), _strip(dst)
    if _is_unknown(src) or _is_unknown(dst) or src is typing.NoReturn or src is typing.Never:
        return True
    if get_origin(src) in _UNIONS:
        return all(compatible(member, dst) for member in get_args(src))
    if get_origin(dst) in _UNIONS:
        return any(compatible(src, member) for member in get_args(dst))
    if get_origin(src) is Literal:
        return all(_literal_fits(value, dst) for value in get_args(src))
    if get_origin(dst) is Literal:
        return any(compatible(src, type(value)) for value in get_args(dst))
    if typing_extensions.is_typeddict(dst):
        return _into_typeddict(src, dst)
    s_cls, s_args = _split(src)
    d_cls, d_args = _split(dst)
    if not isinstance(s_cls, type) or not isinstance(d_cls, type):
        return True  # Callable[...] specials, ParamSpec and friends: cannot tell
    if issubclass(d_cls, BaseModel) and not issubclass(s_cls, BaseModel):
        # pydantic builds the model from a mapping at run time
        return bool(_issubclass(s_cls, cabc.Mapping)) or s_cls is dict
    if any(issubclass(s_cls, num) and d_cls in wider for num, wider in _NUMERIC.items()):
        return True
    sub = _issubclass(s_cls, d_cls)
    if sub is None:
        return True
    if not sub:
        return False
    return _args_compatible(s_cls, s_args, d_cls, d_args)


_OPTIONAL_KEY = {typing_extensions.NotRequired, getattr(typing, "NotRequired", typing_extensions.NotRequired)}


def _keys(td: Any) -> tuple[dict[str, Any], set[str]] | None:
    """A TypedDict's keys with their types, and its required keys; None when its
    annotations cannot be resolved. ``NotRequired`` is read from the annotations too:
    with ``from __future__ import annotations`` Python < 3.14 counts such a key required."""
    try:
        hints = typing_extensions.get_type_hints(td, include_extras=True)
    except Exception:
        return None
    optional = set(getattr(td, "__optional_keys__", ()))
    optional |= {key for key, tp in hints.items() if get_origin(tp) in _OPTIONAL_KEY}
    return {key: _strip_key(tp) for key, tp in hints.items()}, set(hints) - optional


def _strip_key(tp: Any) -> Any:
    while get_origin(tp) in _OPTIONAL_KEY | {typing_extensions.Required, getattr(typing, "Required", None)}:
        tp = get_args(tp)[0]
    return tp


def _into_typeddict(src: Any, dst: Any) -> bool:
    """Whether ``src`` may feed a TypedDict parameter: a mapping may (its keys are not
    known), a model or any other non-mapping class may not (pydantic refuses it), and
    another TypedDict must have each key ``dst`` requires, with a compatible type."""
    s_cls, _ = _split(src)
    if not isinstance(s_cls, type):
        return True
    if not typing_extensions.is_typeddict(src):
        return s_cls is dict or bool(_issubclass(s_cls, cabc.Mapping))
    have, want = _keys(src), _keys(dst)
    if have is None or want is None:
        return True
    if any(key not in have[0] for key in want[1]):
        return False
    return all(compatible(have[0][key], tp) for key, tp in want[0].items() if key in have[0])


def _literal_fits(value: Any, dst: Any) -> bool:
    if get_origin(dst) is Literal:
        return value in get_args(dst)
    return compatible(type(value), dst)


def _args_compatible(s_cls: type, s_args: tuple[Any, ...], d_cls: type, d_args: tuple[Any, ...]) -> bool:
    if not s_args or not d_args or d_cls is _CALLABLE:
        return True
    if issubclass(s_cls, collections.Counter) and len(s_args) == 1:
        s_args = (s_args[0], int)  # Counter[K] is a dict[K, int]
    if issubclass(d_cls, tuple) and issubclass(s_cls, tuple):
        return _tuple_compatible(s_args, d_args)
    if issubclass(d_cls, cabc.Mapping) and len(d_args) == 2 and len(s_args) == 2:
        return compatible(s_args[0], d_args[0]) and compatible(s_args[1], d_args[1])
    if len(d_args) == 1:
        if issubclass(s_cls, tuple):
            items = s_args[:1] if len(s_args) == 2 and s_args[1] is Ellipsis else s_args
            return all(compatible(item, d_args[0]) for item in items if item is not Ellipsis)
        if len(s_args) == 2 and issubclass(s_cls, cabc.Mapping):
            return compatible(s_args[0], d_args[0])  # iterating a mapping gives its keys
        if issubclass(s_cls, cabc.Iterator | cabc.AsyncIterator):
            return compatible(s_args[0], d_args[0])  # a generator's first argument is what it yields
        return len(s_args) != 1 or compatible(s_args[0], d_args[0])
    if len(s_args) == len(d_args) and Ellipsis not in s_args + d_args:
        return all(compatible(s, d) for s, d in zip(s_args, d_args, strict=True))
    return True


def _tuple_compatible(s_args: tuple[Any, ...], d_args: tuple[Any, ...]) -> bool:
    s_var = len(s_args) == 2 and s_args[1] is Ellipsis
    d_var = len(d_args) == 2 and d_args[1] is Ellipsis
    if d_var:
        return all(compatible(s, d_args[0]) for s in s_args if s is not Ellipsis)
    if s_var:
        return True  # a tuple of any length may or may not have the expected length
    if len(s_args) != len(d_args):
        return False
    return all(compatible(s, d) for s, d in zip(s_args, d_args, strict=True))


_GUARDS = {typing.TypeGuard, typing_extensions.TypeGuard, typing_extensions.TypeIs}
if hasattr(typing, "TypeIs"):  # Python 3.13+
    _GUARDS.add(typing.TypeIs)


def when_types(when: Any) -> tuple[Any, ...] | None:
    """The classes a ``when=`` type condition lets through (``isinstance(output, ...)``):
    ``when=int`` gives ``(int,)``, a tuple itself, a union (``int | str``,
    ``Optional[int]``) its members; None for a predicate (or no condition). The members
    are as given: validation checks that they are classes."""
    if isinstance(when, type):
        return (when,)
    if isinstance(when, tuple):
        return when
    if get_origin(when) in (Union, types.UnionType):
        return get_args(when)
    return None


def guard_type(when: Any) -> Any:
    """The type a ``when=`` condition lets through, or None when it does not say.

    ``when=int`` → ``int``; ``when=(int, str)`` or ``when=int | str`` → ``int | str``; a predicate annotated
    ``-> TypeGuard[T]`` or ``-> TypeIs[T]`` → ``T``.
    """
    if isinstance(when, type):
        return when
    if (classes := when_types(when)) is not None:  # a tuple or a union of types
        return Union[classes] if classes and all(isinstance(t, type) for t in classes) else None
    if callable(when):
        returns = inspect_callable(when).returns
        if get_origin(returns) in _GUARDS:
            return get_args(returns)[0]
    return None


def _members(tp: Any) -> tuple[Any, ...]:
    tp = _strip(tp)
    return get_args(tp) if get_origin(tp) in _UNIONS else (tp,)


def _within(member: Any, guard: Any) -> bool | None:
    """Whether every value of ``member`` passes ``guard`` (True), none does (False), or
    some may (None)."""
    m_cls, _ = _split(_strip(member))
    if member is None or member is type(None):
        m_cls = type(None)
    answers = set()
    for g in _members(guard):
        g_cls, _ = _split(_strip(g))
        if g is None:
            g_cls = type(None)
        if not isinstance(m_cls, type) or not isinstance(g_cls, type):
            return None
        if _issubclass(m_cls, g_cls):
            return True
        answers.add(None if _issubclass(g_cls, m_cls) is not False else False)
    return None if None in answers else False


def disjoint(src: Any, guard: Any) -> bool:
    """Whether no value of type ``src`` can pass a condition letting ``guard`` through
    (``disjoint(str, int)``); False whenever the checker cannot tell."""
    if _is_unknown(_strip(src)):
        return False
    return all(_within(m, guard) is False for m in _members(src))


def narrow(src: Any, guard: Any) -> Any:
    """The type of the values of type ``src`` that pass a condition letting ``guard``
    through: ``narrow(str | int, int)`` → ``int``; the guard itself when ``src`` is
    unknown or the checker cannot tell."""
    if _is_unknown(_strip(src)):
        return guard
    kept = [m for m in _members(src) if _within(m, guard)]
    if kept:
        return kept[0] if len(kept) == 1 else Union[tuple(kept)]
    return guard


def exclude(src: Any, guards: list[Any]) -> Any:
    """The type of the values of type ``src`` that pass none of ``guards`` (an
    ``otherwise`` edge beside type conditions): ``exclude(str | int | None, [str])`` →
    ``int | None``; ``src`` when the checker cannot tell."""
    if _is_unknown(_strip(src)):
        return src
    kept = [m for m in _members(src) if not any(_within(m, g) for g in guards)]
    if not kept:
        return src
    return kept[0] if len(kept) == 1 else Union[tuple(kept)]


def is_sequence(tp: Any) -> bool:
    """Whether a value of type ``tp`` may be a list or a tuple (what a fleet node needs).

    Unknown types count as sequences; ``str``, ``dict``, sets and models do not. For a
    union, every member must be a sequence (``list[str] | None`` is not).
    """
    tp = _strip(tp)
    if _is_unknown(tp) or tp is typing.NoReturn or tp is typing.Never:
        return True
    if get_origin(tp) in _UNIONS:
        return all(is_sequence(member) for member in get_args(tp))
    cls, _ = _split(tp)
    if not isinstance(cls, type):
        return True
    return issubclass(cls, list | tuple) or cls in _ABSTRACT_SEQUENCES


def item_type(tp: Any) -> Any:
    """The item type of a sequence type (``list[X]`` → ``X``), or None when unknown."""
    cls, args = _split(_strip(tp))
    if isinstance(cls, type) and issubclass(cls, tuple) and args and (len(args) == 1 or args[1] is Ellipsis):
        return args[0]
    return args[0] if len(args) == 1 else None


def prompt_fields(tp: Any) -> dict[str, Any] | None:
    """The fields a prompt template may use for an input of type ``tp``, with their types
    (None where unknown): a model's fields or a TypedDict's keys; an empty dict for inputs
    without keys (text, numbers, lists); None when unknown or a free-form mapping (no check)."""
    tp = _strip(tp)
    cls = get_origin(tp) or tp
    if tp is None or not isinstance(cls, type):
        return None
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {name: field.annotation for name, field in tp.model_fields.items()}
    if typing.is_typeddict(tp):
        try:
            return dict(typing.get_type_hints(tp))
        except Exception:
            return dict.fromkeys(tp.__annotations__)
    return None if issubclass(cls, cabc.Mapping) else {}


def type_name(tp: Any) -> str:
    """A short, readable name for a type: ``list[Verdict]``, ``int | None``, ``Any``."""
    tp = _strip(tp)
    if tp is None:
        return "unknown"
    if tp is type(None):
        return "None"
    if tp is Any:
        return "Any"
    if tp is Ellipsis:
        return "..."
    if isinstance(tp, list):
        return "[" + ", ".join(type_name(t) for t in tp) + "]"
    origin = get_origin(tp)
    if origin in _UNIONS:
        return " | ".join(type_name(t) for t in get_args(tp))
    if origin is Literal:
        return f"Literal[{', '.join(repr(v) for v in get_args(tp))}]"
    if origin is not None:
        name = getattr(origin, "__name__", None) or repr(origin).replace("typing.", "")
        return f"{name}[{', '.join(type_name(t) for t in get_args(tp))}]"
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def adapter_for(tp: Any) -> TypeAdapter[Any] | None:
    """A pydantic ``TypeAdapter`` validating values of ``tp``; None when ``tp`` is unknown
    (``None``, ``Any``, ``object``, a type variable) or pydantic cannot build one."""
    if _is_unknown(_strip(tp)):
        return None
    try:
        return TypeAdapter(tp)
    except PydanticSchemaGenerationError:
        pass  # an arbitrary class: fall back to an isinstance check
    except PydanticUserError as exc:
        if exc.code == "typed-dict-version":
            _warn_typed_dict(tp)
        return None
    except Exception:
        return None
    try:
        return TypeAdapter(tp, config=ConfigDict(arbitrary_types_allowed=True))
    except Exception:
        return None


_typed_dicts_warned: set[str] = set()  # the types (by repr) whose typing.TypedDict was logged


def _warn_typed_dict(tp: Any) -> None:
    """Log, once per type, that values of ``tp`` (which holds a ``typing.TypedDict``) go
    unchecked: pydantic validates one only from Python 3.12 (each run validates again)."""
    shown = type_name(tp)
    if shown in _typed_dicts_warned:
        return
    _typed_dicts_warned.add(shown)
    log.warning(
        "%s holds a typing.TypedDict, which pydantic validates only from Python 3.12, so values of it are neither "
        "checked nor converted at run time; use typing_extensions.TypedDict (the same class, and checked)", shown,
    )


def shared_adapters() -> Callable[[Any], TypeAdapter[Any] | None]:
    """:func:`adapter_for` for the nodes of one plan, building one adapter per type: nodes
    that take the same type share its (stateless) validator, and building one costs more
    than the rest of a node's plan (about 18 µs for ``int``). Made per plan, so a type
    whose annotations change between two validations gets a fresh adapter."""
    made: dict[Any, TypeAdapter[Any] | None] = {}

    def adapter(tp: Any) -> TypeAdapter[Any] | None:
        try:
            return made[tp]
        except KeyError:
            built = made[tp] = adapter_for(tp)
            return built
        except TypeError:  # an unhashable annotation (e.g. Annotated with a list in it)
            return adapter_for(tp)

    return adapter


@dataclass(frozen=True)
class CallableInfo:
    """What the formation needs to know about a node function.

    Attributes:
        signature: the call signature, or None when it cannot be read (some built-ins).
        hints: resolved annotations by parameter name (and ``"return"``), or None when
            they cannot be resolved (then every type is unknown).
        returns: the declared return type, None when unknown.
        unresolved: why the annotations could not be resolved (a name they use is not
            defined where the function was: e.g. a class defined inside another function,
            with ``from __future__ import annotations``), None when they were.
    """

    signature: inspect.Signature | None
    hints: Mapping[str, Any] | None
    returns: Any
    unresolved: str | None = None

    def accepts_one(self) -> bool:
        """Whether the function can be called with one positional argument (True if unknown)."""
        if self.signature is None:
            return True
        try:
            self.signature.bind(None)
        except TypeError:
            return False
        return True

    def params(self, *kinds: inspect._ParameterKind) -> list[inspect.Parameter]:
        """The parameters of the given kinds, in order (all parameters when none given)."""
        if self.signature is None:
            return []
        return [p for p in self.signature.parameters.values() if not kinds or p.kind in kinds]

    def annotation(self, param: inspect.Parameter | None) -> Any:
        """The resolved annotation of ``param``, None when unknown."""
        if param is None or self.hints is None:
            return None
        return self.hints.get(param.name)

    def describe(self, fn: Any) -> str:
        """``name(a: int, b=1)`` for messages, with resolved, short type names."""
        name = getattr(fn, "__name__", None) or type(fn).__name__
        if self.signature is None:
            return f"{name}(...)"
        params = [
            p.replace(annotation=_Shown(type_name(self.annotation(p))) if self.annotation(p) is not None else p.empty)
            for p in self.signature.parameters.values()
        ]
        return f"{name}{self.signature.replace(parameters=params, return_annotation=inspect.Signature.empty)}"


class _Shown:
    """An annotation that prints as the given text (``inspect`` formats it with ``repr``)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def inspect_callable(fn: Any) -> CallableInfo:
    """Read the signature and resolved type hints of ``fn``.

    Works for functions, methods, ``functools.partial`` objects, classes (whose return type
    is the class) and objects with ``__call__``. Hints are resolved with
    ``typing.get_type_hints(include_extras=True)``; when that fails, types are unknown.
    """
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    base = fn
    while isinstance(base, functools.partial):
        base = base.func
    target = base
    if isinstance(base, type):
        target = base.__init__  # type: ignore[misc]
    elif not inspect.isroutine(target):
        target = type(target).__call__  # an object with __call__
    unresolved = None
    try:
        hints: dict[str, Any] | None = typing.get_type_hints(target, include_extras=True)
    except NameError as exc:
        hints, unresolved = None, str(exc)
    except Exception:
        hints = None
    if hints is not None and signature is not None:
        # Synthesized signatures (pydantic models) carry real types that __init__ lacks.
        for p in signature.parameters.values():
            if p.name not in hints and p.annotation is not inspect.Parameter.empty:
                if not isinstance(p.annotation, str):
                    hints[p.name] = p.annotation
    returns = base if isinstance(base, type) else (hints or {}).get("return")
    return CallableInfo(signature, hints, returns, unresolved)


_warned: weakref.WeakSet[Any] = weakref.WeakSet()  # functions whose unresolvable annotations were logged


def warn_unresolved(formation: str, infos: Mapping[str, tuple[Any, CallableInfo]]) -> None:
    """Log, once per function, each node function whose annotations cannot be resolved
    (``infos``: node -> (function, its info)); its input is then neither checked nor
    converted, which the user should hear about (each run validates its formation again)."""
    for node, (fn, info) in infos.items():
        if info.unresolved is None:
            continue
        try:
            if fn in _warned:
                continue
            _warned.add(fn)
        except TypeError:  # an object that takes no weak reference: said every time
            pass
        log.warning(
            "formation %r, node %r: the type annotations of %s cannot be resolved (%s), so its input is neither "
            "checked nor converted; define the named type at module level (a class defined inside a function "
            "is not visible to a module with `from __future__ import annotations`), or annotate with Any",
            formation, node, getattr(fn, "__qualname__", repr(fn)), info.unresolved,
        )


def edge_type_problem(u: str, v: str, back: bool, src: Any, param: str | None, dst: Any) -> list[str]:
    """The problem of edge ``u`` → ``v`` (``back``: a back edge) carrying ``src`` into
    parameter ``param`` of type ``dst``, when they do not fit (none when they do)."""
    if compatible(src, dst):
        return []
    if src is NodeFailure:
        return [
            f"error edge {u!r} → {v!r}: {v!r} receives a NodeFailure when {u!r} fails, but its parameter "
            f"{param!r} expects {type_name(dst)}; annotate it as NodeFailure (from wingman_actors.formation "
            "import NodeFailure), or leave it unannotated"
        ]
    edge = f"{'back edge' if back else 'edge'} {u!r} → {v!r}"
    return [
        f"{edge}: {u!r} outputs {type_name(src)} but parameter {param!r} of {v!r} expects {type_name(dst)}; "
        f"make them agree (change what {u!r} outputs: a function's return type, an agent's output_schema; "
        "or the parameter's annotation) "
        "or put a converting function node between them"
    ]
