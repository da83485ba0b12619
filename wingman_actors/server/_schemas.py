"""The JSON shapes of the HTTP API: request bodies (unknown fields refused, JSON types
strict: ``false`` is not ``0``, ``"2"`` is not ``2``) and responses.

Field names follow the Wingman reference API.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema

from ._limits import MAX_CONTEXT_BUDGET, MAX_MCP_SERVERS, MAX_STEPS, MAX_TASKS, MAX_TIMEOUT_S, MAX_WORKERS
from ._names import NO_NUL, SPACES, Name, NameOrNull, PathText
from ._redact import SECRET_ALPHABET

__all__ = [
    "AbortOut",
    "AgentCreate",
    "AgentOut",
    "AgentUpdate",
    "AuthCredentialIn",
    "AuthSetIn",
    "AuthStatusOut",
    "DelegationOut",
    "ErrorOut",
    "StrictIn",
    "FleetCreate",
    "FleetOut",
    "FleetResultOut",
    "FleetRunIn",
    "FleetUpdate",
    "FormationOut",
    "FormationRunIn",
    "MCPServerIn",
    "MessageIn",
    "MessageOut",
    "Name",
    "NameOrNull",
    "PathText",
    "RUN_STATUSES",
    "SPACES",
    "SessionResumeIn",
    "ProviderAuthOut",
    "ProviderOut",
    "RunOut",
    "RunForkIn",
    "RunResumeIn",
    "VisitOut",
    "SessionCreate",
    "SessionOut",
    "SessionUpdate",
    "StatusOut",
    "TaskIn",
]


_Delegates = Annotated[list[Annotated[str, Field(min_length=1)]], Field(json_schema_extra={"uniqueItems": True})]
"""Stored agents' ids, each once (the server refuses a repeat, naming it)."""


def _is_int(annotation: Any) -> bool:
    if annotation is int:
        return True
    return any(_is_int(arg) for arg in get_args(annotation) if arg is not type(None))


class StrictIn(BaseModel):
    """A request body: unknown fields refused, JSON types strict (``false`` is not ``0``, ``"2"``
    is not ``2``), and an integer field takes ``2.0`` too, as JSON Schema's integer does."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _whole_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        ints = _INT_FIELDS.get(cls)
        if ints is None:
            ints = _INT_FIELDS[cls] = frozenset(n for n, f in cls.model_fields.items() if _is_int(f.annotation))
        if not ints:
            return data
        return {k: int(v) if k in ints and type(v) is float and v.is_integer() else v for k, v in data.items()}


_INT_FIELDS: dict[type[BaseModel], frozenset[str]] = {}


RUN_STATUSES = ("running", "succeeded", "failed", "cancelled", "suspended", "interrupted", "expired")
"""The statuses a recorded run may have (``GET /runs?status=``)."""


class _In(StrictIn):
    pass


class ErrorOut(BaseModel):
    """Every error: ``error`` says what went wrong and how to fix it; the other fields appear
    when they apply."""

    error: str
    fields: list[str] | None = Field(default=None, description="400: the fields at fault, e.g. tasks[1].message")
    problems: list[str] | None = Field(default=None, description="400: every problem of a formation declaration")
    kind: str | None = Field(
        default=None, description="500/502/504: runtime, agent, rate_limit, network, invalid, cancelled or timeout; "
                                  "409: cancelled (the run was cancelled), mismatch (the formation changed shape "
                                  "since the run began), formation_deleted, not_journalled, fleet, or the run's "
                                  "status; in_use (a formation other formations nest)"
    )
    run_id: str | None = Field(default=None, description="a failed formation or fleet run's record (GET /runs/{id})")
    run_status: str | None = Field(default=None, description="409: the run's status")
    node: str | None = Field(default=None, description="the formation node that failed")
    provider: str | None = Field(default=None, description="the provider that failed")
    provider_status: int | None = Field(default=None, description="the provider's HTTP status")
    used_by: list[str] | None = Field(
        default=None, description="409 (kind in_use): the ids of the formations that nest the formation"
    )


# -- providers and auth ----------------------------------------------------------------


class ProviderOut(BaseModel):
    """A registered model provider."""

    id: str
    name: str
    auth_types: list[str]
    description: str
    env: list[str]


class AuthCredentialIn(_In):
    """One provider's credential."""

    type: Literal["api_key"] = "api_key"
    key: str = Field(
        min_length=1, pattern=rf"^{SECRET_ALPHABET}+$",
        description="the secret (letters, digits and ._~+/=-); stored in SQLite, never returned in full",
    )


