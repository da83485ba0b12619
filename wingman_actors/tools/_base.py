"""The tool protocol, the per-session tool context, the ``@tool`` decorator and the registry.

Example:
    >>> from wingman_actors import tool
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add.definition.input_schema["required"]
    ['a', 'b']
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import threading
import types
import typing
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Protocol, TypeVar, get_type_hints, overload, runtime_checkable

import pydantic
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import PydanticSerializationError

from .._cancel import CancelToken
from .._event_loop import LoopThread, SharedLoop, in_daemon_thread, is_async_callable
from ..core import ToolDefinition
from ..errors import ToolError
from ._arguments import argument_field
from ._docstrings import doc_parts

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "format_validation_error",
    "tool",
    "typed_dict_note",
]

_NO_METADATA: Mapping[str, Any] = types.MappingProxyType({})
_T = TypeVar("_T")

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# where the async sessions' ``async def`` tools are awaited (ToolContext.await_coroutine_async)
_ASYNC_TOOLS = SharedLoop("wingman-async-tools")
UNWIND_S = 0.05  # how long a cancelled async tool's finally is waited for before its run goes on


class ToolContext:
    """What a tool sees of the session that calls it.

    Attributes:
        work_dir: the session's working directory (file tools are confined to it).
        token: the run's cancel token, if any (check it in long loops).
        state: per-session storage for tools (e.g. the persistent bash shell).
        agent: the name of the agent whose session calls the tool ("" outside a session).
        session_id: that session's id ("" outside a session).
        metadata: the run's metadata (``Session.run(message, metadata={...})``, a fleet
            task's ``data``), read-only; empty when none was given.
    """

    def __init__(
        self, work_dir: str | Path | None = None, *, token: CancelToken | None = None, agent: str = "",
        session_id: str = "", metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.work_dir = Path(work_dir or Path.cwd()).resolve()
        self.token = token
        self.agent = agent
        self.session_id = session_id
        self.metadata: Mapping[str, Any] = metadata if metadata is not None else _NO_METADATA
        self.state: dict[str, Any] = {}
        self._closers: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None

    def on_close(self, fn: Callable[[], None]) -> None:
        """Register ``fn`` to run when the session closes (release processes, files...)."""
        with self._lock:
            self._closers.append(fn)

    def await_coroutine(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Await ``coro`` on this context's event loop (a thread of the runtime, started
        on first use and stopped by :meth:`close` or when the context is collected) and
        return its value, blocking the calling thread: an ``async def`` tool's way in from
        a blocking run, which works inside a running event loop too (``asyncio.run``
        would not). The run's deadline and cancel bound it: past the deadline, or once the
        run is cancelled, the coroutine is cancelled and ``AgentError`` (kind ``timeout``
        or ``cancelled``) is raised.
        """
        future = self._tools_loop().submit(coro)
        token = self.token
        if token is None:
            return future.result()

        def cancel() -> None:  # a cancel cancels the coroutine, not only the wait for it
            future.cancel()

        unregister = token.on_cancel(cancel)
        try:
            return future.result(timeout=token.remaining())
        except (FutureTimeout, FutureCancelled):
            future.cancel()
            token.check()
            raise
        finally:
            unregister()

    async def await_coroutine_async(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """:meth:`await_coroutine` for an awaiting caller (``Session.arun``): ``coro`` is
        awaited on an event loop of the runtime's (one thread that the async sessions'
        tool calls in flight share, stopped when none is), not the caller's, so an
        ``async def`` tool that blocks holds neither the caller's loop nor the run's
        deadline. Cancelling the awaiting task (the run's timeout or cancel) cancels the
        coroutine (its ``finally`` runs there) and returns at once, even if the coroutine
        is stuck in blocking code (left to end on its thread)."""
        unwound: Future[None] = Future()

        async def guarded() -> _T:
            try:
                return await coro
            finally:
                unwound.set_result(None)

        loop = _ASYNC_TOOLS.acquire()
        try:
            return await asyncio.wrap_future(loop.submit(guarded()))  # a cancel of this await cancels it there
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and not task.cancelling():
                # Nobody cancelled this await: the coroutine raised CancelledError itself (it
                # awaited what another party cancelled). A failure of the tool's, as the
                # blocking run (await_coroutine) sees it, not a cancel of the run.
                raise FutureCancelled() from None
            # let its finally run before the run goes on, as it would on the caller's loop;
            # one stuck in blocking code is not waited for
            await asyncio.wait([asyncio.wrap_future(unwound)], timeout=UNWIND_S)
            raise
        finally:
            _ASYNC_TOOLS.release()

    def _tools_loop(self) -> LoopThread:
        # started on the first async tool call, stopped by close() (or when collected)
        with self._lock:
            loop = self._loop
            if loop is None:
                loop = self._loop = LoopThread("wingman-tools-loop")
                weakref.finalize(self, loop.stop)
            return loop

    def close(self) -> None:
        """Run the registered closers, newest first, and stop the context's event loop,
        if it started. Safe to call more than once."""
        with self._lock:
            closers, self._closers = self._closers[::-1], []
            self.state.clear()
            loop, self._loop = self._loop, None
        for fn in closers:
            fn()
        if loop is not None:
            loop.stop()


@runtime_checkable
class Tool(Protocol):
    """A tool a model can call.

    ``execute`` receives the validated-or-not input dict and the session's
    :class:`ToolContext`, and returns the text sent back to the model; it may be
    ``async def`` (awaited on the session's event loop, as an ``async def`` @tool is). Raise
    :class:`~wingman_actors.errors.ToolError` with a message the model can act on.
    """

    name: str
    description: str

    @property
    def definition(self) -> ToolDefinition: ...

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str | Coroutine[Any, Any, str]: ...


def format_validation_error(tool_name: str, exc: ValidationError) -> str:
    """A model-readable account of bad tool arguments."""
    problems = []
    for e in exc.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(input)"
        problems.append(f"{loc}: {e['msg']}")
    return f"invalid arguments for tool {tool_name!r}: " + "; ".join(problems) + ". Call it again with arguments matching its input schema."


def to_text(value: Any) -> str:
    """Render a tool's return value as the text the model receives."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):  # text read as bytes: its text, not a quoted JSON string
        return bytes(value).decode("utf-8", errors="backslashreplace")
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(pydantic.TypeAdapter(Any).dump_python(value, mode="json"), ensure_ascii=False)
    except (TypeError, ValueError, PydanticSerializationError):
        return str(value)


async def _yielded(values: AsyncIterator[Any]) -> list[Any]:
    """Every value an async generator tool yields, in order."""
    return [value async for value in values]


def _is_context(annotation: Any) -> bool:
    """Whether a parameter annotated so takes the session's context: ``ToolContext``,
    ``ToolContext | None`` or ``Optional[ToolContext]``."""
    if annotation is ToolContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = set(typing.get_args(annotation))
        return ToolContext in args and args <= {ToolContext, type(None)}
    return False


class FunctionTool:
    """A tool built from a typed Python function by :func:`tool`.

    The function may take a parameter annotated :class:`ToolContext` (or
    ``ToolContext | None``; any name); it is passed the session's context and left out of
    the schema.
    """

    def __init__(self, fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"@tool decorates a function, got {type(fn).__name__}")
        self.fn = fn
        if name is not None and not isinstance(name, str):
            raise TypeError(f"tool name must be a str, e.g. @tool(name='lookup'), got {name!r}")
        # a partial is described by the function it wraps: its name, docstring and annotations
        base = fn
        while isinstance(base, functools.partial):
            base = base.func
        self.name = name or getattr(base, "__name__", None) or type(base).__name__
        if description is not None and not isinstance(description, str):
            raise TypeError(f"tool {self.name!r}: description must be a str, got {description!r}")
        if not _NAME_RE.match(self.name):
            # a name taken from the function (a lambda's '<lambda>'): say where to give one
            fix = "" if name is not None else "; name the tool: tool(fn, name='lookup') or @tool(name='lookup')"
            raise ValueError(f"tool name {self.name!r} must be 1-64 characters of letters, digits, '_' or '-'{fix}")
        summary, arg_docs = doc_parts(base.__doc__ or "")
        self.description = description if description is not None else summary
        self._ctx_param: str | None = None
        # an object whose __call__ is async def is awaited too, as function nodes are
        self._is_async = is_async_callable(fn)
        # an async generator is run to its end on the same loop, its yields kept as a list (as
        # to_text keeps a plain generator's); rendered as it was, the model got "<async_generator ...>"
        call = base if inspect.isroutine(base) else getattr(type(base), "__call__", None)  # noqa: B004
        self._is_async_gen = inspect.isasyncgenfunction(call)
        sig = inspect.signature(fn)
        # A callable object's parameters are its __call__'s: their annotations are there.
        typed = base if inspect.isroutine(base) or isinstance(base, type) else type(base).__call__
        # Only the parameters matter; the return annotation may name a type that is not
        # resolvable here (a class local to a function, under postponed annotations).
        param_anns = {k: v for k, v in getattr(typed, "__annotations__", {}).items() if k != "return"}
        shim = types.SimpleNamespace(__annotations__=param_anns)
        try:
            # ToolContext resolves even where the tool's module imported it only locally.
            hints = get_type_hints(
                shim, globalns=getattr(typed, "__globals__", {}), localns={"ToolContext": ToolContext},
                include_extras=True,
            )
        except Exception as exc:  # unresolved forward references
            raise TypeError(f"tool {self.name!r}: cannot resolve type hints: {exc}") from exc
        fields: dict[str, Any] = {}
        self._params: dict[str, str] = {}  # field name -> parameter name, where they differ
        for index, (pname, param) in enumerate(sig.parameters.items()):
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {self.name!r}: *args/**kwargs are not supported; name each parameter")
            if index == 0 and pname in ("self", "cls") and inspect.isfunction(fn) and param.annotation is param.empty:
                # a method taken from its class: the model would be asked for a `self` of any type
                raise TypeError(
                    f"tool {self.name!r}: its first parameter is {pname!r}, so it is a method taken from its "
                    f"class, which has no object to call it on; make the tool from a bound method, "
                    f"tool(obj.{fn.__name__}), or make the method a staticmethod"
                )
            annotation = hints.get(pname, Any)
            if _is_context(annotation):
                self._ctx_param = pname
                continue
            default = ... if param.default is param.empty else param.default
            field_name, fields[field_name] = argument_field(index, pname, annotation, default, arg_docs.get(pname))
            if field_name != pname:
                self._params[field_name] = pname
        try:
            self.arguments: type[BaseModel] = create_model(  # type: ignore[call-overload]
                f"{self.name}_arguments",
                __config__=ConfigDict(extra="forbid"),
                **fields,
            )
            schema = self.arguments.model_json_schema()
        except pydantic.PydanticUserError as exc:
            raise _no_schema(self.name, fields, self._params, exc) from exc
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self._definition = ToolDefinition(name=self.name, description=self.description, input_schema=schema)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        return self._definition

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        """Validate ``input``, call the function, and render its result as text. An
        ``async def`` function is awaited on an event loop the session's context owns
        (:meth:`ToolContext.await_coroutine`); this blocks the calling thread."""
        kwargs = self._arguments(input, ctx)
        if self._is_async_gen:
            result = ctx.await_coroutine(_yielded(self.fn(**kwargs)))
        elif self._is_async:  # awaited on the session's event loop (started on first use)
            result = ctx.await_coroutine(self.fn(**kwargs))
        else:
            result = self.fn(**kwargs)
        return to_text(result)

    async def aexecute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        """:meth:`execute`, awaited (``Session.arun``): an ``async def`` function is
        awaited on the event loop the session's context owns, as in the blocking run
        (:meth:`ToolContext.await_coroutine_async`); a plain one runs on a daemon thread of
        its own. Either one left stuck when the session stops holds neither the caller's
        loop nor exit."""
        kwargs = self._arguments(input, ctx)
        if self._is_async_gen:
            result = await ctx.await_coroutine_async(_yielded(self.fn(**kwargs)))
        elif self._is_async:
            result = await ctx.await_coroutine_async(self.fn(**kwargs))
        else:
            result = await in_daemon_thread(functools.partial(self.fn, **kwargs), name=f"wingman-tool-{self.name}")
        return to_text(result)

    def _arguments(self, input: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        try:
            args = self.arguments.model_validate(input or {})
        except ValidationError as exc:
            raise ToolError(format_validation_error(self.name, exc), tool=self.name) from exc
        params = self._params
        kwargs = {params.get(k, k): getattr(args, k) for k in type(args).model_fields}
        if self._ctx_param:
            kwargs[self._ctx_param] = ctx
        return kwargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.name}>"


def _no_schema(tool_name: str, fields: dict[str, Any], params: dict[str, str], exc: Exception) -> TypeError:
    """The error naming the parameter of ``tool_name`` whose type has no JSON schema."""
    for field_name, (annotation, _) in fields.items():
        pname = params.get(field_name, field_name)
        try:
            pydantic.TypeAdapter(annotation).json_schema()
        except pydantic.PydanticUserError as err:
            shown = getattr(annotation, "__name__", repr(annotation))
            return TypeError(
                f"tool {tool_name!r}: parameter {pname!r} ({shown}) has no JSON schema to show the model"
                f"{typed_dict_note(err)}; annotate it with JSON types (str, int, float, bool, list, dict), a "
                "pydantic model, a dataclass or a typing_extensions.TypedDict"
            )
    return TypeError(f"tool {tool_name!r}: its parameters have no JSON schema: {exc}")


def typed_dict_note(err: Exception) -> str:
    """What to say of a pydantic refusal that is about a ``typing.TypedDict`` (pydantic takes
    one only from Python 3.12), else nothing: its other messages give advice (model_config)
    a tool's or an agent's author cannot follow."""
    if getattr(err, "code", None) == "typed-dict-version":
        return ": pydantic takes a typing.TypedDict only from Python 3.12; use typing_extensions.TypedDict"
    return ""


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(*, name: str | None = None, description: str | None = None) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, description: str | None = None
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a typed function into a :class:`Tool`.

    The name is the function's name, the description the docstring's summary, and the
    JSON Schema comes from the annotations (via pydantic); ``Args:`` lines of a
    Google-style docstring describe the parameters. Arguments are validated before the call.
    An ``async def`` function is awaited; so is an object whose ``__call__`` is one (its
    schema comes from ``__call__``'s annotations; its name, unless given, from its class).

    Example:
        >>> @tool(name="lookup")
        ... def find(city: str, limit: int = 3) -> list[str]:
        ...     '''Find places in a city.
        ...
        ...     Args:
        ...         city: the city to search.
        ...     '''
        ...     return [city] * limit
        >>> find.name, find.definition.input_schema["properties"]["city"]["description"]
        ('lookup', 'the city to search.')
    """
    if isinstance(fn, str):
        raise TypeError(f"@tool takes a tool's name as a keyword: write @tool(name={fn!r}), not @tool({fn!r})")
    if fn is not None:
        return FunctionTool(fn, name=name, description=description)

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(f, name=name, description=description)

    return wrap


class ToolRegistry:
    """Tools by name, in registration order. Duplicate names are refused.

    Example:
        >>> reg = ToolRegistry()
        >>> reg.register(add)            # doctest: +SKIP
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.register(t)

    def register(self, t: Tool) -> Tool:
        """Add ``t``; a second tool with the same name is an error."""
        if not isinstance(t, Tool):
            raise TypeError(
                f"{t!r} is not a tool: decorate a function with @tool, or implement "
                "name, description, definition and execute(input, ctx)"
            )
        if t.name in self._tools:
            raise ValueError(f"duplicate tool name {t.name!r}: each tool of an agent needs its own name")
        self._tools[t.name] = t
        return t

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def definitions(self) -> list[ToolDefinition]:
        """The definitions sent to the model."""
        return [t.definition for t in self._tools.values()]

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools
