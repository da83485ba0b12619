"""Where each scenario lives: its name and the module of this package that defines it, in
the bench's order. :mod:`._child` imports only that module, so a scenario's interpreter
loads what the scenario uses and nothing of the others (a sessions scenario loads no
formation, hence no networkx, whose objects a full collection would walk).
"""

from __future__ import annotations

__all__ = ["WHERE"]

WHERE: dict[str, str] = {
    "pipeline_throughput": "scenarios",
    "run_overhead": "scenarios",
    "cold_run": "startup",
    "large_formation": "startup",
    "hop_latency": "scenarios",
    "fleet_makespan": "scenarios",
    "fleet_node_makespan": "scenarios",
    "map_makespan": "maps",
    "dag_makespan": "scenarios",
    "inflight_runs": "scenarios",
    "actor_memory": "scenarios",
    "store_journal": "store",
    "durable_pipeline_throughput": "durable",
    "durable_pipeline_throughput_postgres": "durable_postgres",
    "durable_overhead": "durable",
    "resume_latency": "durable",
    "lease_takeover": "durable_extra",
    "fork_cost": "durable_extra",
    "cancel_latency": "cancellation",
    "timeout_overshoot": "cancellation",
    "session_cancel_latency": "session_limits",
    "session_timeout_overshoot": "session_limits",
    "ray_cpu_stage": "ray_backend",
    "ray_hop_overhead": "ray_backend",
    "ray_agent_makespan": "ray_backend",
    "nested_overhead": "nesting",
    "async_concurrency": "aio",
    "async_sessions": "aio",
    "payload_isolation": "payloads",
    "http_formation_runs": "http_runs",
}
