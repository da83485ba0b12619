"""How journalled values are written and read back as the same type.

A value is stored as JSON text with a codec number:

* ``PLAIN`` (0): the value is JSON data — ``dict`` with ``str`` keys, ``list``, ``str``,
  ``int``, ``float`` (NaN and infinities included), ``bool``, ``None`` — stored as is and
  read back with ``json.loads``. The common case costs one ``json.dumps``.
* ``TAGGED`` (1): the value holds other supported types, wrapped in small tagged objects
  ``{"__t": kind, ...}`` that are undone on load:

  - ``tuple``, ``set``, ``frozenset`` come back as ``tuple``, ``set``, ``frozenset``;
    ``bytes`` as ``bytes``; a ``dict`` with non-``str`` keys (or with a ``"__t"`` key) as a
    ``dict``; ``collections.Counter`` / ``OrderedDict`` as themselves.
  - an instance of a pydantic model is stored as ``model_dump(mode="json", by_alias=True)``
    plus the class's import path (``module:QualName``) and comes back as
    ``Model.model_validate(data)``: what the model's field types restore is exact (nested
    models, tuples, datetimes); a field typed ``Any`` holds JSON data.
  - dataclasses, ``Enum`` members, ``datetime`` / ``date`` / ``time`` / ``timedelta``,
    ``UUID``, ``Decimal`` and paths go through pydantic's ``TypeAdapter`` of their class,
    also with the import path.

  The class must be importable by that path in the process that loads the journal (a
  class defined inside a function is refused when written, naming the node and the fix).
* ``PICKLED`` (2): like ``TAGGED``, and some parts are pickled. Only with
  ``RunStore(path, allow_pickle=True)``; without it anything else is refused with a
  :class:`SerializationError` naming the node, the type and the fixes.

Trusting a database file: reading a journal without pickle imports the modules named by
the stored import paths (as building the formation would) and validates data with those
classes; it runs no other code named by the file. A file holding pickled values runs
arbitrary code when those values are loaded, so a store refuses to load them unless it
was opened with ``allow_pickle=True``: only do that for files you trust.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import importlib
import io
import json
import pathlib
import pickle
import sys
import uuid
from collections import Counter, OrderedDict
from typing import Any

from pydantic import BaseModel, TypeAdapter

from ._errors import SerializationError

__all__ = ["PICKLED", "PLAIN", "TAGGED", "Codec", "type_path"]

PLAIN, TAGGED, PICKLED = 0, 1, 2

_SCALARS = frozenset({str, int, float, bool, type(None)})
_ADAPTED = (datetime.datetime, datetime.date, datetime.time, datetime.timedelta, uuid.UUID, decimal.Decimal,
            pathlib.PurePath)
_OBJ_TYPES = (enum.Enum, *_ADAPTED)
_TAG = "__t"
# Modules of the library's journal-able classes that moved when internal modules got
# `_`-prefixed names (0.1.0): journals written before still load.
_MOVED = {
    "wingman_actors.formation.failure": "wingman_actors.formation._failure",
    "wingman_actors.formation.result": "wingman_actors.formation._result",
    "wingman_actors.fleet": "wingman_actors.agents._fleet",
    "wingman_actors.result": "wingman_actors.agents._result",
    "wingman_actors.structured": "wingman_actors.agents._structured",
    "wingman_actors.actors.envelope": "wingman_actors.actors._envelope",
}
_MAPPINGS: dict[str, type[dict[Any, Any]]] = {"collections:Counter": Counter, "collections:OrderedDict": OrderedDict}
# Built-in types the journal stores exactly: a subclass of one is refused, and told so.
_BASES = (bool, int, float, str, bytes, tuple, list, dict, set, frozenset)
_SUPPORTED = ("JSON data (dict with str keys, list, str, int, float, bool, None), tuple, set, frozenset, bytes, "
              "a pydantic model, a dataclass, an Enum, datetime/date/time/timedelta, UUID, Decimal or a path")


class _Unsupported(Exception):
    def __init__(self, value: Any, at: str, why: str = "", *, fix: bool = False) -> None:
        super().__init__(at)
        self.value, self.at, self.why = value, at, why
        self.fix = fix  # the refusal also lists what can be journalled (``why`` alone does not say it)


def type_path(cls: type) -> str:
    """The import path ``module:QualName`` of a class."""
    return f"{cls.__module__}:{cls.__qualname__}"


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
_encode_str: Any = json.encoder.encode_basestring  # type: ignore[attr-defined]


def _dumps(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``, without building
    an encoder per call; a ``str`` or ``int`` (most node outputs in a pipeline) directly."""
    t = type(value)
    if t is str:
        return str(_encode_str(value))
    if t is int:
        return int.__repr__(value)
    return _ENCODER.encode(value)


