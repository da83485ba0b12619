"""Declaring a formation loads only the declaration layer: the agent layer loads with the
first agent or fleet node, the store with the first durable run, and the runtime (actors,
backends, routing, supervision) at the first start() or run().

Each test runs a fresh child Python (a module once imported stays in ``sys.modules``, so
this process cannot tell) and prints the project and core modules it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What a formation of functions needs at no point: the agent layer's sessions and fleets
# (and the providers and tools they bring), and the store.
AGENT_LAYER_AND_STORE = (
    "wingman_actors.agents._agent",
    "wingman_actors.agents._fleet",
    "wingman_actors.agents._session",
    "wingman_actors.providers._base",
    "wingman_actors.tools",
    "wingman_actors.store",
    "wingman_actors.formation._durable",
    "httpx",
)
# What declaring and validating does not need either: the runtime.
RUNTIME = (
    "wingman_actors.formation._runtime",
    "wingman_actors.formation._routing",
    "wingman_actors.formation._supervision",
    "wingman_actors.actors",
    "wingman_actors.backends",
    "pykka",
)


def _loaded_after(code: str) -> set[str]:
    """The modules of ``AGENT_LAYER_AND_STORE`` and ``RUNTIME`` that a fresh Python has
    loaded after running ``code``."""
    watched = AGENT_LAYER_AND_STORE + RUNTIME
    script = textwrap.dedent(code) + f"\nimport json, sys\nprint(json.dumps([m for m in {watched!r} if m in sys.modules]))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_formation_from_the_package_loads_neither_the_agent_layer_the_store_nor_the_runtime() -> None:
    assert _loaded_after("from wingman_actors import Formation") == set()


def test_importing_the_formation_package_loads_neither_the_agent_layer_the_store_nor_the_runtime() -> None:
    assert _loaded_after("import wingman_actors.formation") == set()


def test_declaring_and_validating_a_formation_of_functions_loads_neither_the_agent_layer_nor_the_runtime() -> None:
    loaded = _loaded_after("""
        from wingman_actors import Formation
        from wingman_actors.orchestration import Blackboard

        def ask(q: str, *, blackboard: Blackboard | None = None) -> list[str]:
            return q.split()

        f = Formation("f").add_function("ask", ask).add_map("each", len).connect("ask", "each")
        f.validate()
        f.to_mermaid()
    """)

    assert loaded == set()


def test_running_a_formation_of_functions_loads_the_runtime_but_neither_the_agent_layer_nor_the_store() -> None:
    loaded = _loaded_after("""
        from wingman_actors import Formation

        f = Formation("f").add_function("split", str.split).add_map("each", str.upper).connect("split", "each")
        assert f.run("a b").output == ["A", "B"]
        with f.start() as running:
            assert running.submit(" c ").result().output == ["C"]
    """)

    assert loaded == set(RUNTIME)


def test_declaring_an_agent_node_loads_the_agent_layer_but_not_the_store() -> None:
    loaded = _loaded_after("""
        from wingman_actors import Agent, Formation
        from wingman_actors.testing import ScriptedProvider

        Formation("f").add_agent("write", Agent("writer", provider=ScriptedProvider(["a draft"]))).validate()
    """)

    assert {"wingman_actors.agents._session", "wingman_actors.agents._fleet"} <= loaded
    assert "wingman_actors.store" not in loaded


def test_a_durable_run_loads_the_store(tmp_path: Path) -> None:
    loaded = _loaded_after(f"""
        from wingman_actors import Formation

        result = Formation("f").add_function("strip", str.strip).run(" a ", store={str(tmp_path / "runs.db")!r})
        assert result.output == "a"
    """)

    assert {"wingman_actors.store", "wingman_actors.formation._durable"} <= loaded


_LOADING_THREAD = """
import asyncio, importlib.abc, json, sys, threading
loaders = {}

class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in WATCHED and name not in loaders:
            loaders[name] = threading.current_thread() is threading.main_thread()
        return None

WATCHED = ("wingman_actors.formation._runtime", "wingman_actors.store", "wingman_actors.formation._durable")
sys.meta_path.insert(0, Watch())
from wingman_actors import Formation

async def main(kind):
    f = Formation("f").add_function("a", lambda x: x + 1)
    if kind == "arun":
        await f.arun(1, store=sys.argv[1])
    elif kind == "astream":
        [e async for e in f.astream(1, store=sys.argv[1])]
    else:
        async with f.astart(store=sys.argv[1]) as running:
            await running.asubmit(1)

asyncio.run(main(sys.argv[2]))
print(json.dumps(loaders))
"""


@pytest.mark.parametrize("call", ["arun", "astream", "astart"])
def test_the_first_async_run_loads_the_runtime_and_the_store_off_the_event_loop(call: str, tmp_path: Path) -> None:
    # DESIGN (Async Python): none of them blocks the caller's event loop. Loading the
    # runtime takes about 0.1 s of CPU, and the first arun() loaded it on the loop's thread.
    done = subprocess.run([sys.executable, "-c", _LOADING_THREAD, str(tmp_path / "runs.sqlite"), call],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    on_the_loop = json.loads(done.stdout.splitlines()[-1])
    assert on_the_loop == dict.fromkeys(on_the_loop, False) and len(on_the_loop) == 3
