"""OpenTelemetry spans after the GenAI semantic conventions.

When OpenTelemetry is in use (``opentelemetry-api`` imported, and a tracer provider set by
the application), sessions emit::

    invoke_agent {agent}            one per Session.run / run_stream
    ├── chat {model}                one per model call (and per compaction)
    └── execute_tool {tool}         one per tool call, on the tool's thread
        └── invoke_agent {child}    e.g. a session a tool starts nests under it

with ``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.agent.name``, ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and, on failure, ``error.type`` with the
span's status set to error and the exception recorded. A :class:`~wingman_actors.Fleet`'s
sessions nest under the span that was current where ``run()`` was called.

Message content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``)
is recorded only when the user opts in: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``
or :func:`capture_content`.

Cost: this module imports nothing of OpenTelemetry by itself. It looks for
``opentelemetry.trace`` in ``sys.modules`` (an application that set a tracer provider has
imported it); when it is absent, or no provider is set, a session pays one dictionary
look-up per run and nothing else.

A formation run (the runtime does this; nothing happens when OpenTelemetry is not in
use)::

    invoke_workflow {formation}          one per run, from submit to its end
    ├── invoke_agent {agent}             an agent node's session, from the node actor's thread
    └── invoke_agent {agent} ...         a fleet node's sessions, one per item

The runtime calls :func:`start_workflow` when a run is submitted and keeps the
:class:`WorkflowSpan` on the run's state; node actors run each attempt inside
:func:`node_work` with the span's ``carrier``; the run's end calls
:meth:`WorkflowSpan.end`. ``carrier`` is a plain ``dict`` of W3C trace-context headers, so
it crosses processes (Ray) as well as threads. Node work has no span of its own: every
span started inside it carries ``wingman.node`` and ``wingman.run_id``; delegated agents
nest under the ``execute_tool delegate`` span of their parent.

Example:
    >>> from opentelemetry import trace                                   # doctest: +SKIP
    >>> from opentelemetry.sdk.trace import TracerProvider                # doctest: +SKIP
    >>> trace.set_tracer_provider(TracerProvider())                       # doctest: +SKIP
    >>> Session(agent).run("hi")   # emits invoke_agent and chat spans    # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ..core import ContentBlock, InferenceRequest, InferenceResponse, Message
from ..errors import AgentError

__all__ = [
    "SessionSpans",
    "WorkflowSpan",
    "capture_content",
    "carry_context",
    "node_work",
    "session_spans",
    "start_workflow",
]

log = logging.getLogger("wingman_actors.otel")

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_capture: bool | None = None
_cached: tuple[Any, Any] | None = None  # (tracer provider, its tracer or None)
_MISSING = object()
# A provider named by the environment is loaded by OpenTelemetry on first use.
_ENV_PROVIDER = bool(os.environ.get("OTEL_PYTHON_TRACER_PROVIDER"))
# The formation node whose work is running on this thread: (node, run_id).
_node: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("wingman_otel_node", default=None)

T = TypeVar("T")


def capture_content(enabled: bool | None) -> None:
    """Record message content on spans (True), never (False), or as the environment
    variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (None, the default)."""
    global _capture
    _capture = enabled


def _content_enabled() -> bool:
    if _capture is not None:
        return _capture
    return os.environ.get(CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes")


def _tracer() -> Any:
    """The tracer when OpenTelemetry is imported and a provider is set, else None."""
    global _cached
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None
    # While no provider is set, get_tracer_provider() looks the environment variable up on
    # every call (a KeyError inside os.environ: ~5 µs, a tenth of a formation run); the
    # module global it reads first says the same for the price of an attribute read.
    # tests/integrations/test_otel.py fails if opentelemetry-api changes that global.
    if getattr(trace, "_TRACER_PROVIDER", _MISSING) is None and not _ENV_PROVIDER:
        return None
    provider = trace.get_tracer_provider()
    cached = _cached
    if cached is not None and cached[0] is provider:
        return cached[1]
    tracer = None
    if not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        from .. import __version__

        tracer = provider.get_tracer("wingman_actors", __version__)
    _cached = (provider, tracer)
    return tracer


def _provider_name(provider: Any) -> str:
    return str(getattr(provider, "id", "") or type(provider).__name__)


def _sent_limits(provider: Any, request: InferenceRequest) -> tuple[int | None, float | None]:
    """The ``max_tokens`` and ``temperature`` the call sends: the request's, else the
    provider's options (a provider built on ours says through ``max_tokens_for`` /
    ``temperature_for``; any other, only what the request carries)."""
    max_tokens, temperature = request.max_tokens, request.temperature
    try:
        if max_tokens is None and callable(getattr(provider, "max_tokens_for", None)):
            max_tokens = provider.max_tokens_for(request)
        if temperature is None and callable(getattr(provider, "temperature_for", None)):
            temperature = provider.temperature_for(request)
    except Exception:  # a user's provider with its own idea of these methods: the request's values stand
        log.debug("could not read the request limits of provider %r", provider, exc_info=True)
    return max_tokens, temperature


def _error_type(exc: BaseException) -> str:
    if isinstance(exc, AgentError):
        return exc.kind.value
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _fail(span: Any, exc: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", _error_type(exc))
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))


# -- message content (opt-in) ------------------------------------------------------------


def _parts(blocks: list[ContentBlock]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if b.type == "text":
            parts.append({"type": "text", "content": b.text or ""})
        elif b.type == "tool_use":
            parts.append({"type": "tool_call", "id": b.id, "name": b.name, "arguments": b.input or {}})
        elif b.type == "tool_result":
            parts.append({"type": "tool_call_response", "id": b.tool_use_id, "response": b.content or ""})
        elif b.type == "image":
            parts.append({"type": "blob", "modality": "image", "mime_type": b.media_type})
    return parts


def _messages_json(messages: list[Message]) -> str:
    return json.dumps([{"role": m.role.value, "parts": _parts(m.content)} for m in messages], ensure_ascii=False)


# -- sessions ------------------------------------------------------------------------------


class SessionSpans:
    """The spans of one session run: ``invoke_agent`` and its children.

    The agent span is never made the thread's current span (a streamed run yields to the
    caller between events); its children name it as their parent explicitly, and a tool
    call's span is current on the tool's thread while the tool runs.
    """

    def __init__(self, tracer: Any, agent_name: str, provider: Any, session_id: str) -> None:
        from opentelemetry import context, trace

        self._tracer = tracer
        self._trace = trace
        self._context = context
        self.provider = provider
        self.provider_name = _provider_name(provider)
        self.model = str(getattr(provider, "model", "") or "")
        self.content = _content_enabled()
        self._common: dict[str, Any] = {"gen_ai.provider.name": self.provider_name}
        node = _node.get()
        if node is not None:
            self._common.update({"wingman.node": node[0], "wingman.run_id": node[1]})
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent_name,
            "gen_ai.conversation.id": session_id,
            **self._common,
        }
        if self.model:
            attributes["gen_ai.request.model"] = self.model
        self.span = tracer.start_span(f"invoke_agent {agent_name}", context=context.get_current(), attributes=attributes)
        self._parent = trace.set_span_in_context(self.span)

    def end(self, usage: Any = None, error: BaseException | None = None) -> None:
        """End the agent span, with the run's summed usage or its error."""
        if usage is not None:
            self.span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            self.span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        if error is not None:
            _fail(self.span, error)
        self.span.end()

    def chat(self, request: InferenceRequest, provider: Any = None) -> ChatSpan:
        """Start the span of one model call to ``provider`` (the agent's, another that its
        ``prepare`` chose, a compactor), named by it; the agent's when None."""
        return ChatSpan(self, request, provider)

    def traced_call(self, provider: Any, request: InferenceRequest) -> InferenceResponse:
        """``provider.run_inference(request)`` in a ``chat`` span (e.g. a compaction)."""
        chat = self.chat(request, provider)
        try:
            with chat.current():
                response: InferenceResponse = provider.run_inference(request)
        except BaseException as exc:
            chat.failed(exc)
            raise
        chat.done(response)
        return response

    @contextlib.contextmanager
    def tool(self, call: ContentBlock, description: str = "") -> Iterator[ToolSpan]:
        """The span of one tool call, current on this thread while the tool runs."""
        name = call.name or ""
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call.id or "",
            "gen_ai.tool.type": "function",
            **self._common,
        }
        if description:
            attributes["gen_ai.tool.description"] = description[:1000]
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(call.input or {}, ensure_ascii=False, default=str)
        span = self._tracer.start_span(f"execute_tool {name}", context=self._parent, attributes=attributes)
        token = self._context.attach(self._trace.set_span_in_context(span))
        handle = ToolSpan(span, self.content)
        try:
            yield handle
        except BaseException as exc:
            _fail(span, exc)
            raise
        finally:
            self._context.detach(token)
            span.end()