def _utf8(text: str, tree: Any) -> str:
    """``text``, or the same JSON with non-ASCII characters escaped when it holds a lone
    surrogate (``"\\ud800"``, e.g. from a file name decoded with ``surrogateescape``):
    SQLite and PostgreSQL take UTF-8 only, and ``json.loads`` reads the escape back as the
    same surrogate. ASCII text, the usual case, is not checked further."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(tree, separators=(",", ":"))
    return text


def _is_plain(v: Any) -> bool:
    t = type(v)
    if t in _SCALARS:
        return True
    if t is list:
        return all(_is_plain(x) for x in v)
    if t is dict:
        return _TAG not in v and all(type(k) is str and _is_plain(x) for k, x in v.items())
    return False


class Codec:
    """Encodes values to ``(codec, text)`` and back. Thread-safe (caches are dicts whose
    entries are only ever added with the same value).

    Args:
        allow_pickle: pickle values of other types instead of refusing them, and load
            pickled values. Loading a pickle can run any code: only for trusted files.
    """

    def __init__(self, *, allow_pickle: bool = False) -> None:
        self.allow_pickle = allow_pickle
        self._paths: dict[type, str] = {}
        self._classes: dict[str, type] = {}
        self._adapters: dict[type, TypeAdapter[Any]] = {}

    # --- writing -------------------------------------------------------------------------

    def encode(self, value: Any, where: str, *args: Any, given: bool = False) -> tuple[int, str]:
        """The codec number and JSON text of ``value``.

        Args:
            value: the value to journal.
            where: what the value is, for errors (e.g. ``"output of node 'b'"``); with
                ``args``, a ``%`` format of them (only formatted for an error).
            given: the user gives the value (a run's input, an answer, an interrupt's
                payload: a refusal says "Pass JSON data"), rather than a node returning it
                ("Return JSON data").

        Raises:
            SerializationError: a part of the value has an unsupported type (naming
                where in the value, the type and the fixes), or a class is not importable.
        """
        try:
            if _is_plain(value):
                return PLAIN, _utf8(_dumps(value), value)
            pickled: list[bool] = []
            try:
                tree = self._tag(value, "", pickled)
            except _Unsupported as exc:
                raise self._refusal(exc, where % args if args else where, given) from None
            return (PICKLED if pickled else TAGGED), _utf8(_dumps(tree), tree)
        except RecursionError:
            where = where % args if args else where
            raise SerializationError(
                f"{where} is nested too deeply for the run store to journal (more levels of lists, dicts "
                f"or tuples than Python's recursion limit, {sys.getrecursionlimit()}, lets it walk); return a "
                "flatter value, e.g. a list of items with parent indexes instead of a tree", where=where,
                type_name=type_path(type(value))) from None

    def _tag(self, v: Any, at: str, pickled: list[bool]) -> Any:
        t = type(v)
        if t in _SCALARS:
            return v
        if t is list:
            return [self._tag(x, f"{at}[{i}]", pickled) for i, x in enumerate(v)]
        if t is dict:
            if _TAG not in v and all(type(k) is str for k in v):
                return {k: self._tag(x, f"{at}[{k!r}]", pickled) for k, x in v.items()}
            return {_TAG: "dict", "v": self._pairs(v, at, pickled)}
        if t is tuple or t is set or t is frozenset:
            items = v if t is tuple else sorted(v, key=repr)  # a stable order for sets
            return {_TAG: t.__name__, "v": [self._tag(x, f"{at}[{i}]", pickled) for i, x in enumerate(items)]}
        if t is bytes:
            return {_TAG: "bytes", "v": base64.b64encode(v).decode("ascii")}
        if t is Counter or t is OrderedDict:
            return {_TAG: "dict", "c": type_path(t), "v": self._pairs(v, at, pickled)}
        if isinstance(v, BaseModel):
            return {_TAG: "obj", "c": self._path(t, v, at), "v": v.model_dump(mode="json", by_alias=True)}
        if (dataclasses.is_dataclass(v) and not isinstance(v, type)) or isinstance(v, _OBJ_TYPES):
            path = self._path(t, v, at)
            try:
                data = self._adapter(t).dump_python(v, mode="json", by_alias=True)
            except Exception as exc:  # pydantic cannot serialise one of its fields
                if self.allow_pickle:
                    return self._pickle(v, at, pickled)
                # pydantic's first sentence says which field type; the rest is advice to its own implementors
                first = str(exc).strip().splitlines()[0].split(". ")[0] if str(exc).strip() else type(exc).__name__
                raise _Unsupported(v, at, f"pydantic cannot serialise one of its fields ({first})", fix=True) from exc
            return {_TAG: "obj", "c": path, "v": data}
        if self.allow_pickle:
            return self._pickle(v, at, pickled)
        raise _Unsupported(v, at)

    def _pairs(self, v: dict[Any, Any], at: str, pickled: list[bool]) -> list[list[Any]]:
        return [[self._tag(k, f"{at}<key {i}>", pickled), self._tag(x, f"{at}[{k!r}]", pickled)]
                for i, (k, x) in enumerate(v.items())]

    def _pickle(self, v: Any, at: str, pickled: list[bool]) -> Any:
        try:
            data = pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise _Unsupported(v, at, f"it cannot be pickled either ({type(exc).__name__}: {exc})") from exc
        pickled.append(True)
        return {_TAG: "pickle", "v": base64.b64encode(data).decode("ascii")}

    def _path(self, cls: type, v: Any, at: str) -> str:
        path = self._paths.get(cls)
        if path is None:
            path = type_path(cls)
            try:
                found = self._resolve(path)
            except Exception:
                found = None
            if found is not cls:
                raise _Unsupported(v, at, f"its class cannot be imported back as {path} (a class defined "
                                          "inside a function, or a parametrised generic); define it at "
                                          "module level so a resumed run can import it")
            self._paths[cls] = path
        return path

    def _adapter(self, cls: type) -> TypeAdapter[Any]:
        adapter = self._adapters.get(cls)
        if adapter is None:
            adapter = self._adapters[cls] = TypeAdapter(cls)
        return adapter

    def _refusal(self, exc: _Unsupported, where: str, given: bool) -> SerializationError:
        t = type(exc.value)
        inside = f" at {exc.at}" if exc.at else ""
        what = f"{where}{inside} is a {t.__name__} ({type_path(t)})"
        verb = "Pass" if given else "Return"
        if exc.why and exc.fix:
            return SerializationError(
                f"{what} that the run store cannot journal: {exc.why}. {verb} {_SUPPORTED}, with fields of those "
                "types (an exception, such as a NodeFailure's error, is not one: keep what you need of it, e.g. "
                "str(error)); or open the store with RunStore(path, allow_pickle=True) to pickle it (only for "
                "database files you trust: loading a pickle can run any code)",
                where=where, type_name=type_path(t),
            )
        if exc.why:
            return SerializationError(f"{what} that the run store cannot journal: {exc.why}",
                                      where=where, type_name=type_path(t))
        base = next((b for b in _BASES if isinstance(exc.value, b)), None)
        if base is not None:  # a NamedTuple, a str subclass: "return a tuple" would not help
            what += (f", a subclass of {base.__name__}, which the run store journals only as {base.__name__} "
                     f"itself: return {base.__name__}(value), or make it a dataclass or a pydantic model")
            return SerializationError(
                f"{what}; or open the store with RunStore(path, allow_pickle=True) to pickle it (only for "
                "database files you trust: loading a pickle can run any code)",
                where=where, type_name=type_path(t),
            )
        return SerializationError(
            f"{what}, which the run store cannot journal. {verb} {_SUPPORTED}; or open the store with "
            "RunStore(path, allow_pickle=True) to pickle it (only for database files you trust: "
            "loading a pickle can run any code)",
            where=where, type_name=type_path(t),
        )

    # --- reading -------------------------------------------------------------------------

    def decode(self, codec: int, text: str, where: str) -> Any:
        """The value of ``(codec, text)`` as written by :meth:`encode`.

        Raises:
            SerializationError: the value is pickled and the store does not allow pickle,
                a class cannot be imported, or the data no longer validates.
        """
        if codec == PLAIN:
            return json.loads(text)
        if codec == PICKLED and not self.allow_pickle:
            raise SerializationError(
                f"{where} was journalled with pickle; loading a pickle can run any code, so this store "
                "refuses it. Reopen the store with RunStore(path, allow_pickle=True) only if you trust "
                "the database file", where=where, type_name="pickle")
        if codec not in (TAGGED, PICKLED):
            raise SerializationError(
                f"{where} has codec {codec}, unknown to this wingman-actors (written by a newer version?); "
                "upgrade wingman-actors", where=where, type_name=f"codec {codec}")
        return self._untag(json.loads(text), where)

    def _untag(self, v: Any, where: str) -> Any:
        t = type(v)
        if t is list:
            return [self._untag(x, where) for x in v]
        if t is not dict:
            return v
        kind = v.get(_TAG)
        if kind is None:
            return {k: self._untag(x, where) for k, x in v.items()}
        data = v["v"]
        if kind == "tuple":
            return tuple(self._untag(x, where) for x in data)
        if kind == "set":
            return {self._untag(x, where) for x in data}
        if kind == "frozenset":
            return frozenset(self._untag(x, where) for x in data)
        if kind == "bytes":
            return base64.b64decode(data)
        if kind == "dict":
            pairs = [(self._untag(k, where), self._untag(x, where)) for k, x in data]
            return _MAPPINGS[v["c"]](dict(pairs)) if "c" in v else dict(pairs)
        if kind == "obj":
            return self._load_obj(v["c"], data, where)
        if kind == "pickle":
            if not self.allow_pickle:  # a pickle inside a value marked TAGGED: refuse all the same
                raise SerializationError(f"{where} holds a pickled part; reopen the store with allow_pickle=True "
                                         "only if you trust the file", where=where, type_name="pickle")
            return _Unpickler(io.BytesIO(base64.b64decode(data))).load()  # only with allow_pickle=True
        raise SerializationError(f"{where} holds a value tagged {kind!r}, unknown to this wingman-actors "
                                 "(written by a newer version?); upgrade wingman-actors",
                                 where=where, type_name=str(kind))

    def _load_obj(self, path: str, data: Any, where: str) -> Any:
        try:
            cls = self._classes.get(path) or self._resolve(path)
        except Exception as exc:
            raise SerializationError(
                f"{where} is a {path} and that class cannot be imported here ({type(exc).__name__}: {exc}); "
                "import the module that defines it (build the same formation) before loading the run",
                where=where, type_name=path) from exc
        if not (issubclass(cls, (BaseModel, *_OBJ_TYPES)) or dataclasses.is_dataclass(cls)):
            raise SerializationError(f"{where} names {path}, which is not a pydantic model, dataclass, Enum or "
                                     "supported value type; the database file may have been tampered with",
                                     where=where, type_name=path)
        self._classes[path] = cls
        try:
            if issubclass(cls, BaseModel):
                return cls.model_validate(data)
            return self._adapter(cls).validate_python(data)
        except Exception as exc:
            raise SerializationError(
                f"{where} no longer validates as {path} ({exc}); the class changed since the run was "
                "journalled: restore its fields, or start a new run", where=where, type_name=path) from exc

    @staticmethod
    def _resolve(path: str) -> type:
        module_name, _, qualname = path.partition(":")
        module_name = _MOVED.get(module_name, module_name)
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        obj: Any = module
        for part in qualname.split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, type):
            raise TypeError(f"{path} is not a class")
        return obj


class _Unpickler(pickle.Unpickler):
    """``pickle.loads`` that finds the library's classes under their modules' old names too."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_MOVED.get(module, module), name)
