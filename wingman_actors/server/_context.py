"""What every route shares: the configuration, the store and run journal, the worker threads,
the function registry, the per-session locks and runs in flight; and how a stored agent becomes a runnable
:class:`~wingman_actors.Agent` with credentials from the auth store.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..agents._agent import Agent
from ..agents._middleware import Middleware, RunContext
from ..agents._session import Session
from ..agents._structured import OutputSchema
from ..core import Message
from ..errors import AgentError, ErrorKind
from ..orchestration import AgentRegistry
from ..providers import get_provider_meta, list_providers, new_provider
from ..store import JournalStore
from ..tools import BUILTIN_TOOL_NAMES, Tool, bash_tool
from ..tools._human import ask_human
from ._config import ServerConfig
from ._declarations import Declarations
from ._errors import ApiError, invalid
from ._flights import Flights
from ._functions import FunctionRegistry
from ._journal import MaskedJournal
from ._landings import Landings
from ._mcp import MCPPool, allowed_programs, check_mcp
from ._provider_cache import ProviderCache, close_provider
from ._redact import Redactor
from ._schemas import AgentOut
from ._started import StartedFormations
from ._store import Store
from ._team import build_team, check_team, skill_paths
from ._threads import WorkerPool

__all__ = ["ServerContext", "agent_tool_names"]

_PLACEHOLDER_KEY = "validation-only-placeholder"
_SERVER_TOOLS: dict[str, Tool] = {"ask_human": ask_human}
"""Tools a stored agent may name beside the built-in ones: ``ask_human`` suspends a formation
run until ``POST /runs/{id}/resume`` answers it, and a session message until
``POST /sessions/{id}/resume`` does (a streamed message answers the model with an error)."""
TOOL_NAMES = (*BUILTIN_TOOL_NAMES, *_SERVER_TOOLS)
"""Every tool name a stored agent may list."""


def agent_tool_names(config: ServerConfig, functions: FunctionRegistry) -> list[str]:
    """The tool names a stored agent may list on this server: the built-in ones (``bash``
    unless ``--no-bash``), ``ask_human``, and the ``@tool`` functions of ``--functions``."""
    return [*(t for t in TOOL_NAMES if config.allow_bash or t != "bash"), *sorted(functions.tools)]


_NEEDS_MODEL = re.compile(r"needs a model, e\.g\. new_provider\([^{]*\{\s*\"model\":\s*\"([^\"]+)\"")
"""A provider's refusal of options without a model (``ProviderBase``), and its example model."""

_AUTH_HINT = 'PUT /provider/auth {{"providers": {{"{p}": {{"type": "api_key", "key": "..."}}}}}}'


def _needs_stored_key(provider: str, options: Mapping[str, Any]) -> bool:
    # Providers that cannot work without a key. The openai provider also serves keyless
    # local endpoints (vLLM, llama.cpp...), so it needs one only for the default endpoint.
    if provider == "anthropic":
        return True
    return provider == "openai" and not options.get("base_url")


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long for the file system
        return False


