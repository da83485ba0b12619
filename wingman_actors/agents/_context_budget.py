"""Context budgets: keep every request of a long session under a number of tokens.

A session's history only grows; past a point the provider refuses it. With
``Agent(..., context_budget=N)`` each request is fitted to ``N`` estimated tokens before it
is sent:

* the instructions, the tool definitions and the session's first user message (with any
  message the history opens with before it, such as a greeting) always stay, and so do the
  current run's user message and the newest turn;
* the oldest turns go first, and a model turn that calls tools goes together with the
  message carrying their results (a tool call is never separated from its result);
* with ``compactor=provider`` the dropped turns are summarised, in one extra model call,
  into one message that takes their place (its usage counts in the run's usage and trace).
  A compactor that fails does not fail the run: the turns are left out without a summary
  (trimming, as without a compactor), and a trace entry (``name`` "compact failed",
  ``is_error``) says so. No other provider is asked: the agent's own would spend a model
  call (and, scripted, a reply meant for the agent) on a summary nobody asked it for.

The compaction logic is one generator (:meth:`ContextWindow.fitting`) that yields the
compactor's model calls: a blocking session makes them with ``run_inference``, an async
one (``Session.arun``) awaits ``arun_inference`` on its event loop.

Requests are fitted before the middleware's ``before_model`` hooks see them (a hook that
adds to a request adds to its size). When it has to trim, it trims down to 80% of the budget (60% with a compactor), so the
following requests share their beginning (providers cache a stable prefix) and
compactions stay rare.
``session.history`` keeps every message; only the requests are shortened. Tokens are
estimated (about 4 characters per token, images at a flat rate), not counted exactly.

Example:
    >>> from wingman_actors import Agent
    >>> from wingman_actors.testing import ScriptedProvider
    >>> agent = Agent("a", provider=ScriptedProvider(["ok"]), context_budget=8_000)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import ContentBlock, InferenceRequest, InferenceResponse, Message, Role, Usage
from ..errors import AgentError, ErrorKind
from ..providers._base import Provider

__all__ = ["ContextWindow", "Fitted", "estimate_message", "estimate_request", "estimate_text"]

ModelCall = Callable[[Provider, InferenceRequest], InferenceResponse]
CompactionCall = tuple[Provider, InferenceRequest]
"""A compactor's model call, yielded by :meth:`ContextWindow.fitting` for its driver to make."""
Fitting = Generator[CompactionCall, InferenceResponse, "Fitted"]
"""A fitting in progress (:meth:`ContextWindow.fitting`)."""

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 1_600  # about what providers charge for a mid-sized image
MESSAGE_OVERHEAD = 4  # role and framing, per message
LOW_WATER = 0.8  # trim down to this share of the budget...
LOW_WATER_COMPACTING = 0.6  # ...or this one, when each trim costs a model call

SUMMARY_HEADER = "[Summary of the earlier conversation, shortened to fit the context budget]\n"
COMPACT_INSTRUCTIONS = (
    "You summarise the earlier part of a conversation between a user, an AI assistant and "
    "its tools, so the assistant can continue the task without it. Keep facts, decisions, "
    "file names, numbers, open questions and what remains to do; drop pleasantries. "
    "Answer with the summary only."
)


