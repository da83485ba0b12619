"""The error hierarchy of wingman-actors.

Every error the library raises on purpose about what it runs (a model call, a tool, a
formation, a store, the server) derives from :class:`WingmanError`; where users could
catch a builtin before, it stays a second base (``also a ValueError``). A call given a
wrong argument (a bad type or value, before anything runs) raises Python's own
``TypeError`` or ``ValueError``, and an object used out of turn (a stream's response
read before its end) a ``RuntimeError``, as httpx and pydantic do: those are mistakes
in the calling code, caught while writing it, not conditions to handle at run time. The
classes live here unless a module is named in brackets::

    WingmanError
    ├── AgentError              a model call or agent run failed; ``kind`` says how
    │   ├── ToolError           a tool failed (kind = ErrorKind.TOOL)
    │   └── Halt                a middleware hook stopped the run [agents]
    ├── OutputValidationError   an answer does not match the agent's output schema
    │                           (also a ValueError)
    ├── FormationSetupError     a formation is declared wrongly (before anything runs;
    │   │                       also a ValueError)
    │   └── FormationMismatchError  a resumed run's formation differs from the one it
    │                           was recorded with [store]
    ├── FormationRuntimeError   a formation run failed (node, attempts, run id, partial outputs, node traces)
    │   ├── NoRouteError        a node's conditional edges all stayed shut and it had no
    │   │                       ``otherwise`` edge (node, a preview of its output)
    │   └── RunTimeoutError     a run went past its ``timeout`` (the limit, the nodes still
    │                           at work; also a TimeoutError)
    ├── NestedRunError          the inner run of a formation node failed; the outer node's
    │                           attempt fails with it (``nodes``: the inner run's traces)
    │                           [formation._nesting]
    ├── ForkPointError          a fork's ``at`` names no node, or a visit the run never made
    │                           [formation._fork] (also a ValueError)
    ├── NodeTimeoutError        a node attempt ran past its ``timeout`` (retryable; the cause
    │                           of the FormationRuntimeError when retries are spent)
    ├── PayloadError            a payload does not fit the node that received it (never retried)
    ├── FleetItemsError         some items of a fleet node failed (``errors`` by item index)
    │   └── MapItemsError       some items of a map node failed
    ├── NoStoreError            ``interrupt()`` was called where no run store journals the
    │                           run (also a RuntimeError; never retried)
    ├── StoreError              the run store refused or failed to do something [store]
    │   ├── StoreOpenError      the path is not a usable run store (also a ValueError)
    │   │   └── StoreVersionError  the file was written by a newer wingman-actors
    │   ├── UnknownRunError     no run with that id (also a KeyError)
    │   ├── RunExistsError      a new run was given an id the store has already (also a ValueError)
    │   ├── RunNotResumableError  the run cannot be claimed (running elsewhere, finished)
    │   ├── NoPendingInterruptError  an answer for a run with no pending interrupt (also a ValueError)
    │   ├── SerializationError  a value cannot be journalled or loaded (also a TypeError)
    │   ├── StoreWriteError     journal writes failed (reported at flush() / close())
    │   ├── StoreClosedError    the store was used after close()
    │   └── RunTakenOverError   another store took the run over (this one's lease lapsed);
    │                           also a FormationRuntimeError
    ├── SkillError              a skill folder cannot be used [orchestration] (also a ValueError)
    ├── MCPConnectionError      an MCP server cannot be reached or did not complete the
    │                           handshake [integrations.mcp] (also a ConnectionError)
    ├── MissingExtraError       an optional library is not installed; the message names the
    │                           extra to install (also a ModuleNotFoundError)
    ├── ChannelLost             the connection to a node's Ray actor closed: its process
    │                           died [backends._ray_channel] (also a RuntimeError)
    ├── UsageError              the launcher's command line or formation module is wrong
    │                           (exit code 2) [_launcher.errors]
    ├── ServeError              a ``wingman-actors serve`` argument cannot work
    │                           [server._cli] (also a ValueError)
    └── ApiError                the HTTP server's error answer: a status and a JSON body
                                [server._errors]

Not errors, and so not under :class:`WingmanError`: ``RunSuspended`` (a ``BaseException``
that unwinds the visit calling ``interrupt()``, so that ``except Exception`` does not
swallow it) and the launcher's ``Terminated`` (SIGTERM as a ``KeyboardInterrupt``).

Causes are chained with ``raise ... from exc``; the structured facts live in attributes,
not only in the message text.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only a type: the formation package imports this module
    from .core import Usage
    from .formation._result import NodeTrace

__all__ = [
    "AgentError",
    "ErrorKind",
    "FleetItemsError",
    "FormationRuntimeError",
    "FormationSetupError",
    "MapItemsError",
    "MissingExtraError",
    "NoStoreError",
    "NoRouteError",
    "NodeTimeoutError",
    "OutputValidationError",
    "PayloadError",
    "RunTimeoutError",
    "ToolError",
    "WingmanError",
]


class ErrorKind(enum.StrEnum):
    """What class of failure an :class:`AgentError` is.

    * ``agent``: the provider answered with an error (including 5xx and overload).
    * ``tool``: a tool failed.
    * ``timeout``: a deadline passed (read timeout, session timeout).
    * ``rate_limit``: the provider asked us to slow down (HTTP 429).
    * ``network``: the provider could not be reached (refused, reset, DNS).
    * ``invalid``: the request itself is wrong (bad request, credentials, schema).
    * ``cancelled``: the caller cancelled the run.
    """

    AGENT = "agent"
    TOOL = "tool"
    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    NETWORK = "network"
    INVALID = "invalid"
    CANCELLED = "cancelled"

    @property
    def retryable(self) -> bool:
        """Whether a retry policy may try again after this kind of failure."""
        return self in _RETRYABLE


_RETRYABLE = frozenset({ErrorKind.AGENT, ErrorKind.RATE_LIMIT, ErrorKind.NETWORK, ErrorKind.TIMEOUT})


class WingmanError(Exception):
    """Root of every error raised on purpose by wingman-actors."""


class AgentError(WingmanError):
    """A model call or an agent run failed.

    Attributes:
        kind: the class of failure (see :class:`ErrorKind`).
        status: the HTTP status the provider answered with, if any.
        retry_after: seconds the provider asked us to wait, if it said.
        provider: id of the provider that failed (``"anthropic"``, ``"openai"``...).
        usage: the tokens the agent run that raised it had spent on model calls before
            it failed (set by the session; None when it made none, or for an error raised
            outside a session): they were paid for, and traces count them.
        answer: the model's last answer when the run failed because it did not match the
            agent's output schema after the corrective retry (set by the session; None
            otherwise, and for an answer cut off at ``max_tokens``). Such an error is
            retryable: another session may answer differently (a formation node's
            ``retries`` apply).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind = ErrorKind.AGENT,
        status: int | None = None,
        retry_after: float | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = ErrorKind(kind)
        self.status = status
        self.retry_after = retry_after
        self.provider = provider
        self.usage: Usage | None = None
        self.answer: str | None = None

    @property
    def retryable(self) -> bool:
        """Whether retrying the same request may succeed.

        5xx answers are retryable; other 4xx answers (bad request, credentials) never are;
        an answer that did not match the output schema is.
        """
        if self.answer is not None:  # an answer that did not match the output schema
            return True
        if self.kind is ErrorKind.AGENT and self.status is not None and self.status < 500:
            return False
        return self.kind.retryable

    def __str__(self) -> str:
        parts = [self.message]
        facts = []
        if self.provider:
            facts.append(f"provider={self.provider}")
        facts.append(f"kind={self.kind.value}")
        if self.status is not None:
            facts.append(f"status={self.status}")
        if self.retry_after is not None:
            facts.append(f"retry_after={self.retry_after:g}s")
        parts.append(f"[{', '.join(facts)}]")
        return " ".join(parts)

    def __reduce__(self) -> tuple[Any, ...]:
        # The instance dict is the pickled state, so subclasses' own attributes survive too.
        return (
            _rebuild_agent_error,
            (type(self), self.message, self.kind, self.status, self.retry_after, self.provider),
            dict(self.__dict__),
        )