class _AbortGuard(Middleware):
    """Fails a run aborted before its cancel token existed (as ``Fleet`` does)."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        if self.reason is not None:
            raise AgentError(f"run cancelled: {self.reason}", kind=ErrorKind.CANCELLED)
        return None


class ServerContext:
    """The server's shared state. Built by :func:`~wingman_actors.server._app.create_app`.

    Args:
        config: the configuration.
        store: the open database.
        pool: the started worker threads.
        functions: the registered functions and predicates.
        redactor: the secrets to keep in (default: the store's).
        journal: the run journal formation runs are journalled in (in the database's file).
    """

    def __init__(
        self, config: ServerConfig, store: Store, pool: WorkerPool, functions: FunctionRegistry,
        redactor: Redactor | None = None, *, journal: JournalStore,
    ) -> None:
        self.config = config
        self.redactor = store.redactor if redactor is None else redactor
        self.store = store
        self.journal = journal
        self.run_journal = journal.queued_begins() if isinstance(journal, MaskedJournal) else journal
        """The journal of the formations run over HTTP: as ``journal``, its ``begin_run`` not waited for."""
        self.flights = Flights()
        self.started = StartedFormations()
        """Started formations kept for the next runs of their declarations (see :mod:`._started`)."""
        self.declarations = Declarations()
        """Stored formations' declarations, loaded (see :mod:`._declarations`)."""
        self.landings = Landings(asyncio.get_running_loop())
        """Runs answered on the event loop, woken in batches (see :mod:`._loop_runs`)."""
        self.formation_writes = threading.Lock()
        """Held while a formation is created, replaced or deleted: no two writes make a nesting loop."""
        """The formation runs in flight, by run id."""
        self.pool = pool
        self.functions = functions
        self.providers = ProviderCache()
        self.mcp = MCPPool(config.root, allowed_programs(config.mcp_commands, config.allow_bash),
                           connect_timeout=min(30.0, config.request_timeout))
        """The MCP connections of stored agents, closed when the server stops."""
        self._bash = bash_tool(mask=self.redactor.text)
        """``bash`` masking the stored keys too (not in the environment, but known to the server)."""
        self._locks: dict[str, threading.Lock] = {}
        self._live: dict[str, set[tuple[Session, _AbortGuard]]] = {}
        self._locks_guard = threading.Lock()

    # -- sessions -----------------------------------------------------------------------

    def session_lock(self, session_id: str) -> threading.Lock:
        """The lock serializing runs of one session, so concurrent messages never lose history."""
        with self._locks_guard:
            lock = self._locks.get(session_id)
            if lock is None:
                lock = self._locks[session_id] = threading.Lock()
            return lock

    def forget_session(self, session_id: str) -> None:
        """Drop a deleted session's lock."""
        with self._locks_guard:
            self._locks.pop(session_id, None)

    @contextmanager
    def open_session(
        self, session_id: str, agent: Agent, work_dir: str, history: list[Message]
    ) -> Iterator[Session]:
        """A :class:`Session` on the stored history, reachable by :meth:`abort` while open,
        closed (tool resources released) afterwards. It suspends in the run journal when a
        tool asks a person (``ask_human``, ``interrupt()``)."""
        guard = _AbortGuard()
        session = Session(agent.with_overrides(middleware=(guard, *agent.middleware)), work_dir=work_dir,
                          history=history, id=session_id, store=self.journal)
        entry = (session, guard)
        with self._locks_guard:
            self._live.setdefault(session_id, set()).add(entry)
        try:
            with session:
                yield session
        finally:
            with self._locks_guard:
                running = self._live.get(session_id)
                if running is not None:
                    running.discard(entry)
                    if not running:
                        del self._live[session_id]

    def abort(self, session_id: str, reason: str = "aborted with POST /sessions/{id}/abort") -> int:
        """Cancel every run in flight for ``session_id``; return how many."""
        with self._locks_guard:
            running = list(self._live.get(session_id, ()))
        for session, guard in running:
            guard.reason = reason  # a run that has not reached its loop yet stops there
            session.cancel(reason)
        return len(running)

    # -- work directories -------------------------------------------------------------

    def resolve_work_dir(self, value: str | None, *, base: str | Path | None = None, field: str = "work_dir") -> str:
        """An existing directory under the work root: ``value`` resolved (symlinks followed)
        against ``base`` (default the root); the root itself when ``value`` is None.

        Raises:
            ApiError: 400 naming ``field`` when it lies outside the root or is not a directory.
        """
        root = self.config.root
        if value is not None and "\x00" in value:
            raise invalid(field, "contains a NUL character, which no path can hold; send a directory name")
        start = Path(base) if base is not None else root
        try:
            path = start if value is None else Path(value).expanduser()
            if not path.is_absolute():
                path = start / path
            path = path.resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, an unknown ~user...
            raise invalid(field, f"{value!r} cannot be resolved to a directory: {exc}") from None
        if not path.is_relative_to(root):
            raise invalid(
                field,
                f"{value!r} is outside the server's work root {str(root)!r}; use a directory under it "
                "(relative paths are taken from the root; start the server with --work-root to change it)",
            )
        if not _is_dir(path):
            raise invalid(field, f"{value!r} is not an existing directory (resolved to {str(path)!r})")
        return str(path)

    def resolve_file(self, value: str, field: str) -> str:
        """A file path from a request (a replay cassette) resolved under the work root.

        The answer never says whether a path outside the root exists, or what it holds.

        Raises:
            ApiError: 400 naming ``field`` when it is outside the root or cannot be a path.
        """
        root = self.config.root
        if "\x00" in value:
            raise invalid(field, "contains a NUL character, which no path can hold; send a file name")
        try:
            path = Path(value)
            path = (path if path.is_absolute() else root / path).resolve()
        except (OSError, RuntimeError, ValueError):
            path = Path("/")  # unresolvable: refused below like any path outside the root
        if not path.is_relative_to(root):
            raise invalid(
                field,
                f"{value!r} is outside the server's work root {str(root)!r}; put the file under it "
                "(relative paths are taken from the root)",
            )
        return str(path)

    def _confined_options(self, provider: str | None, options: dict[str, Any]) -> dict[str, Any]:
        # Options that name files are read by the server: keep them under the work root.
        if provider == "replay" and isinstance(options.get("cassette"), str):
            options["cassette"] = self.resolve_file(options["cassette"], "options.cassette")
        return options

    def check_work_dir(self, stored: str, field: str = "work_dir") -> str:
        """A stored work_dir, checked again against the current root (it may have changed)."""
        return self.resolve_work_dir(stored, field=field)

    # -- agents -----------------------------------------------------------------------

    def check_agent(self, agent: AgentOut) -> None:
        """Refuse an agent that could not run, naming the field: unknown tools (or ``bash``
        under ``--no-bash``), an unknown provider, options the provider refuses, an
        ``api_key`` in options, an output_schema that is not a JSON Schema."""
        known = [*TOOL_NAMES, *sorted(self.functions.tools)]
        unknown = [t for t in agent.tools if t not in known]
        if unknown:
            raise invalid("tools", f"unknown tool(s) {unknown}; the tools are: {', '.join(known)} (@tool functions "
                                   "come from the server's --functions modules)")
        if len(set(agent.tools)) != len(agent.tools):
            raise invalid("tools", f"a tool is listed twice in {agent.tools}; list each once")
        if "bash" in agent.tools and not self.config.allow_bash:
            raise invalid("tools", "the bash tool is disabled on this server (--no-bash); remove 'bash'")
        if agent.output_schema is not None:
            try:
                OutputSchema.of(agent.output_schema)
            except (TypeError, ValueError) as exc:
                raise invalid("output_schema", str(exc)) from None
        if "api_key" in agent.options:
            raise invalid(
                "options.api_key",
                "keys are not stored on agents; store the provider's key with " + _AUTH_HINT.format(p=agent.provider),
            )
        check_mcp(agent.mcp, root=self.config.root, allowed=self.mcp.allowed)
        check_team(self, agent)
        if agent.provider is None:
            return
        known = [m.id for m in list_providers()]
        if agent.provider not in known:
            raise invalid("provider", f"unknown provider {agent.provider!r}; the providers are: {', '.join(known)}")
        options = self._confined_options(agent.provider, self._options(agent))
        if "api_key" in get_provider_meta(agent.provider).auth_types:
            options["api_key"] = _PLACEHOLDER_KEY  # options are checked here; the key at run time
        try:
            close_provider(new_provider(agent.provider, options))
        except AgentError as exc:
            needs = _NEEDS_MODEL.search(exc.message)
            if needs is not None and not options.get("model"):  # said in this API's JSON, not as a Python call
                raise invalid("model", f"the {agent.provider} provider needs a model: give the agent one, e.g. "
                                       f'"model": "{needs.group(1)}"') from None
            raise invalid("options", exc.message) from None
        except (TypeError, ValueError, OSError) as exc:
            raise invalid("options", f"provider {agent.provider!r} refuses these options: {exc}") from None

    @staticmethod
    def _options(agent: AgentOut) -> dict[str, Any]:
        options = dict(agent.options)
        if agent.model:
            options["model"] = agent.model
        return options

    def keyed_options(self, provider: str, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the key of ``provider`` from the auth store (never from the
        server's environment: ``""`` when it has none and can go without).

        Raises:
            ApiError: 400 when the provider needs a key the auth store lacks.
        """
        meta = get_provider_meta(provider)
        if "api_key" in meta.auth_types and "api_key" not in options:
            key = self.store.auth_key(provider)
            if key:
                options["api_key"] = key
            elif not _needs_stored_key(provider, options):
                options["api_key"] = ""
            else:
                raise ApiError(
                    400,
                    f"provider {provider!r} has no API key on this server (keys come from the auth "
                    f"store, not the environment): store one with {_AUTH_HINT.format(p=provider)}",
                    provider=provider,
                )
        return options

    def provider_options(self, provider: str, agent_id: str | None) -> dict[str, Any]:
        """What to ask ``provider`` with outside a run: the options of agent ``agent_id``
        (its ``base_url``...) when given, else none; the stored key added.

        Raises:
            ApiError: 404 for an unknown agent, 400 when it uses another provider or a key is missing.
        """
        options: dict[str, Any] = {}
        if agent_id is not None:
            record = self.store.get_agent(agent_id)
            if record.provider != provider:
                raise invalid("agent_id", f"agent {record.name!r} ({agent_id}) uses provider {record.provider!r}, "
                                          f"not {provider!r}; pass an agent of {provider!r} or none")
            options = self._confined_options(provider, self._options(record))
        return self.keyed_options(provider, options)

    def runnable_agent(self, record: AgentOut) -> AbstractContextManager[Agent]:
        """The stored agent as an :class:`Agent`, its provider (shared with the agent's other
        runs, see :class:`ProviderCache`) built with the key from the auth store, its skills
        loaded and its delegates (built the same way) registered.

        Raises:
            ApiError: 400 when the agent (or a delegate) has no provider, its provider needs
                a key the auth store lacks, or its configuration no longer builds.
        """
        return build_team(self, record, self._one_agent)

    @contextmanager
    def _one_agent(self, record: AgentOut, delegates: AgentRegistry | None) -> Iterator[Agent]:
        if not record.provider:
            raise ApiError(
                400,
                f"agent {record.name!r} ({record.id}) has no provider: set one with "
                f'PUT /agents/{record.id} {{"provider": "anthropic", "model": "..."}}',
            )
        options = self.keyed_options(record.provider, self._confined_options(record.provider, self._options(record)))
        try:
            entry = self.providers.acquire(record.id, record.provider, options)
        except AgentError as exc:
            raise ApiError(400, f"agent {record.name!r} ({record.id}): {exc.message}", provider=record.provider) from None
        try:
            tools = self._tools(record)
            for server in record.mcp:
                tools.extend(self.mcp.tools(server, agent=f"{record.name!r} ({record.id})"))
            try:
                agent = Agent(
                    record.name, instructions=record.instructions, provider=entry.provider, tools=tools,
                    output_schema=record.output_schema, delegates=delegates,
                    max_delegation_depth=record.max_delegation_depth, skills=skill_paths(self, record),
                    max_steps=record.max_steps, context_budget=record.context_budget,
                )
            except (TypeError, ValueError) as exc:
                hint = "; give its MCP servers a \"prefix\"" if record.mcp else ""
                raise ApiError(400, f"agent {record.name!r} ({record.id}) cannot run: {exc}{hint}") from None
            yield agent
        finally:
            self.providers.release(entry)

    def _tools(self, record: AgentOut) -> list[Tool | str]:
        """The agent's listed tools: server tools, ``bash`` and ``@tool`` functions as objects, other
        built-in ones by name."""
        return [_SERVER_TOOLS.get(t) or self.functions.tools.get(t) or (self._bash if t == "bash" else t)
                for t in record.tools if self.config.allow_bash or t != "bash"]

    def declared_agent(self, record: AgentOut) -> Agent:
        """The agent without a provider (nor its MCP tools): enough to validate a formation declaration."""
        return Agent(record.name, instructions=record.instructions, tools=self._tools(record),
                     output_schema=record.output_schema)