class ChatSpan:
    """The span of one model call; end it with :meth:`done` or :meth:`failed`."""

    def __init__(self, run: SessionSpans, request: InferenceRequest, provider: Any = None) -> None:
        self._run = run
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **run._common}
        model = run.model
        if provider is not None:
            model = str(getattr(provider, "model", "") or "")
            attributes["gen_ai.provider.name"] = _provider_name(provider)
        if request.model:  # Prepared(model="name"): this call's model
            model = request.model
        if model:
            attributes["gen_ai.request.model"] = model
        max_tokens, temperature = _sent_limits(provider if provider is not None else run.provider, request)
        if max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = max_tokens
        if temperature is not None:
            attributes["gen_ai.request.temperature"] = temperature
        if run.content:
            attributes["gen_ai.input.messages"] = _messages_json(request.messages)
            if request.instructions:
                attributes["gen_ai.system_instructions"] = json.dumps(
                    [{"type": "text", "content": request.instructions}], ensure_ascii=False
                )
        from opentelemetry.trace import SpanKind

        name = f"chat {model}" if model else "chat"
        self.span = run._tracer.start_span(name, context=run._parent, kind=SpanKind.CLIENT, attributes=attributes)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """Make this span current on this thread (a blocking call: HTTP client spans nest)."""
        ctx = self._run._context
        token = ctx.attach(self._run._trace.set_span_in_context(self.span))
        try:
            yield
        finally:
            ctx.detach(token)

    def done(self, response: InferenceResponse) -> None:
        span = self.span
        span.set_attribute("gen_ai.usage.input_tokens", response.usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", response.usage.output_tokens)
        span.set_attribute("gen_ai.response.finish_reasons", [response.stop_reason])
        if response.model:
            span.set_attribute("gen_ai.response.model", response.model)
        if self._run.content:
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps([{"role": "assistant", "parts": _parts(response.content),
                             "finish_reason": response.stop_reason}], ensure_ascii=False),
            )
        span.end()

    def failed(self, exc: BaseException) -> None:
        """End the span of a call that raised ``exc``: an error when it is an ``Exception``;
        a stream left early (``GeneratorExit``) or a task cancelled (``CancelledError``) just
        ends it, as the agent span does: nothing failed."""
        if isinstance(exc, Exception):
            _fail(self.span, exc)
        self.span.end()