def _rebuild_agent_error(
    cls: type[AgentError],
    message: str,
    kind: ErrorKind,
    status: int | None,
    retry_after: float | None,
    provider: str | None,
) -> AgentError:
    err = cls.__new__(cls)
    AgentError.__init__(
        err, message, kind=kind, status=status, retry_after=retry_after, provider=provider
    )
    return err


class ToolError(AgentError):
    """A tool failed. Raise it from a tool to send a clear message back to the model.

    Attributes:
        tool: name of the tool that failed, when known.
    """

    def __init__(self, message: str, *, tool: str | None = None) -> None:
        super().__init__(message, kind=ErrorKind.TOOL)
        self.tool = tool

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,), {"tool": self.tool})


class FormationSetupError(WingmanError, ValueError):
    """A formation is declared wrongly. Raised before any actor starts: by a builder call
    (``add_function``, ``add_agent``, ``add_fleet``, ``connect``, ``Formation(...)``) at
    once, and by ``validate()`` (and so ``start``/``run``) listing every problem.

    It is also a ``ValueError``, so ``except ValueError`` around a declaration keeps working.

    Attributes:
        formation: the formation's name.
        problems: every problem found, each naming the node or edge and the fix.
        heading: the message's first line, when something else than the declaration is
            wrong (a run's options, e.g. ``break_before=`` naming no node); None for
            "formation 'x' is not valid".
    """

    def __init__(self, formation: str, problems: Sequence[str], heading: str | None = None) -> None:
        self.formation = formation
        self.problems = list(problems)
        self.heading = heading
        first = f"formation {formation!r} is not valid" if heading is None else heading
        lines = [f"{first} ({len(self.problems)} problem(s)):"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[Any, ...]:
        # The default pickling calls cls(message) and would miss ``problems``.
        return (type(self), (self.formation, self.problems, self.heading), dict(self.__dict__))


class FormationRuntimeError(WingmanError):
    """A formation run failed.

    Attributes:
        node: the node that failed (None for run-level failures such as a run timeout).
        attempts: how many times the node was tried.
        run_id: the id of the failed run.
        outputs: the outputs of the nodes that finished before the failure, by name.
        nodes: the failed run's node traces by name (``NodeTrace``, as in
            ``FormationResult.nodes``): which nodes ran, their status, attempts, outputs
            and errors; a node the run never reached is ``skipped`` with no attempts.
            Built when the run fails (a run that succeeds pays nothing); empty for an
            error not raised by a run.

    Example:
        >>> try:                                                        # doctest: +SKIP
        ...     formation.run(1)
        ... except FormationRuntimeError as err:
        ...     failed = {n: (t.attempts, t.error) for n, t in err.nodes.items() if t.status == "failed"}
        >>> failed                                                      # doctest: +SKIP
        {'boom': (2, 'ValueError: no luck')}
    """

    def __init__(
        self,
        message: str,
        *,
        node: str | None = None,
        attempts: int = 0,
        run_id: str | None = None,
        outputs: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.node = node
        self.attempts = attempts
        self.run_id = run_id
        self.outputs = dict(outputs or {})
        self.nodes: dict[str, NodeTrace] = {}


class NoRouteError(FormationRuntimeError):
    """A node's output matched none of its conditional edges, and the node has no
    ``otherwise`` edge: the run fails instead of ending with no output.

    Attributes:
        node: the node whose output found no route.
        preview: a short ``repr`` of that output (at most 200 characters).
        edges: the labels of the conditional edges that did not fire.
    """

    def __init__(
        self,
        node: str,
        output: Any,
        edges: Sequence[str],
        *,
        attempts: int = 0,
        run_id: str | None = None,
        outputs: Mapping[str, Any] | None = None,
    ) -> None:
        preview = _preview(output)
        self.preview = preview
        self.edges = list(edges)
        super().__init__(
            f"node {node!r} output {preview}, which matched none of its conditional edges "
            f"({', '.join(self.edges)}), and it has no otherwise edge; add connect({node!r}, <node>, "
            "otherwise=True) for the outputs no condition covers, or widen a condition",
            node=node, attempts=attempts, run_id=run_id, outputs=outputs,
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_no_route, (self.args, dict(self.__dict__)))


class RunTimeoutError(FormationRuntimeError, TimeoutError):
    """A run went past its ``timeout`` (``run``, ``submit``, ``arun``, ``resume``... given
    ``timeout=``): it failed at the limit, its work in flight abandoned. Also a
    ``TimeoutError``, so ``except TimeoutError`` catches it, and a node timeout (a
    ``NodeTimeoutError`` cause of a plain ``FormationRuntimeError``) is told apart from it.

    Attributes:
        timeout: the run's limit, in seconds.
        unfinished: the nodes still at work when it was reached (visited, or sinks, and
            neither finished nor skipped), in the formation's order.
        node: None (the run, not one node, ran out of time).
    """

    def __init__(
        self,
        message: str,
        *,
        timeout: float,
        unfinished: Sequence[str] = (),
        run_id: str | None = None,
        outputs: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, run_id=run_id, outputs=outputs)
        self.timeout = timeout
        self.unfinished = list(unfinished)

    def __reduce__(self) -> tuple[Any, ...]:  # (its facts are keyword-only: pickled as its state)
        return (_rebuild_run_timeout, (self.args, dict(self.__dict__)))


def _rebuild_run_timeout(args: tuple[Any, ...], state: dict[str, Any]) -> RunTimeoutError:
    err = RunTimeoutError.__new__(RunTimeoutError)
    err.args = args
    err.__dict__.update(state)
    return err


def _preview(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the routing error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rebuild_no_route(args: tuple[Any, ...], state: dict[str, Any]) -> NoRouteError:
    err = NoRouteError.__new__(NoRouteError)
    err.args = args
    err.__dict__.update(state)
    return err


class OutputValidationError(WingmanError, ValueError):
    """An answer does not match the agent's output schema; the message is written for
    the model (the session sends it back and asks again)."""


class NodeTimeoutError(WingmanError):
    """A node attempt ran past its ``timeout``; retried like any failure.

    Attributes:
        node: the node.
        attempt: the attempt that timed out (1-based).
        run_id: the run it belonged to.
    """

    retryable = True

    def __init__(
        self, message: str, *, node: str | None = None, attempt: int = 0, run_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.node = node
        self.attempt = attempt
        self.run_id = run_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_timeout, (str(self), self.node, self.attempt, self.run_id))


def _rebuild_timeout(message: str, node: str | None, attempt: int, run_id: str | None) -> NodeTimeoutError:
    return NodeTimeoutError(message, node=node, attempt=attempt, run_id=run_id)


class PayloadError(WingmanError):
    """A payload does not fit the node that received it. Never retried: it would fail again."""

    retryable = False


class FleetItemsError(WingmanError):
    """Some items of a fleet node failed.

    Attributes:
        node: the fleet node.
        total: how many items it had.
        errors: each failed item's error, by item index.
        retryable: whether every item's error may succeed on a retry.
        usage: the tokens the node's items spent in this attempt, those that succeeded
            and those that failed (None when not counted).
    """

    _kind = "fleet"

    def __init__(self, node: str, total: int, errors: dict[int, BaseException]) -> None:
        first = min(errors)
        super().__init__(
            f"{self._kind} node {node!r}: {len(errors)} of {total} item(s) failed; "
            f"first: item {first}: {self._show(errors[first])}"
        )
        self.node = node
        self.total = total
        self.errors = errors
        self.retryable = all(getattr(e, "retryable", True) for e in errors.values())
        self.usage: Usage | None = None

    @staticmethod
    def _show(error: BaseException) -> str:
        # an agent's error says what it is; anything else (a KeyboardInterrupt out of a tool) by its type too
        text = error_text(error)  # (an error whose __str__ raises still describes itself)
        return text.partition(": ")[2] if isinstance(error, WingmanError) else text

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.node, self.total, self.errors), {"usage": self.usage})


class MapItemsError(FleetItemsError):
    """Some items of a map node failed (after the node's retries, which rerun only the
    failed items). A :class:`FleetItemsError`, with the same attributes: code that
    handles a fleet's failed items handles a map's."""

    _kind = "map"

    @staticmethod
    def _show(error: BaseException) -> str:
        return error_text(error)  # any exception: its type says what went wrong


class NoStoreError(WingmanError, RuntimeError):
    """``interrupt()`` was called where no run store journals the run.

    It is also a ``RuntimeError``, as it was before it joined :class:`WingmanError`. Never
    retried (``retryable`` is False, whatever a node's ``retry_on`` says): another attempt
    of the same run has no store either.
    """

    retryable = False


class MissingExtraError(WingmanError, ModuleNotFoundError):
    """An optional library is not installed; the message is one line naming the extra
    that brings it, e.g. ``the anthropic provider needs the 'anthropic' extra: pip install
    "wingman-actors[anthropic]"``.

    Also a ``ModuleNotFoundError`` (an ``ImportError``), so ``except ImportError`` around an
    optional feature keeps working.

    Attributes:
        extra: the extra to install (``"anthropic"``, ``"cli"``, ``"pdf"``...).
        what: the feature that needs it (``"the anthropic provider"``).
        name: the module that could not be imported, when known.
    """

    def __init__(self, extra: str, what: str, module: str | None = None) -> None:
        super().__init__(
            f'{what} needs the {extra!r} extra: pip install "wingman-actors[{extra}]"', name=module
        )
        self.extra = extra
        self.what = what

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.extra, self.what, self.name))


class _Rebuilt:
    """Pickles as the exception it holds, rebuilt without its ``__init__`` (whose
    arguments may differ from ``args``): see :func:`shippable_error`."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        error = self.error
        return (_rebuild_error, (type(error), error.args, dict(getattr(error, "__dict__", {}))))


def _rebuild_error(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def error_text(error: BaseException) -> str:
    """``"Type: message"`` for a node's error, as traces, events and run errors show it
    (``"Type"`` alone when the message is empty, as Python's tracebacks show it).
    An exception whose ``str()`` raises (a ``__str__`` reading an attribute that is not
    set) still describes itself, as Python's tracebacks do, instead of failing the code
    that reports it."""
    try:
        text = str(error)
    except Exception as exc:  # (the user's __str__ is broken: say so, keep the class)
        text = f"<str() failed: {type(exc).__name__}>"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def shippable_error(error: BaseException) -> Any:
    """``error``, or a stand-in that unpickles as it (same class, ``args`` and attributes)
    when its class cannot be rebuilt from its ``args``, as pickle does by default: an
    ``__init__`` taking other arguments (``CodedError(code, reason)``). For the errors
    that cross a process boundary (the Ray backend); checking costs one round trip."""
    import pickle

    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return _Rebuilt(error)
    return error
