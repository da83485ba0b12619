"""The server's records in SQLite: agents, sessions with their messages, fleets,
formations, provider credentials and formation runs.

Example:
    >>> import tempfile, os
    >>> store = Store(os.path.join(tempfile.mkdtemp(), "w.db"))
    >>> agent = store.create_agent({"name": "helper", "provider": "scripted"})
    >>> store.get_agent(agent.id).name
    'helper'
    >>> store.close()
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core import Message
from ._body import scrub
from ._errors import not_found
from ._ids import new_id, now
from ._redact import Redactor
from ._run_records import RunRecords
from ._schemas import AgentOut, FleetOut, FormationOut, ProviderAuthOut, SessionOut

__all__ = ["Store", "dump_message"]

_AGENT_FIELDS = (
    "name", "instructions", "tools", "provider", "model", "options", "output_schema", "delegates",
    "max_delegation_depth", "skills", "mcp", "max_steps", "context_budget",
)


def dump_message(message: Message) -> dict[str, Any]:
    """A message as stored and returned: its JSON without null fields."""
    return message.model_dump(mode="json", exclude_none=True)


def _dumps(value: Any) -> str:
    # scrub: text made at run time (a function's output, an error) may hold lone surrogates,
    # which no response could encode; a stored record must always be listable.
    return json.dumps(scrub(value), separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _merge_agent(agent: AgentOut, changes: Mapping[str, Any]) -> AgentOut:
    merged = agent.model_copy(update={k: v for k, v in changes.items() if k in _AGENT_FIELDS})
    if merged.options is None:
        merged.options = {}
    if merged.tools is None:
        merged.tools = []
    if merged.instructions is None:
        merged.instructions = ""
    if merged.delegates is None:
        merged.delegates = []
    if merged.skills is None:
        merged.skills = []
    if merged.mcp is None:
        merged.mcp = []
    if merged.max_delegation_depth is None:
        merged.max_delegation_depth = 3
    return merged


class Store(RunRecords):
    """Typed access to every table. Methods raise a 404 ``ApiError`` for unknown ids."""

    def __init__(self, path: str | Path, redactor: Redactor | None = None) -> None:
        super().__init__(path, redactor)

    # -- agents ---------------------------------------------------------------------------

    @staticmethod
    def _agent(row: sqlite3.Row) -> AgentOut:
        return AgentOut(
            id=row["id"], name=row["name"], instructions=row["instructions"], tools=json.loads(row["tools"]),
            provider=row["provider"], model=row["model"], options=json.loads(row["options"]),
            output_schema=_loads(row["output_schema"]), delegates=json.loads(row["delegates"]),
            max_delegation_depth=row["max_delegation_depth"], skills=json.loads(row["skills"]),
            mcp=json.loads(row["mcp"]), max_steps=row["max_steps"], context_budget=row["context_budget"],
            created_at=row["created_at"], updated_at=row["updated_at"],
        )

    def create_agent(self, fields: Mapping[str, Any]) -> AgentOut:
        """Store a new agent from the fields of ``AgentCreate``."""
        stamp = now()
        agent = AgentOut(
            id=new_id(), name=fields["name"], instructions=fields.get("instructions") or "",
            tools=list(fields.get("tools") or []), provider=fields.get("provider"), model=fields.get("model"),
            options=dict(fields.get("options") or {}), output_schema=fields.get("output_schema"),
            delegates=list(fields.get("delegates") or []), skills=list(fields.get("skills") or []),
            max_delegation_depth=fields.get("max_delegation_depth", 3), mcp=list(fields.get("mcp") or []),
            max_steps=fields.get("max_steps"), context_budget=fields.get("context_budget"),
            created_at=stamp, updated_at=stamp,
        )
        with self.write() as conn:
            conn.execute(
                "INSERT INTO agents (id, name, instructions, tools, provider, model, options, output_schema, "
                "delegates, max_delegation_depth, skills, mcp, max_steps, context_budget, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (agent.id, agent.name, agent.instructions, _dumps(agent.tools), agent.provider, agent.model,
                 _dumps(agent.options), None if agent.output_schema is None else _dumps(agent.output_schema),
                 _dumps(agent.delegates), agent.max_delegation_depth, _dumps(agent.skills), _dumps(agent.mcp),
                 agent.max_steps, agent.context_budget, stamp, stamp),
            )
        return agent

    def get_agent(self, id: str) -> AgentOut:
        """The agent ``id``."""
        with self.read() as conn:
            row = conn.execute("SELECT * FROM agents WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise not_found("agent", id)
        return self._agent(row)

    def list_agents(self) -> list[AgentOut]:
        """Every agent, newest first."""
        with self.read() as conn:
            rows = conn.execute("SELECT * FROM agents ORDER BY id DESC").fetchall()
        return [self._agent(r) for r in rows]

    def update_agent(
        self, id: str, changes: Mapping[str, Any], check: Callable[[AgentOut], None] | None = None
    ) -> AgentOut:
        """Apply ``changes`` to agent ``id`` atomically; ``check`` may refuse the merged agent.

        ``check`` (which may build a provider) runs outside the write lock on a snapshot, and
        again inside it only if a concurrent update changed the result meanwhile.
        """
        checked = _merge_agent(self.get_agent(id), changes)
        if check is not None:
            check(checked)
        with self.write() as conn:
            row = conn.execute("SELECT * FROM agents WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise not_found("agent", id)
            merged = _merge_agent(self._agent(row), changes)
            if check is not None and merged.model_dump(exclude={"updated_at"}) != checked.model_dump(
                exclude={"updated_at"}
            ):
                check(merged)
            merged.updated_at = now()
            conn.execute(
                "UPDATE agents SET name = ?, instructions = ?, tools = ?, provider = ?, model = ?, options = ?, "
                "output_schema = ?, delegates = ?, max_delegation_depth = ?, skills = ?, mcp = ?, max_steps = ?, "
                "context_budget = ?, updated_at = ? WHERE id = ?",
                (merged.name, merged.instructions, _dumps(merged.tools), merged.provider, merged.model,
                 _dumps(merged.options), None if merged.output_schema is None else _dumps(merged.output_schema),
                 _dumps(merged.delegates), merged.max_delegation_depth, _dumps(merged.skills), _dumps(merged.mcp),
                 merged.max_steps, merged.context_budget, merged.updated_at, id),
            )
        return merged

    def delete_agent(self, id: str) -> None:
        """Delete agent ``id`` (fleets and formations naming it fail at their next run)."""
        self._delete("agents", "agent", id)

    def _delete(self, table: str, kind: str, id: str) -> None:
        with self.write() as conn:
            if conn.execute(f"DELETE FROM {table} WHERE id = ?", (id,)).rowcount == 0:
                raise not_found(kind, id)

    # -- sessions ---------------------------------------------------------------------

    def create_session(self, title: str, work_dir: str) -> SessionOut:
        """Store a new, empty session."""
        stamp = now()
        session = SessionOut(id=new_id(), title=title, work_dir=work_dir, history=[], created_at=stamp,
                             updated_at=stamp)
        with self.write() as conn:
            conn.execute(
                "INSERT INTO sessions (id, title, work_dir, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (session.id, title, work_dir, stamp, stamp),
            )
        return session

    def _session(self, conn: sqlite3.Connection, row: sqlite3.Row) -> SessionOut:
        messages = conn.execute(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY idx", (row["id"],)
        ).fetchall()
        history = [{"role": m["role"], "content": json.loads(m["content"])} for m in messages]
        return SessionOut(id=row["id"], title=row["title"], work_dir=row["work_dir"], history=history,
                          created_at=row["created_at"], updated_at=row["updated_at"])

    def get_session(self, id: str) -> SessionOut:
        """Session ``id`` with its history."""
        with self.read() as conn:
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise not_found("session", id)
            return self._session(conn, row)

    def list_sessions(self) -> list[SessionOut]:
        """Every session with its history, newest first."""
        with self.read() as conn:
            rows = conn.execute("SELECT * FROM sessions ORDER BY id DESC").fetchall()
            return [self._session(conn, r) for r in rows]

    def update_session(self, id: str, title: str | None, work_dir: str | None) -> SessionOut:
        """Change a session's title and/or work_dir (None leaves a field unchanged)."""
        with self.write() as conn:
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise not_found("session", id)
            conn.execute(
                "UPDATE sessions SET title = ?, work_dir = ?, updated_at = ? WHERE id = ?",
                (row["title"] if title is None else title, row["work_dir"] if work_dir is None else work_dir,
                 now(), id),
            )
            row = conn.execute("SELECT * FROM sessions WHERE id = ?", (id,)).fetchone()
            return self._session(conn, row)

    def delete_session(self, id: str) -> None:
        """Delete session ``id`` and its messages."""
        self._delete("sessions", "session", id)

    def load_history(self, id: str) -> list[Message]:
        """Session ``id``'s messages as :class:`Message` objects, oldest first."""
        return [Message.model_validate(m) for m in self.get_session(id).history]

    def append_messages(self, id: str, messages: Iterable[Message]) -> int:
        """Append ``messages`` to session ``id`` in one transaction; return the new length."""
        stamp = now()
        with self.write() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (id,)).fetchone() is None:
                raise not_found("session", id)
            start = int(conn.execute(
                "SELECT COALESCE(MAX(idx) + 1, 0) FROM messages WHERE session_id = ?", (id,)
            ).fetchone()[0])
            rows = [
                (id, start + i, m.role.value, _dumps(self._clean(dump_message(m)["content"])), stamp)
                for i, m in enumerate(messages)
            ]
            conn.executemany(
                "INSERT INTO messages (session_id, idx, role, content, created_at) VALUES (?, ?, ?, ?, ?)", rows
            )
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (stamp, id))
        return start + len(rows)

    # -- fleets -----------------------------------------------------------------------

    @staticmethod
    def _fleet(row: sqlite3.Row) -> FleetOut:
        return FleetOut(id=row["id"], name=row["name"], agent_id=row["agent_id"], worker_count=row["worker_count"],
                        work_dir=row["work_dir"], created_at=row["created_at"], updated_at=row["updated_at"])

    def create_fleet(self, name: str, agent_id: str, worker_count: int, work_dir: str | None) -> FleetOut:
        """Store a new fleet."""
        stamp = now()
        fleet = FleetOut(id=new_id(), name=name, agent_id=agent_id, worker_count=worker_count, work_dir=work_dir,
                         created_at=stamp, updated_at=stamp)
        with self.write() as conn:
            conn.execute(
                "INSERT INTO fleets (id, name, agent_id, worker_count, work_dir, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fleet.id, name, agent_id, worker_count, work_dir, stamp, stamp),
            )
        return fleet

    def get_fleet(self, id: str) -> FleetOut:
        """Fleet ``id``."""
        with self.read() as conn:
            row = conn.execute("SELECT * FROM fleets WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise not_found("fleet", id)
        return self._fleet(row)

    def list_fleets(self) -> list[FleetOut]:
        """Every fleet, newest first."""
        with self.read() as conn:
            rows = conn.execute("SELECT * FROM fleets ORDER BY id DESC").fetchall()
        return [self._fleet(r) for r in rows]

    def update_fleet(self, id: str, changes: Mapping[str, Any]) -> FleetOut:
        """Apply ``changes`` (name, agent_id, worker_count, work_dir) to fleet ``id``."""
        with self.write() as conn:
            row = conn.execute("SELECT * FROM fleets WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise not_found("fleet", id)
            allowed = {"name", "agent_id", "worker_count", "work_dir"}
            fleet = self._fleet(row).model_copy(update={k: v for k, v in changes.items() if k in allowed})
            fleet.updated_at = now()
            conn.execute(
                "UPDATE fleets SET name = ?, agent_id = ?, worker_count = ?, work_dir = ?, updated_at = ? WHERE id = ?",
                (fleet.name, fleet.agent_id, fleet.worker_count, fleet.work_dir, fleet.updated_at, id),
            )
        return fleet

    def delete_fleet(self, id: str) -> None:
        """Delete fleet ``id``."""
        self._delete("fleets", "fleet", id)

    # -- formations -------------------------------------------------------------------

    @staticmethod
    def _formation(row: sqlite3.Row) -> FormationOut:
        definition = json.loads(row["definition"])
        return FormationOut(id=row["id"], name=row["name"], nodes=definition["nodes"], edges=definition["edges"],
                            created_at=row["created_at"], updated_at=row["updated_at"])

    def create_formation(self, name: str, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> FormationOut:
        """Store a new formation declaration."""
        stamp = now()
        formation = FormationOut(id=new_id(), name=name, nodes=nodes, edges=edges, created_at=stamp, updated_at=stamp)
        with self.write() as conn:
            conn.execute(
                "INSERT INTO formations (id, name, definition, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                (formation.id, name, _dumps({"nodes": nodes, "edges": edges}), stamp, stamp),
            )
        return formation

    def get_formation(self, id: str) -> FormationOut:
        """Formation ``id``."""
        with self.read() as conn:
            row = conn.execute("SELECT * FROM formations WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise not_found("formation", id)
        return self._formation(row)

    def list_formations(self) -> list[FormationOut]:
        """Every formation, newest first."""
        with self.read() as conn:
            rows = conn.execute("SELECT * FROM formations ORDER BY id DESC").fetchall()
        return [self._formation(r) for r in rows]

    def replace_formation(
        self, id: str, name: str, nodes: list[dict[str, Any]], edges: list[dict[str, Any]]
    ) -> FormationOut:
        """Replace formation ``id``'s declaration."""
        stamp = now()
        with self.write() as conn:
            row = conn.execute("SELECT created_at FROM formations WHERE id = ?", (id,)).fetchone()
            if row is None:
                raise not_found("formation", id)
            conn.execute(
                "UPDATE formations SET name = ?, definition = ?, updated_at = ? WHERE id = ?",
                (name, _dumps({"nodes": nodes, "edges": edges}), stamp, id),
            )
        return FormationOut(id=id, name=name, nodes=nodes, edges=edges, created_at=row["created_at"], updated_at=stamp)

    def delete_formation(self, id: str) -> None:
        """Delete formation ``id`` (its recorded runs are kept)."""
        self._delete("formations", "formation", id)

    # -- provider auth ------------------------------------------------------------------

    def set_auth(self, credentials: Mapping[str, tuple[str, str]]) -> None:
        """Store ``{provider: (type, key)}``; other providers' credentials are kept."""
        stamp = now()
        with self.write() as conn:
            conn.executemany(
                "INSERT INTO auth (provider, type, key, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (provider) DO UPDATE SET type = excluded.type, key = excluded.key, "
                "updated_at = excluded.updated_at",
                [(p, t, k, stamp) for p, (t, k) in credentials.items()],
            )

    def auth_status(self) -> tuple[dict[str, ProviderAuthOut], str | None]:
        """Per provider: type, configured, key hint; and the newest change time."""
        with self.read() as conn:
            rows = conn.execute("SELECT * FROM auth ORDER BY provider").fetchall()
        status = {
            r["provider"]: ProviderAuthOut(type=r["type"], configured=bool(r["key"]), key_hint="…" + r["key"][-4:])
            for r in rows
        }
        return status, max((r["updated_at"] for r in rows), default=None)

    def auth_keys(self) -> list[str]:
        """Every stored key (to redact them)."""
        with self.read() as conn:
            return [str(r["key"]) for r in conn.execute("SELECT key FROM auth").fetchall()]

    def auth_key(self, provider: str) -> str | None:
        """The stored key of ``provider``, or None."""
        with self.read() as conn:
            row = conn.execute("SELECT key FROM auth WHERE provider = ?", (provider,)).fetchone()
        return None if row is None else str(row["key"])

    def delete_auth(self, provider: str) -> None:
        """Forget ``provider``'s credential (404 when it has none)."""
        with self.write() as conn:
            if conn.execute("DELETE FROM auth WHERE provider = ?", (provider,)).rowcount == 0:
                raise not_found("credential for provider", provider)
