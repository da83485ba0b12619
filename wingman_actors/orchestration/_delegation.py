"""Delegation: the ``list_agents`` and ``delegate`` tools of an agent with ``delegates=``.

``delegate`` runs each task in a fresh session of the named agent, concurrently (at most
the delegating agent's ``tool_concurrency`` at once), and answers with a JSON array in task
order: ``{"agent", "result"}`` or ``{"agent", "error"}``. The first task to fail cancels
its siblings; cancelling the delegating run cancels every task it started. Each task's run
is reported to the session (:func:`~wingman_actors.agents._result.report_child_run`), which hangs
it under the ``delegate`` call's trace entry and adds its usage to the parent's.

Depth travels in a context variable: a child runs at its parent's depth + 1, under the
root agent's ``max_delegation_depth`` (the limit of the agent that started the tree).

Delegation nests: a registered agent built without ``delegates=`` that is reached through
``delegate`` gets the delegating agent's registry for that run, while the depth limit
leaves room for another level, so it may hand tasks on in turn.

Sub-agent events: each task's start and end are ``subagent_start`` / ``subagent_stop``
events (:mod:`wingman_actors.events`) on the delegating agent's bus and on the buses of
the agents above it in the tree, as they happen, with the child's depth and session id
and the delegating session's id. The child session's own events (session, model, tool), on
the child agent's bus, carry the same depth and parent session id.
"""

from __future__ import annotations

import contextvars
import json
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from .._cancel import CancelToken
from ..agents._agent import Agent
from ..agents._result import ChildRun, Result, report_child_run, report_live_child
from ..agents._session import Session
from ..core import Message, ToolDefinition, Usage
from ..errors import AgentError, ErrorKind, ToolError
from ..events import Event, EventBus
from ..tools import ToolContext, format_validation_error
from ._registry import AgentRegistry

__all__ = ["DelegateTool", "DelegationTask", "ListAgentsTool", "agents_section"]


@dataclass(frozen=True)
class _Frame:
    depth: int
    """How many delegations separate the running agent from the root (0: the root)."""
    limit: int
    """The root agent's ``max_delegation_depth``."""
    buses: tuple[EventBus, ...] = ()
    """The event buses of the delegating agents above, which see sub-agent events."""


_frame: contextvars.ContextVar[_Frame | None] = contextvars.ContextVar("wingman_delegation", default=None)


class DelegationTask(BaseModel):
    """One task of a ``delegate`` call."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(description="the name of the agent to hand the task to (see list_agents)")
    task: str = Field(description="what the agent should do, self-contained")
    context: str | None = Field(default=None, description="background the agent needs, sent before the task")

    @field_validator("task")
    @classmethod
    def _says_something(cls, task: str, info: ValidationInfo) -> str:
        if not task.strip():  # a child would be run on an empty message: its model call wasted
            agent = info.data.get("agent", "the agent")
            raise ValueError(f"the task is empty: say what agent {agent!r} should do, self-contained")
        return task


class _DelegateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[DelegationTask] = Field(min_length=1)


_DELEGATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tasks": {
            "type": "array",
            "minItems": 1,
            "description": "the tasks to run, concurrently; results come back in this order",
            "items": {
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "description": "the agent's name (see list_agents)"},
                    "task": {"type": "string", "minLength": 1, "description": "what the agent should do, self-contained"},
                    "context": {"type": "string", "description": "background sent before the task (optional)"},
                },
                "required": ["agent", "task"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["tasks"],
    "additionalProperties": False,
}


def agents_section(registry: AgentRegistry, owner: str) -> str:
    """The "Available agents" section of a delegating agent's system prompt."""
    infos = registry.list(exclude=owner)
    if not infos:
        return ""
    lines = [f"- {info.name}: {info.description}" for info in infos]
    return (
        "## Available agents\n"
        "Hand tasks to these agents with the delegate tool; independent tasks in one call run "
        "concurrently. Each agent starts fresh: put everything it needs in the task or its context.\n"
        + "\n".join(lines)
    )