class AuthSetIn(_In):
    """``PUT /provider/auth``: credentials by provider id (others are kept)."""

    providers: dict[str, AuthCredentialIn]


class ProviderAuthOut(BaseModel):
    """Whether a provider has a credential; the key itself is never returned."""

    type: str
    configured: bool
    key_hint: str = Field(description="the key's last four characters, e.g. '…wxyz'")


class AuthStatusOut(BaseModel):
    """``GET /provider/auth``."""

    providers: dict[str, ProviderAuthOut]
    updated_at: str | None = None


class StatusOut(BaseModel):
    """A plain acknowledgement: ``{"status": "ok"}`` or ``{"status": "deleted"}``."""

    status: str


# -- agents ----------------------------------------------------------------------------


_URL = re.compile(r"^https?://[^\x00\s]+$")


class MCPServerIn(_In):
    """An MCP server of an agent: ``command`` (started by the server, speaking MCP over stdio)
    or ``url`` (streamable HTTP), not both."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["command"]}, {"required": ["url"]}]})

    command: list[str] | SkipJsonSchema[None] = Field(
        default=None,
        json_schema_extra={"minItems": 1, "items": {"type": "string", "minLength": 1, "pattern": NO_NUL}},
        description="the program and its arguments: an executable under the work root (relative to it), the "
                    "server's Python, or a program the server allows (serve --mcp-command PROGRAM); path "
                    "arguments under the work root; it runs in the work root",
    )
    url: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra={"pattern": _URL.pattern},
        description="a streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp",
    )
    prefix: str = Field(
        default="", pattern=r"^[A-Za-z0-9_-]{0,32}$",
        description="prepended to the server's tool names (to tell two servers' tools apart)",
    )
    include: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None, description="only these of the server's tools (by its names); all when omitted"
    )

    # Type-checked before pydantic tries the union's branches, whose errors name them
    # ("command.list[str]", "command.none") instead of the field and its fix. None is only
    # the default of the one left out: a null given is the wrong JSON type, as the document
    # says (these validators run on given values only).
    @field_validator("command", mode="before")
    @classmethod
    def _command_type(cls, value: Any) -> Any:
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError('give a list of strings: the program and its arguments, e.g. ["npx", "-y", "@scope/server"]'
                             + ("; leave command out rather than null when the server has a url" if value is None
                                else ""))
        return value

    @field_validator("url", mode="before")
    @classmethod
    def _url_type(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("give a string, an http:// or https:// endpoint, e.g. \"http://127.0.0.1:8000/mcp\""
                             + ("; leave url out rather than null when the server has a command" if value is None
                                else ""))
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (not value or not all(value) or any("\x00" in v for v in value)):
            raise ValueError('give the program and its arguments, e.g. ["npx", "-y", "@scope/server"]: '
                             "no empty string, no NUL character")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not _URL.match(value):
            raise ValueError(f"give an http:// or https:// endpoint, e.g. http://127.0.0.1:8000/mcp, got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerIn:
        if (self.command is None) == (self.url is None):
            raise ValueError('give exactly one of "command": ["program", "arg", ...] (stdio) or "url": '
                             '"http://host:port/mcp" (streamable HTTP)')
        return self


class AgentCreate(_In):
    """``POST /agents``."""

    name: Name
    instructions: str = ""
    tools: list[str] = Field(default_factory=list, description="built-in tool names")
    provider: str | None = Field(default=None, description="a provider id from GET /provider")
    model: str | None = None
    options: dict[str, Any] = Field(
        default_factory=dict, description="provider options (max_tokens, temperature, base_url, ...)"
    )
    output_schema: dict[str, Any] | None = Field(default=None, description="a JSON Schema the answer must match")
    delegates: _Delegates = Field(
        default_factory=list,
        description="ids of agents this one may delegate tasks to (tools list_agents, delegate), each once",
    )
    max_delegation_depth: int = Field(default=3, ge=0, le=10, description="how deep the delegation tree may grow")
    skills: list[PathText] = Field(
        default_factory=list, description="skill folders (each with a SKILL.md) under the work root; relative to it"
    )
    mcp: list[MCPServerIn] = Field(
        default_factory=list, max_length=MAX_MCP_SERVERS,
        description="MCP servers whose tools the agent gets: {\"command\": [...]} or {\"url\": ...}; one "
                    "connection per server, shared by every run and closed when the server stops",
    )
    max_steps: int | None = Field(
        default=None, ge=1, le=MAX_STEPS, description="the most model calls with tools per run (default 50)"
    )
    context_budget: int | None = Field(
        default=None, ge=256, le=MAX_CONTEXT_BUDGET,
        description="the most (estimated) input tokens of one request: the oldest turns are left out to stay under it",
    )


class AgentUpdate(_In):
    """``PUT /agents/{id}``: a partial update; omitted fields are unchanged, null clears."""

    name: NameOrNull = Field(default=None, description="cannot be null")
    instructions: str | None = None
    tools: list[str] | None = None
    provider: str | None = None
    model: str | None = None
    options: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    delegates: _Delegates | None = None
    max_delegation_depth: int | None = Field(default=None, ge=0, le=10)
    skills: list[PathText] | None = None
    mcp: list[MCPServerIn] | None = Field(default=None, max_length=MAX_MCP_SERVERS)
    max_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS)
    context_budget: int | None = Field(default=None, ge=256, le=MAX_CONTEXT_BUDGET)


class AgentOut(BaseModel):
    """A stored agent."""

    id: str
    name: str
    instructions: str
    tools: list[str]
    provider: str | None
    model: str | None
    options: dict[str, Any]
    output_schema: dict[str, Any] | None
    delegates: list[str] = Field(default_factory=list)
    max_delegation_depth: int = 3
    skills: list[str] = Field(default_factory=list)
    mcp: list[dict[str, Any]] = Field(default_factory=list, description="its MCP servers, as given")
    max_steps: int | None = None
    context_budget: int | None = None
    created_at: str
    updated_at: str


# -- sessions --------------------------------------------------------------------------


class SessionCreate(_In):
    """``POST /sessions`` (the body may be omitted)."""

    title: str = ""
    work_dir: PathText | None = Field(default=None, description="under the server's work root; relative to it")


class SessionUpdate(_In):
    """``PUT /sessions/{id}``: metadata only; history grows through the message routes."""

    title: str | None = None
    work_dir: PathText | None = None


class SessionOut(BaseModel):
    """A stored session; ``history`` holds its messages, oldest first."""

    id: str
    title: str
    work_dir: str
    history: list[dict[str, Any]]
    created_at: str
    updated_at: str


class MessageIn(_In):
    """``POST /sessions/{id}/message`` and ``/message/stream``."""

    agent_id: str = Field(min_length=1)
    message: str = Field(min_length=1)


class SessionResumeIn(_In):
    """``POST /sessions/{id}/resume``."""

    agent_id: str = Field(min_length=1, description="the agent that was running when the session was suspended")
    answer: Any = Field(description="what the pending interrupt() (or ask_human) returns: any JSON")


class AbortOut(BaseModel):
    """``POST /sessions/{id}/abort``: how many runs in flight were cancelled."""

    session_id: str
    aborted: int


class DelegationOut(BaseModel):
    """One delegated run (a task of the ``delegate`` tool), with the runs it delegated."""

    agent: str = Field(description="the name of the agent that ran the task")
    task: str
    depth: int = Field(description="1 for a task handed out by the agent the message was sent to")
    response: str | None = Field(default=None, description="its final answer; null when it failed")
    error: str | None = Field(default=None, description="why it failed or was cancelled")
    usage: dict[str, int]
    delegations: list[DelegationOut] = Field(default_factory=list)


class MessageOut(BaseModel):
    """The result of one message."""

    response: str
    output: Any = None
    tool_calls: list[dict[str, Any]]
    usage: dict[str, int]
    steps: int
    delegations: list[DelegationOut] = Field(
        default_factory=list, description="the delegation tree: runs the agent's delegate calls started, in order"
    )
    status: Literal["succeeded", "suspended"] = Field(
        default="succeeded",
        description="suspended: a tool asked a person (ask_human, interrupt()); answer with "
                    "POST /sessions/{id}/resume. Nothing of a suspended message is kept in the history until then.")
    interrupt: Any = Field(default=None, description="a suspended message's question: the interrupt's payload")


# -- fleets ----------------------------------------------------------------------------


class FleetCreate(_In):
    """``POST /fleets``."""

    name: Name
    agent_id: str = Field(min_length=1)
    worker_count: int = Field(
        default=0, ge=0, le=MAX_WORKERS, description=f"sessions at once, at most {MAX_WORKERS}; 0: one per task, up to {MAX_WORKERS}"
    )
    work_dir: PathText | None = None


class FleetUpdate(_In):
    """``PUT /fleets/{id}``: a partial update."""

    name: NameOrNull = Field(default=None, description="cannot be null")
    # Optional (so a wrong type is one error naming the field, not one per union branch), the
    # null refused by the route; the document declares the value only, as NameOrNull does.
    agent_id: Annotated[Annotated[str, Field(min_length=1)] | None,
                        WithJsonSchema({"type": "string", "minLength": 1})] = Field(
        default=None, description="cannot be null")
    worker_count: Annotated[Annotated[int, Field(ge=0, le=MAX_WORKERS)] | None,
                            WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_WORKERS})] = Field(
        default=None, description="cannot be null")
    work_dir: PathText | None = Field(default=None, description="null: the work root")


class FleetOut(BaseModel):
    """A stored fleet."""

    id: str
    name: str
    agent_id: str
    worker_count: int
    work_dir: str | None
    created_at: str
    updated_at: str


class TaskIn(_In):
    """One task of a fleet run."""

    message: str = Field(min_length=1)
    work_dir: PathText | None = Field(default=None, description="relative to the fleet's work_dir")
    instructions: str | None = None
    data: Any = None


class FleetRunIn(_In):
    """``POST /fleets/{id}/run`` and ``/run/stream``."""

    tasks: list[TaskIn] = Field(min_length=1, max_length=MAX_TASKS)


class FleetResultOut(BaseModel):
    """One task's outcome; ``error`` is null when it succeeded."""

    task_index: int
    worker_name: str
    response: str
    output: Any = None
    steps: int
    usage: dict[str, int]
    data: Any = None
    error: str | None = None
    error_kind: str | None = None


