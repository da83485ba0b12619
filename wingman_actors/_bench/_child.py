"""One scenario in an interpreter of its own (``python -m wingman_actors._bench._child NAME``).

The bench runs scenarios one after another. In one process, each would inherit what the
ones before it left: their imports (Ray's alone multiplies the objects the collector
walks in a full collection, about 100 ms instead of 20 after ``ray_hop_overhead``), the
threads of the libraries they started, and their garbage. A user's service has none of
those, so each scenario runs in a fresh interpreter, as pyperf runs its benchmarks; a
scenario still measures itself and its baseline in the same process, as before.
``wingman-actors bench --in-process`` keeps them in one (for a profiler).

The child prints one JSON line, ``{"pid": ..., "measurement": {...}}`` (its last line of
stdout); its stderr (notes of skipped parts, warnings, a traceback) passes through.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

from ._measurement import Measurement
from ._registry import WHERE

__all__ = ["measure_in_child"]

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding wingman_actors/


def measure_in_child(name: str, quick: bool) -> tuple[int, Measurement]:
    """The child's process id and the measurement of scenario ``name`` in it.

    Raises:
        RuntimeError: the child failed (its exit code; its traceback went to stderr).
    """
    env = dict(os.environ)  # the bench's settings (WINGMAN_BENCH_POSTGRES_URL) travel
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)  # this very package
    args = [sys.executable, "-m", "wingman_actors._bench._child", name, *(["--quick"] if quick else [])]
    done = subprocess.run(args, env=env, stdout=subprocess.PIPE, text=True, check=False)  # stderr passes through
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"bench scenario {name!r} failed in its process (exit code {done.returncode}; "
                           "its traceback is on stderr above)")
    doc = json.loads(lines[-1])
    return doc["pid"], Measurement(**doc["measurement"])


def main(argv: list[str]) -> int:
    name, quick = argv[0], "--quick" in argv[1:]
    scenario = getattr(importlib.import_module(f".{WHERE[name]}", __package__), name)  # its module only
    measurement = scenario(quick)
    print(json.dumps({"pid": os.getpid(), "measurement": measurement.to_dict()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