class ListAgentsTool:
    """``list_agents``: the registered agents (but the caller), sorted by name, as JSON."""

    name = "list_agents"
    description = "List the agents you can delegate tasks to, with what each is good at."

    def __init__(self, registry: AgentRegistry, owner: str) -> None:
        self.registry = registry
        self.owner = owner
        self._definition = ToolDefinition(name=self.name, description=self.description)

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        return self._definition

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        """Answer ``[{"name", "description"}, ...]``."""
        infos = self.registry.list(exclude=self.owner)
        return json.dumps([{"name": i.name, "description": i.description} for i in infos], ensure_ascii=False)


class DelegateTool:
    """``delegate``: run tasks in fresh sessions of registered agents, concurrently.

    Args:
        registry: where agents are looked up.
        owner: the delegating agent's name (it may not delegate to itself).
        max_depth: the delegation depth limit when this agent is the root of the tree.
        concurrency: at most this many tasks run at once.
    """

    name = "delegate"
    description = (
        "Hand tasks to other agents (see list_agents). Tasks run concurrently, each in a fresh "
        "session of its agent; the answer is a JSON array in task order of "
        '{"agent", "result"} or {"agent", "error"}. If one task fails, the others are cancelled.'
    )

    def __init__(
        self, registry: AgentRegistry, owner: str, *, max_depth: int, concurrency: int, events: EventBus | None = None
    ) -> None:
        self.registry = registry
        self.owner = owner
        self.max_depth = max_depth
        self.concurrency = concurrency
        self.events = events
        self._definition = ToolDefinition(name=self.name, description=self.description, input_schema=_DELEGATE_SCHEMA)

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model."""
        return self._definition

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        """Run the tasks; refusals (unknown agent, itself, too deep) are :class:`ToolError`."""
        try:
            tasks = _DelegateInput.model_validate(input or {}).tasks
        except ValidationError as exc:
            raise ToolError(format_validation_error(self.name, exc), tool=self.name) from exc
        frame = _frame.get()
        depth = frame.depth if frame is not None else 0
        limit = frame.limit if frame is not None else self.max_depth
        if depth + 1 > limit:
            raise ToolError(
                f"cannot delegate: the delegation depth limit is {limit} and agent {self.owner!r} already "
                f"runs at depth {depth}. Do these tasks yourself with your own tools.",
                tool=self.name,
            )
        agents = self._resolve(tasks)
        buses = frame.buses if frame is not None else ()
        if self.events is not None and self.events not in buses:
            buses = (*buses, self.events)
        child_frame = _Frame(depth + 1, limit, buses)
        if depth + 1 < limit:  # room for one more level: children without a registry of their own inherit this one
            agents = [a if a.delegates is not None else a.with_overrides(delegates=self.registry) for a in agents]
        children = self._run_all(tasks, agents, child_frame, ctx)
        for child in children:
            report_child_run(child)
        if ctx.token is not None:
            ctx.token.check()  # the delegating run itself was cancelled: stop it, not only its tasks
        return json.dumps([_answer(child) for child in children], ensure_ascii=False)

    def _resolve(self, tasks: list[DelegationTask]) -> list[Agent]:
        known = self.registry.names()
        problems: list[str] = []
        for i, task in enumerate(tasks):
            if task.agent == self.owner:
                problems.append(
                    f"task {i}: agent {self.owner!r} cannot delegate to itself; do that task yourself "
                    "or pick another agent"
                )
            elif task.agent not in known:
                others = [n for n in known if n != self.owner]
                problems.append(f"task {i}: no agent named {task.agent!r}; available agents: {others or 'none'}")
        if problems:
            raise ToolError("; ".join(problems), tool=self.name)
        agents: list[Agent] = []
        for i, task in enumerate(tasks):
            try:
                agents.append(self.registry.create(task.agent))
            except Exception as exc:  # unregistered meanwhile, or its factory failed
                raise ToolError(f"task {i}: cannot start agent {task.agent!r}: {exc}", tool=self.name) from exc
        return agents

    def _run_all(
        self, tasks: list[DelegationTask], agents: list[Agent], frame: _Frame, ctx: ToolContext
    ) -> list[ChildRun]:
        group = CancelToken(parent=ctx.token)
        children: list[ChildRun | None] = [None] * len(tasks)
        workers = min(len(tasks), self.concurrency)
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"wingman-delegate-{self.owner}")
        try:
            futures: dict[Future[ChildRun], int] = {}
            for i, (task, agent) in enumerate(zip(tasks, agents, strict=True)):
                run = contextvars.copy_context().run  # each child sees its own frame
                futures[pool.submit(run, self._run_one, task, agent, frame, group, ctx)] = i
            remaining = set(futures)
            while remaining:
                done, remaining = wait(remaining, return_when=FIRST_COMPLETED)
                for fut in done:
                    i = futures[fut]
                    child = fut.result()  # _run_one turns every failure into a ChildRun
                    children[i] = child
                    if child.error is not None and not group.cancelled:
                        group.cancel(f"sibling task {i} (agent {child.agent!r}) failed")
        finally:
            pool.shutdown(wait=True)
        return [c for c in children if c is not None]

    def _run_one(
        self, task: DelegationTask, agent: Agent, frame: _Frame, group: CancelToken, ctx: ToolContext
    ) -> ChildRun:
        _frame.set(frame)  # in this task's own copy of the context (see _run_all)
        session: Session | None = None

        def child(result: Result | None = None, error: str | None = None) -> ChildRun:
            messages = list(session.history) if session is not None else []
            spent = session._spent_so_far() if session is not None and result is None else None  # paid for
            return ChildRun(
                agent=task.agent, task=task.task, depth=frame.depth, result=result, error=error, messages=messages,
                spent=spent or Usage(),
            )

        history = [Message.user(task.context, sender=self.owner)] if task.context else []
        try:
            group.check()  # a sibling failed, or the delegating run stopped, before this task started
            session = Session(agent, work_dir=ctx.work_dir, history=history)
            session._lineage = (frame.depth, ctx.session_id or None)  # its own events carry them too
            report_live_child(session._spent_so_far)  # the parent, cut meanwhile, counts what it spent
            for bus in frame.buses:
                if "subagent_start" in bus.kinds:
                    bus.emit(Event("subagent_start", task.agent, session.id, depth=frame.depth,
                                   parent_session_id=ctx.session_id or None, message=task.task))
            with session:
                result = session.run(Message.user(task.task, sender=self.owner), parent_token=group)
        except AgentError as exc:
            return self._stopped(frame, ctx, session, child(error=exc.message if exc.kind is ErrorKind.CANCELLED
                                                             else str(exc)))
        except Exception as exc:
            return self._stopped(frame, ctx, session, child(error=f"{type(exc).__name__}: {exc}"))
        return self._stopped(frame, ctx, session, child(result=result))

    @staticmethod
    def _stopped(frame: _Frame, ctx: ToolContext, session: Session | None, run: ChildRun) -> ChildRun:
        """``run``, after its ``subagent_stop`` event went to the buses above it."""
        if session is not None:
            status = "succeeded" if run.result is not None else "failed"
            for bus in frame.buses:
                if "subagent_stop" in bus.kinds:
                    bus.emit(Event("subagent_stop", run.agent, session.id, depth=run.depth,
                                   parent_session_id=ctx.session_id or None, result=run.result, status=status,
                                   error=run.error, usage=run.usage))
        return run


def _answer(child: ChildRun) -> dict[str, Any]:
    if child.result is None:
        return {"agent": child.agent, "error": child.error}
    return {"agent": child.agent, "result": _output(child.result)}


def _output(result: Result) -> Any:
    if result.output is None or isinstance(result.output, str):
        return result.response
    return pydantic.TypeAdapter(Any).dump_python(result.output, mode="json")