class ToolSpan:
    """What a tool call reports on its span: the result, or the error."""

    def __init__(self, span: Any, content: bool) -> None:
        self.span = span
        self._content = content

    def result(self, block: ContentBlock, error: BaseException | None = None) -> None:
        if self._content:
            self.span.set_attribute("gen_ai.tool.call.result", block.content or "")
        if error is not None:
            _fail(self.span, error)
        elif block.is_error:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_attribute("error.type", "tool")
            self.span.set_status(Status(StatusCode.ERROR, (block.content or "")[:500]))


def session_spans(agent_name: str, provider: Any, session_id: str) -> SessionSpans | None:
    """Start the spans of a session run, or None (at the cost of a look-up) when
    OpenTelemetry is not in use."""
    tracer = _tracer()
    if tracer is None:
        return None
    return SessionSpans(tracer, agent_name, provider, session_id)


def carry_context(fn: Callable[[], T]) -> Callable[[], T]:
    """``fn`` run, on whatever thread, under the trace context current now (for worker
    threads: a fleet's sessions nest under the caller's span). ``fn`` itself when
    OpenTelemetry is not in use."""
    if _tracer() is None:
        return fn
    from opentelemetry import context

    captured = context.get_current()
    node = _node.get()

    def run() -> T:
        token = context.attach(captured)
        node_token = _node.set(node)
        try:
            return fn()
        finally:
            _node.reset(node_token)
            context.detach(token)

    return run


# -- formation runs (for the runtime) --------------------------------------------------------


