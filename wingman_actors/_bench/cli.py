"""``wingman-actors bench [--quick] [--json] [--scenario NAME]``."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from typing import Any

__all__ = ["add_bench_parser", "judged", "machine_facts"]


def machine_facts() -> dict[str, Any]:
    """What the numbers were measured on."""
    facts: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    from importlib.metadata import PackageNotFoundError, version

    for package in ("pykka", "pydantic"):
        try:
            facts[package] = version(package)
        except PackageNotFoundError:
            pass
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    facts["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return facts


def _run(args: argparse.Namespace) -> int:
    from .scenarios import SCENARIOS, run_scenarios

    if args.postgres:  # the server durable_pipeline_throughput_postgres measures on
        from .durable_postgres import ENV

        os.environ[ENV] = args.postgres
    names = args.scenario or None
    unknown = [n for n in names or [] if n not in SCENARIOS]
    if unknown:
        print(f"wingman-actors bench: unknown scenario(s) {', '.join(unknown)}; "
              f"choose from: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2

    def progress(name: str) -> None:
        if not args.json:
            print(f"running {name}...", file=sys.stderr, flush=True)

    results = run_scenarios(names, quick=args.quick, progress=progress, in_process=args.in_process)
    if args.json:
        doc = {"machine": machine_facts(), "quick": args.quick,
               "scenarios": [r.to_dict() for r in results]}
        print(json.dumps(doc, indent=2))
        return 0
    facts = machine_facts()
    print(f"machine: {facts.get('cpu', '?')}, {facts.get('cpus')} cpus, Python {facts['python']}"
          + (" (quick run)" if args.quick else ""))
    header = (f"{'scenario':<28} {'value':>10} {'unit':<16} {'baseline':>10} {'judged':>12}  "
              f"{'target':<52} meets")
    print(header)
    print("-" * len(header))
    for r in results:
        base = "" if r.baseline is None else f"{r.baseline:g}"
        print(f"{r.name:<28} {r.value:>10g} {r.unit:<16} {base:>10} {judged(r.details):>12}  {r.target:<52} "
              f"{'yes' if r.meets else 'NO'}")
    print("\njudged: what the target compares, from numbers of the same run: a ratio to the baseline "
          "(x), or the margin over it (+)")
    peers = [line for r in results for line in _peer_lines(r.name, r.value, r.details.get("peers") or {})]
    if peers:
        print("\npeers on the same graph, same run:")
        for line in peers:
            print(f"  {line}")
    return 0


def judged(details: dict[str, Any]) -> str:
    """What a scenario's target was judged on, as the table shows it: ``x0.62`` for a
    ratio to its same-run baseline (``details["ratio"]``), ``+0.012`` for a margin over
    it (``details["over_floor"]``), empty for an absolute target."""
    if details.get("ratio") is not None:
        return f"x{details['ratio']:g}"
    if details.get("over_floor") is not None:
        return f"{details['over_floor']:+.3f}"
    return ""


def _peer_lines(scenario: str, ours: float, peers: dict[str, Any]) -> list[str]:
    lines = []
    for name, got in peers.items():
        if not isinstance(got, dict):
            lines.append(f"{scenario}: {name} {got}")
        elif "invoke_us" in got:
            lines.append(f"{scenario}: {name} {got['version']}: {got['invoke_us']:g} µs per invoke "
                         f"({got['invoke_us'] / ours:.1f} x ours)")
        elif "batch_inputs_per_s" in got:
            lines.append(f"{scenario}: {name} {got['version']}: {got['batch_inputs_per_s']:g} inputs/s with batch() "
                         f"(ours {ours / got['batch_inputs_per_s']:.1f} x faster)")
    return lines


def add_bench_parser(subparsers: Any) -> None:
    """Register the ``bench`` subcommand on an argparse subparsers object."""
    p = subparsers.add_parser(
        "bench",
        help="measure the runtime against its targets (scripted model latency, same-run baselines)",
        description="Run the benchmark scenarios. Each runs in a fresh interpreter and measures itself "
        "and its baseline in that process over several repetitions, and reports the median.",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repetitions (seconds, not minutes)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--scenario", action="append", metavar="NAME", help="run only this scenario (repeatable)")
    p.add_argument("--in-process", action="store_true",
                   help="run every scenario in this process (default: each in a fresh interpreter, so one "
                        "scenario's imports and garbage do not weigh on the next; this one is for a profiler)")
    p.add_argument("--postgres", metavar="URL",
                   help="the PostgreSQL server of the PostgreSQL scenarios (default: a throwaway one when "
                        "PostgreSQL's binaries are installed, else they are skipped)")
    p.set_defaults(func=_run)