# -- formations and runs -----------------------------------------------------------------


class FormationOut(BaseModel):
    """A stored formation declaration."""

    id: str
    name: str
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    created_at: str
    updated_at: str


class FormationRunIn(_In):
    """``POST /formations/{id}/run`` and ``/run/stream``."""

    input: Any = Field(default=None, description="what the source nodes receive")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description="seconds for the whole run")


class RunResumeIn(_In):
    """``POST /runs/{id}/resume``."""

    answer: Any = Field(
        default=None,
        description="for a suspended run: what its pending interrupt() returns (any JSON; null, as omitting it, "
                    "is no answer: the run asks again); omit it to resume a failed, cancelled or interrupted run")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description="seconds for the resumed run")


class RunForkIn(_In):
    """``POST /runs/{id}/fork``: exactly one of ``output`` and ``input``."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": ["output"]}, {"required": ["input"]}]})

    at: Any = Field(
        description='the node to fork at, for its first visit, or ["node", visit] (a visit number >= 1; '
                    "GET /runs/{id}/history lists them)",
        json_schema_extra={"anyOf": [{"type": "string"}, {"type": "array", "prefixItems": [
            {"type": "string"}, {"type": "integer", "minimum": 1}], "minItems": 2, "maxItems": 2}]})
    output: Any = Field(default=None, description="that visit's output in the new run (any JSON, null included)")
    input: Any = Field(
        default=None, description="instead of output: run the visit again with this input, in place of what its "
                                  "predecessors deliver (a join's: {predecessor: output, ...}); it must fit the "
                                  "node's parameter type")
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, description="seconds for the new run")

    @field_validator("at")
    @classmethod
    def _node_or_visit(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and type(value[1]) in (int, float):
            visit = value[1]
            if visit >= 1 and visit == int(visit):
                return [value[0], int(visit)]
        raise ValueError(f'give a node name, or ["node", visit] with a visit number >= 1, e.g. ["draft", 2]; '
                         f"got {value!r}")

    @model_validator(mode="after")
    def _one_of(self) -> RunForkIn:
        if len({"output", "input"} & self.model_fields_set) != 1:
            raise ValueError("give exactly one of output (the visit's new output) or input (run the visit again "
                             "with this input)")
        return self

    def target(self) -> str | tuple[str, int]:
        """``at`` as ``Formation.fork`` takes it."""
        return self.at if isinstance(self.at, str) else (str(self.at[0]), int(self.at[1]))


class VisitOut(BaseModel):
    """One node visit of a run, in the order visits finished (``GET /runs/{id}/history``)."""

    node: str
    visit: int = Field(description="the node's visit number, 1 for its first")
    status: Literal["succeeded", "failed", "skipped", "suspended"] = Field(
        description="succeeded (output journalled), failed (into its error edges; or it failed the run, which "
                    "a resume runs again), skipped (on_error=skip) or suspended (waiting at an interrupt)")
    output: Any = Field(default=None, description="the output; for failed why (its attempts and error), for skipped "
                                                  "the reason, for suspended the interrupt's payload")
    started: str | None = Field(default=None, description="when its input was ready (ISO 8601, UTC)")
    finished: str | None = Field(default=None, description="when it was journalled (ISO 8601, UTC)")
    error: str | None = Field(default=None, description="a failed (or skipped) visit's error: 'ValueError: ...'")
    attempts: int | None = Field(default=None, description="how many attempts a failed visit made")


_RUN_ID_DOC = "the run's id again: JSON names a run's id `run_id` everywhere (`id` is kept for the clients that read it)"


class RunOut(BaseModel):
    """A recorded run: of a formation (``kind`` = ``formation``) or of a fleet (``fleet``,
    whose ``input`` is its tasks and ``output`` its per-task results)."""

    id: str
    kind: Literal["formation", "fleet"] = "formation"
    formation_id: str | None = None
    formation_name: str | None = None
    fleet_id: str | None = None
    fleet_name: str | None = None
    status: Literal["running", "succeeded", "failed", "cancelled", "suspended", "interrupted", "expired"] = Field(
        description="running; succeeded, failed or cancelled; suspended (waiting for an answer: see interrupt), "
                    "interrupted (the server stopped while it ran) or expired (suspended too long). Suspended, "
                    "interrupted, failed and cancelled formation runs can be resumed: POST /runs/{id}/resume")
    interrupt: dict[str, Any] | None = Field(
        default=None, description='a suspended run\'s pending question: {"node", "payload"}')
    input: Any = None
    output: Any = None
    outputs: dict[str, Any]
    nodes: dict[str, Any]
    usage: dict[str, int]
    error: str | None = None
    error_kind: str | None = None
    failed_node: str | None = None
    duration_s: float | None = None
    created_at: str
    finished_at: str | None = None

    @computed_field(description=_RUN_ID_DOC)  # type: ignore[prop-decorator]
    @property
    def run_id(self) -> str:
        return self.id