class WorkflowSpan:
    """The ``invoke_workflow {formation}`` span of one run.

    Attributes:
        carrier: the run's trace context as W3C headers (a picklable ``dict``): hand it to
            :func:`node_work` on the node's side (any thread or process).
    """

    __slots__ = ("carrier", "span")

    def __init__(self, tracer: Any, formation: str, run_id: str) -> None:
        from opentelemetry import context, trace

        # gen_ai.workflow.name (semconv <= 1.41) and gen_ai.agent.name (its replacement in
        # the standalone GenAI conventions, v0.1) both name the formation.
        self.span = tracer.start_span(
            f"invoke_workflow {formation}", context=context.get_current(),
            attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": formation,
                        "gen_ai.agent.name": formation, "wingman.run_id": run_id},
        )
        self.carrier: dict[str, str] = {}
        _propagator().inject(self.carrier, context=trace.set_span_in_context(self.span))
        outer = _node.get()
        if outer is not None:  # a nested run, started by an outer run's node: its nodes are named by path
            self.span.set_attribute("wingman.node", outer[0])
            self.carrier[_OUTER_NODE], self.carrier[_OUTER_RUN] = outer

    def end(self, error: BaseException | None = None, *, cancelled: bool = False, usage: Any = None,
            suspended: bool = False) -> None:
        """End the run's span: succeeded (with the run's summed ``usage``, if given),
        failed (``error`` recorded, ``error.type`` set, status error), ``cancelled`` or
        ``suspended`` (waiting at an interrupt or breakpoint; its resume is a run span of
        its own): neither is an error, ``wingman.run.status`` says which."""
        span = self.span
        try:
            if usage is not None:
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            if error is not None:
                span.set_attribute("wingman.run.status", "failed")
                _fail(span, error)
            else:
                status = "cancelled" if cancelled else "suspended" if suspended else "succeeded"
                span.set_attribute("wingman.run.status", status)
            span.end()
        except Exception:  # a failing span processor must not keep the run from resolving
            log.exception("could not end the OpenTelemetry span of a formation run")


def start_workflow(formation: str, run_id: str) -> WorkflowSpan | None:
    """Open the span of a formation run (a child of the span current on the calling
    thread), or None when OpenTelemetry is not in use."""
    if "opentelemetry.trace" not in sys.modules:  # _tracer()'s first check, without its call: every run makes it
        return None
    tracer = _tracer()
    return WorkflowSpan(tracer, formation, run_id) if tracer is not None else None


_propagators: Any = None
# Carrier keys (beside the W3C headers, which the propagator alone reads) of a nested run:
# the outer node's path and the outermost run's id, which its node work is named by.
_OUTER_NODE, _OUTER_RUN = "wingman-outer-node", "wingman-outer-run-id"


def _propagator() -> Any:
    """W3C trace context and baggage, whatever global propagator the application set: the
    carrier never leaves the process pair that made it, so its format is ours to fix."""
    global _propagators
    if _propagators is None:
        from opentelemetry.baggage.propagation import W3CBaggagePropagator
        from opentelemetry.propagators.composite import CompositePropagator
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        _propagators = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
    return _propagators


@contextlib.contextmanager
def node_work(carrier: Mapping[str, str] | None, node: str, run_id: str, attempt: int = 1) -> Iterator[None]:
    """Run one attempt of a node's work for one run (on the node actor's thread, or in its
    process) under the run's trace context. Starts no span of its own: it makes the run's
    ``invoke_workflow`` span current, so sessions, fleet items, model and tool calls started
    inside nest directly under it, and every span started inside carries ``wingman.node``
    and ``wingman.run_id`` (in a nested formation's run: the node's path from the outermost
    run, ``"outer_node/inner_node"``, and that run's id, as its events say). An exception passes through untouched (a failing session records
    it on its own span, a failed run on the workflow span). ``attempt`` is accepted for the
    runtime's convenience and not recorded. Does nothing when ``carrier`` is None or
    OpenTelemetry is not in use."""
    if carrier is None or _tracer() is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(_propagator().extract(carrier))
    outer = carrier.get(_OUTER_NODE)
    if outer is not None:
        node, run_id = f"{outer}/{node}", carrier.get(_OUTER_RUN, run_id)
    node_token = _node.set((node, run_id))
    try:
        yield
    finally:
        _node.reset(node_token)
        context.detach(token)