def estimate_text(text: str) -> int:
    """Estimated tokens of ``text`` (about 4 characters per token)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _estimate_block(block: ContentBlock) -> int:
    if block.type == "image":
        return IMAGE_TOKENS
    size = len(block.text or "") + len(block.content or "") + len(block.name or "") + len(block.id or "")
    if block.input:
        size += len(json.dumps(block.input, ensure_ascii=False, default=str))
    return -(-size // CHARS_PER_TOKEN)


def estimate_message(message: Message) -> int:
    """Estimated tokens of one message."""
    return MESSAGE_OVERHEAD + sum(_estimate_block(b) for b in message.content)


def _estimate_fixed(request: InferenceRequest) -> int:
    """What every request carries whatever the history: instructions, tools, output schema."""
    total = estimate_text(request.instructions)
    for t in request.tools:
        total += estimate_text(t.name + t.description + json.dumps(t.input_schema, default=str))
    if request.output_schema is not None:
        total += estimate_text(json.dumps(request.output_schema, default=str))
    return total


def estimate_request(request: InferenceRequest) -> int:
    """Estimated input tokens of a whole request."""
    return _estimate_fixed(request) + sum(estimate_message(m) for m in request.messages)


@dataclass
class Fitted:
    """A request fitted to the budget, and what fitting it cost.

    Attributes:
        request: the request to send.
        compaction: the compactor's response when this fitting summarised turns.
        dropped: how many history messages this fitting newly left out.
        failures: what went wrong summarising, and what was done instead (one line per
            provider that failed).
    """

    request: InferenceRequest
    compaction: InferenceResponse | None = None
    dropped: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass
class ContextWindow:
    """The part of one session's history that requests carry; one per session.

    Args:
        budget: the most estimated input tokens of a request.
        compactor: a provider that summarises dropped turns, or None to drop them.
        agent_name: for error messages.
    """

    budget: int
    compactor: Provider | None = None
    agent_name: str = "agent"
    cut: int = 1  # history[head:cut] is left out of requests (except the pinned prompt)
    summary: Message | None = None
    head: int = 1  # history[:head] always stays: up to the first user message (usually just it)
    _sizes: list[int] = field(default_factory=list)
    _fixed_key: tuple[Any, ...] | None = None
    _fixed_size: int = 0

    def fit(self, request: InferenceRequest, pinned: int, *, call: ModelCall | None = None) -> Fitted:
        """Fit ``request`` (whose messages are the whole history) to the budget.

        Args:
            request: the request as the session built it.
            pinned: index of the current run's user message (never left out).
            call: how to call the compactor (``call(provider, request)``; the session
                passes one that traces it); ``provider.run_inference`` when None.

        Raises:
            AgentError: ``kind=invalid`` when even the smallest request (instructions,
                tools, first message, current prompt, newest turn) is over the budget.
        """
        steps = self.fitting(request, pinned)
        try:
            ask = next(steps)
            while True:
                provider, compaction = ask
                try:
                    response = call(provider, compaction) if call is not None else provider.run_inference(compaction)
                except Exception as exc:
                    ask = steps.throw(exc)
                else:
                    ask = steps.send(response)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]  # fitting returns a Fitted

    def fitting(self, request: InferenceRequest, pinned: int) -> Fitting:
        """:meth:`fit`, as a generator that leaves the compactor's model calls to its
        driver: it yields ``(provider, request)`` for each, takes the response sent back
        (or the call's exception thrown in) and returns the :class:`Fitted` request.
        :meth:`fit` drives it with blocking calls; an async session (``Session.arun``)
        awaits the provider's ``arun_inference`` instead, so a compaction does not block
        its event loop. The compaction logic is this one either way."""
        history = request.messages
        if not history:
            return Fitted(request)
        if self.cut > len(history):  # the history was replaced: start over
            self.cut, self.summary, self.head = 1, None, 1
            self._sizes.clear()
        if self.cut == 1:  # nothing left out yet: (re)find the head, which the history may open without
            self.head = self.cut = _head(history)
        sizes = self._measure(history)
        fixed = self._fixed(request)
        total = fixed + self._window_size(sizes, pinned)
        if total <= self.budget:
            return Fitted(request.model_copy(update={"messages": self._window(history, pinned)}))
        units = _units(history, self.cut)
        # Leave out whole units, oldest first, down to the low-water mark; never the newest.
        target = int(self.budget * (LOW_WATER if self.compactor is None else LOW_WATER_COMPACTING))
        start_cut = self.cut
        for begin, end in units:
            if begin == pinned:
                continue
            if (begin, end) == units[-1] or total <= target:
                break
            total -= sum(sizes[i] for i in range(max(begin, self.cut), end) if i != pinned)
            self.cut = end
        compaction: InferenceResponse | None = None
        failures: list[str] = []
        dropped = [m for i, m in enumerate(history[start_cut:self.cut], start_cut) if i != pinned]
        if self.compactor is not None and dropped:
            compaction = yield from self._compact_or_trim(dropped, failures)
        total = fixed + self._window_size(sizes, pinned)
        if total > self.budget:
            parts = [f"instructions and tools ~{fixed}", f"first message ~{sum(sizes[:self.head])}"]
            if self.summary is not None:
                parts.append(f"summary ~{estimate_message(self.summary)}")
            if self.head <= pinned < self.cut:
                parts.append(f"current message ~{sizes[pinned]}")
            if len(history) > self.cut:
                parts.append(f"newest turn ~{sum(sizes[self.cut:])}")
            raise AgentError(
                f"agent {self.agent_name!r}: the request needs ~{total} tokens even after leaving out every "
                f"older turn ({', '.join(parts)}), over context_budget={self.budget}. Raise context_budget, "
                "shorten the instructions or the message, or lower max_tool_result_chars.",
                kind=ErrorKind.INVALID,
            )
        fitted = request.model_copy(update={"messages": self._window(history, pinned)})
        return Fitted(fitted, compaction, len(dropped), failures)

    def _fixed(self, request: InferenceRequest) -> int:
        # The same tool definitions come back every step: measure them once.
        key = (request.instructions, tuple(map(id, request.tools)), request.output_schema)
        if self._fixed_key != key:
            self._fixed_key, self._fixed_size = key, _estimate_fixed(request)
        return self._fixed_size

    def _measure(self, history: Sequence[Message]) -> list[int]:
        # History only grows (messages are immutable), so sizes are measured once each.
        sizes = self._sizes
        if len(sizes) > len(history):
            sizes.clear()
        sizes.extend(estimate_message(m) for m in history[len(sizes):])
        return sizes

    def _window_size(self, sizes: list[int], pinned: int) -> int:
        head = self.head
        total = (sizes[0] if head == 1 else sum(sizes[:head])) + sum(sizes[self.cut:])
        if head <= pinned < self.cut:
            total += sizes[pinned]
        if self.summary is not None:
            total += estimate_message(self.summary)
        return total

    def _window(self, history: Sequence[Message], pinned: int) -> list[Message]:
        window = [history[0]] if self.head == 1 else list(history[:self.head])
        if self.head <= pinned < self.cut:
            window.append(history[pinned])
        if self.summary is not None:  # it stands for the turns just before the ones kept
            window.append(self.summary)
        window.extend(history[self.cut:])
        return window

    def _compact_or_trim(
        self, dropped: list[Message], failures: list[str]
    ) -> Generator[CompactionCall, InferenceResponse, InferenceResponse | None]:
        """Summarise ``dropped`` with the compactor; when it fails, leave them out
        unsummarised (DESIGN: a failing compactor falls back to trimming) and say so in
        ``failures``. A cancel or a timeout is no failure to fall back from: it stops the run."""
        assert self.compactor is not None
        try:
            return (yield from self._compact(self.compactor, dropped))
        except AgentError as exc:
            if exc.kind in (ErrorKind.CANCELLED, ErrorKind.TIMEOUT):
                raise
            error: Exception = exc
        except Exception as exc:
            error = exc
        failures.append(f"compactor failed ({type(error).__name__}: {error}); "
                        f"leaving {len(dropped)} message(s) out without a summary")
        return None

    def _compact(
        self, provider: Provider, dropped: list[Message]
    ) -> Generator[CompactionCall, InferenceResponse, InferenceResponse]:
        room = max(self.budget // 4, 256)  # the summary's share of the budget, in tokens
        transcript = _transcript(dropped, self.summary)
        limit = self.budget * CHARS_PER_TOKEN  # the compaction request stays within the budget too
        if len(transcript) > limit:
            transcript = "[...]\n" + transcript[-limit:]
        request = InferenceRequest(messages=[Message.user(transcript)], instructions=COMPACT_INSTRUCTIONS, max_tokens=room)
        response = yield provider, request
        text = response.text.strip()[: room * CHARS_PER_TOKEN]
        self.summary = Message.user(SUMMARY_HEADER + text)
        return response


def _head(history: Sequence[Message]) -> int:
    """How many messages open ``history`` up to its first user message (tool results are
    not one), that one included: they always stay. 1 for a history that opens with it."""
    for i, m in enumerate(history):
        if m.role is Role.USER and not m.tool_results_blocks:
            return i + 1
    return 1


def _units(history: Sequence[Message], start: int) -> list[tuple[int, int]]:
    """``(begin, end)`` index ranges of ``history[start:]`` that are left out only whole:
    a message, or a model turn together with the message carrying its tool results."""
    units: list[tuple[int, int]] = []
    for i in range(start, len(history)):
        if history[i].tool_results_blocks and units and units[-1][1] == i:
            units[-1] = (units[-1][0], i + 1)
        else:
            units.append((i, i + 1))
    return units


def _transcript(messages: Sequence[Message], summary: Message | None) -> str:
    lines: list[str] = []
    if summary is not None:
        lines.append(summary.text)
    for m in messages:
        for b in m.content:
            if b.type == "text" and b.text:
                lines.append(f"{m.role.value}: {b.text}")
            elif b.type == "tool_use":
                lines.append(f"tool call {b.name}({json.dumps(b.input or {}, ensure_ascii=False, default=str)})")
            elif b.type == "tool_result":
                lines.append(f"tool result{' (error)' if b.is_error else ''}: {b.content or ''}")
            elif b.type == "image":
                lines.append(f"{m.role.value}: [image]")
    lines.append("Summarise the conversation above.")
    return "\n".join(lines)


def usage_of(fitted: Fitted) -> Usage:
    """The usage a fitting cost (the compactor's call, if any)."""
    return fitted.compaction.usage if fitted.compaction is not None else Usage()
