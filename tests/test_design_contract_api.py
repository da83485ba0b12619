"""DESIGN.md's "Public API contract", "Dependencies and packaging", "Durable runs and
interrupts" and "Seeing a run", checked as a client would: through the public names only,
spelled as DESIGN spells them. (Most bullets are also tested where their code lives; these
are the ones no test exercised exactly as written, and the edge cases around them.)"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# DESIGN's import block, module by module.
IMPORT_BLOCK: dict[str, tuple[str, ...]] = {
    "wingman_actors": ("Agent", "Session", "Fleet", "Task", "Formation", "tool", "interrupt"),
    "wingman_actors.core": ("Message", "ContentBlock", "ToolDefinition", "Usage", "InferenceRequest",
                            "InferenceResponse", "StreamEvent"),
    "wingman_actors.providers": ("new_provider", "register_provider", "ProviderMeta"),
    "wingman_actors.errors": ("WingmanError", "AgentError", "ErrorKind", "FormationSetupError",
                              "FormationRuntimeError", "ToolError", "NoRouteError"),
    "wingman_actors.formation": ("NodeFailure",),
    "wingman_actors.testing": ("ScriptedProvider", "ActorProbe", "run_node"),
    "wingman_actors.store": ("RunStore",),
    "wingman_actors.orchestration": ("AgentRegistry", "Blackboard"),
    "wingman_actors.events": ("EventBus",),
}
HEAVY = ("rich", "pygments", "fastapi", "anthropic", "pypdf", "yaml")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


# --- the import block ----------------------------------------------------------------------


@pytest.mark.parametrize(("module", "name"), [(m, n) for m, names in IMPORT_BLOCK.items() for n in names])
def test_each_name_of_the_import_block_imports_from_the_module_design_lists_and_is_in_its_all(
    module: str, name: str
) -> None:
    loaded = importlib.import_module(module)

    assert getattr(loaded, name) is not None
    assert name in loaded.__all__


def test_the_whole_import_block_runs_as_written_in_a_fresh_python() -> None:
    done = _python("""
        from wingman_actors import Agent, Session, Fleet, Task, Formation, tool
        from wingman_actors.core import Message, ContentBlock, ToolDefinition, Usage, \\
            InferenceRequest, InferenceResponse, StreamEvent
        from wingman_actors.providers import new_provider, register_provider, ProviderMeta
        from wingman_actors.errors import WingmanError, AgentError, ErrorKind, \\
            FormationSetupError, FormationRuntimeError, ToolError, NoRouteError
        from wingman_actors.formation import NodeFailure
        from wingman_actors.testing import ScriptedProvider, ActorProbe, run_node
        from wingman_actors import interrupt
        from wingman_actors.store import RunStore
        from wingman_actors.orchestration import AgentRegistry, Blackboard
        from wingman_actors.events import EventBus
        print("ok")
    """)

    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_the_whole_import_block_loads_none_of_the_heavy_optional_libraries() -> None:
    imports = "\n".join(f"from {module} import {', '.join(names)}" for module, names in IMPORT_BLOCK.items())
    done = _python(imports + f"""
import sys
print(sorted({{n.partition(".")[0] for n in sys.modules}} & set({HEAVY!r})))
""")

    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


@pytest.mark.parametrize(("name", "bases"), [
    ("AgentError", ("WingmanError",)),
    ("ToolError", ("AgentError",)),
    ("FormationSetupError", ("WingmanError", "ValueError")),
    ("FormationRuntimeError", ("WingmanError",)),
    ("NoRouteError", ("FormationRuntimeError",)),
])
def test_each_error_design_names_subclasses_what_design_says(name: str, bases: tuple[str, ...]) -> None:
    import builtins

    from wingman_actors import errors

    cls = getattr(errors, name)
    for base in bases:
        assert issubclass(cls, getattr(errors, base, None) or getattr(builtins, base))
    assert issubclass(cls, errors.WingmanError)


def test_the_interrupt_of_the_package_suspends_a_journalled_run(tmp_path: Path) -> None:
    from wingman_actors import Formation, interrupt

    result = Formation("ask").add_function("ask", lambda x: interrupt({"q": x})).run(1, store=tmp_path / "r.db")

    assert (result.status, result.interrupt) == ("suspended", {"node": "ask", "payload": {"q": 1}})


# --- providers -----------------------------------------------------------------------------

COMMON_OPTIONS = {"model": "m", "max_tokens": 64, "temperature": 0.5, "api_key": "k",
                  "base_url": "http://127.0.0.1:9", "timeout": 5, "max_retries": 0}


@pytest.mark.parametrize("provider_id", ["anthropic", "ollama", "openai", "scripted"])
def test_new_provider_takes_the_common_options_as_one_dict(provider_id: str) -> None:
    from wingman_actors.providers import new_provider

    provider = new_provider(provider_id, dict(COMMON_OPTIONS))

    assert callable(provider.run_inference) and callable(provider.stream_inference)


def test_new_provider_replay_takes_the_common_options_beside_its_cassette(tmp_path: Path) -> None:
    from wingman_actors.providers import new_provider

    cassette = tmp_path / "c.jsonl"
    cassette.write_text("")

    provider = new_provider("replay", {**COMMON_OPTIONS, "cassette": str(cassette)})

    assert callable(provider.run_inference)


def test_an_unknown_provider_id_lists_every_registered_id_including_one_registered_by_the_user() -> None:
    done = _python("""
        from wingman_actors.errors import WingmanError
        from wingman_actors.providers import ProviderMeta, new_provider, register_provider
        from wingman_actors.testing import ScriptedProvider
        register_provider(ProviderMeta("house", "House", (), lambda options: ScriptedProvider(["hi"])))
        try:
            new_provider("nope", {})
        except WingmanError as exc:
            print(exc)
    """)

    message = done.stdout.strip()
    assert "unknown provider 'nope'" in message, done.stderr
    for registered in ("anthropic", "house", "ollama", "openai", "replay", "scripted"):
        assert registered in message


def test_run_inference_answers_an_inference_response_with_content_stop_reason_usage_and_text() -> None:
    from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message
    from wingman_actors.providers import new_provider

    response = new_provider("scripted", {"replies": ["hello"]}).run_inference(
        InferenceRequest(messages=[Message.user("hi")]))

    assert isinstance(response, InferenceResponse)
    assert [block.type for block in response.content] == ["text"] and isinstance(response.content[0], ContentBlock)
    assert (response.stop_reason, response.text, response.tool_calls) == ("end_turn", "hello", [])
    assert (response.usage.input_tokens, response.usage.output_tokens) >= (0, 0)


def test_stream_inference_is_an_iterable_of_stream_events_whose_final_response_follows_iteration() -> None:
    from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message, StreamEvent
    from wingman_actors.testing import ScriptedProvider

    calls = InferenceResponse(content=[ContentBlock.tool_use_block("t1", "look", {"q": "x"})], stop_reason="tool_use")
    stream = ScriptedProvider([calls]).stream_inference(InferenceRequest(messages=[Message.user("hi")]))

    events = list(stream)

    assert events and all(isinstance(event, StreamEvent) for event in events)
    assert stream.response.stop_reason == "tool_use"
    assert [(c.name, c.input) for c in stream.response.tool_calls] == [("look", {"q": "x"})]


def test_an_inference_response_cut_by_max_tokens_says_so() -> None:
    from wingman_actors.core import ContentBlock, InferenceResponse, Usage

    response = InferenceResponse(content=[ContentBlock(type="text", text="half")], stop_reason="max_tokens",
                                 usage=Usage(input_tokens=3, output_tokens=4))

    assert (response.stop_reason, response.text, response.usage.output_tokens) == ("max_tokens", "half", 4)


# --- @tool, Task, FleetResult, to_mermaid --------------------------------------------------


def test_a_tool_refuses_arguments_that_do_not_match_its_annotations_without_calling_the_function() -> None:
    from wingman_actors import tool
    from wingman_actors.errors import ToolError
    from wingman_actors.tools import ToolContext

    called: list[int] = []

    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        called.append(a)
        return a + b

    for bad in ({}, {"a": "not a number"}, {"a": 1, "c": 3}):
        with pytest.raises(ToolError, match=r"add"):
            add.execute(bad, ToolContext())
    assert called == []
    assert (add.name, add.description) == ("add", "Add two numbers.")
    assert add.definition.input_schema["required"] == ["a"]


def test_a_task_takes_its_fields_by_position_as_design_writes_its_signature() -> None:
    from wingman_actors import Task

    task = Task("go", "/tmp", "be brief", {"n": 1})

    assert (task.message, task.work_dir, task.instructions, task.data) == ("go", "/tmp", "be brief", {"n": 1})
    assert Task("go") == Task("go", work_dir=None, instructions=None, data=None)


def test_a_fleet_result_has_task_index_worker_name_result_error_and_data_for_a_failed_task_too() -> None:
    from wingman_actors import Agent, Fleet, Task
    from wingman_actors.errors import AgentError, ErrorKind
    from wingman_actors.testing import ScriptedProvider

    refused = AgentError("no", kind=ErrorKind.INVALID)
    agent = Agent("w", provider=ScriptedProvider(["fine", refused]))

    ok, failed = Fleet(agent, [Task("a", data=1), Task("b", data=2)], max_workers=1).run()

    assert (ok.task_index, ok.worker_name, ok.result.response if ok.result else None, ok.error, ok.data) == (
        0, "w-0", "fine", None, 1)
    assert (failed.task_index, failed.worker_name, failed.result, failed.data) == (1, "w-1", None, 2)
    assert isinstance(failed.error, AgentError)


def test_to_mermaid_draws_each_node_and_edge_of_the_graph() -> None:
    from wingman_actors import Formation

    text = Formation("f").add_function("a", str.strip).add_function("b", str.upper).connect("a", "b").to_mermaid()

    assert text.startswith("flowchart")
    assert all(piece in text for piece in ('a["a"]', 'b["b"]', "a --> b"))


# --- dependencies and packaging ------------------------------------------------------------


def test_pyproject_declares_every_extra_design_names_and_python_3_11_or_later() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project = tomllib.load(file)["project"]

    named = {"anthropic", "cli", "pdf", "server", "web", "skills", "mcp", "otel", "ray", "postgres", "all"}
    assert named <= set(project["optional-dependencies"])
    assert project["requires-python"] == ">=3.11"


def test_a_postgres_store_without_psycopg_is_a_one_line_error_naming_the_postgres_extra() -> None:
    done = _python("""
        import sys
        sys.modules["psycopg"] = None
        from wingman_actors.errors import MissingExtraError
        from wingman_actors.store import RunStore
        try:
            RunStore("postgresql://u@127.0.0.1:9/db")
        except MissingExtraError as exc:
            print(exc.extra)
            print(exc)
    """)

    extra, message = done.stdout.splitlines()
    assert extra == "postgres", done.stderr
    assert 'pip install "wingman-actors[postgres]"' in message and "\n" not in message


def test_importing_formation_loads_none_of_the_heavy_libraries_even_after_declaring_and_running(
    tmp_path: Path,
) -> None:
    done = _python(f"""
        import sys
        from wingman_actors import Formation
        f = Formation("f").add_function("a", str.strip).add_function("b", str.upper).connect("a", "b")
        f.validate()
        f.to_mermaid()
        assert f.run(" x ", store={str(tmp_path / "r.db")!r}).output == "X"
        print(sorted({{n.partition(".")[0] for n in sys.modules}} & set({HEAVY!r})))
    """)

    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


# --- durable runs and interrupts -----------------------------------------------------------


def test_a_run_given_an_empty_run_id_is_refused_naming_run_id_not_an_internal_call(tmp_path: Path) -> None:
    from wingman_actors import Formation

    f = Formation("f").add_function("a", str.strip)
    for store in (tmp_path / "r.db", None):
        with pytest.raises(ValueError, match=r"run_id must be a non-empty str") as caught:
            f.run(" x ", store=store, run_id="")
        assert "begin_run" not in str(caught.value) and "names a journalled run" not in str(caught.value)
    with f.start(store=tmp_path / "r.db") as running, pytest.raises(ValueError, match=r"run_id must be a non-empty"):
        running.submit(" x ", run_id="")


def test_a_run_keeps_the_run_id_it_is_given_and_the_store_lists_it(tmp_path: Path) -> None:
    from wingman_actors import Formation
    from wingman_actors.store import RunStore

    store = RunStore(tmp_path / "r.db")
    try:
        result = Formation("f").add_function("a", str.strip).run(" x ", store=store, run_id="mine")
        (summary,) = store.runs(status="succeeded")
        assert (result.run_id, result.status) == ("mine", "succeeded")
        assert (summary.id, summary.formation, summary.status) == ("mine", "f", "succeeded")
        assert summary.created <= summary.updated and store.get("mine").status == "succeeded"
    finally:
        store.close()


def test_running_formation_resume_returns_a_future_of_the_continued_run(tmp_path: Path) -> None:
    from concurrent.futures import Future

    from wingman_actors import Formation, interrupt

    f = Formation("ask").add_function("ask", lambda x: f"{x}:{interrupt('ok?')}")
    with f.start(store=tmp_path / "r.db") as running:
        suspended = running.submit("a").result(10)
        future = running.resume(suspended.run_id, answer="yes")
        assert isinstance(future, Future)
        assert future.result(10).output == "a:yes"


# --- seeing a run --------------------------------------------------------------------------


def test_node_traces_carry_the_last_output_and_every_visits_output_in_order() -> None:
    from wingman_actors import Formation

    f = (Formation("loop").add_function("count", lambda n: n + 1).add_function("done", str)
         .connect("count", "count", when=lambda n: n < 3).connect("count", "done", when=lambda n: n >= 3))
    result = f.run(0)

    trace = result.nodes["count"]
    assert (trace.output, trace.outputs, trace.visits) == (3, [1, 2, 3], 3)
    assert (result.nodes["done"].output, result.nodes["done"].outputs) == ("3", ["3"])


def test_node_started_carries_a_fan_in_visits_input_and_node_finished_its_output_in_data() -> None:
    from wingman_actors import Formation

    f = (Formation("fan").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 10)
         .add_function("join", lambda a, b: a + b).connect("a", "join").connect("b", "join"))
    events = list(f.run_stream(1))

    started = {e.node: e.data["input"] for e in events if e.type == "node_started"}
    finished = {e.node: e.data["output"] for e in events if e.type == "node_finished"}
    assert started == {"a": 1, "b": 1, "join": {"a": 2, "b": 10}}
    assert finished == {"a": 2, "b": 10, "join": 12}


def test_break_before_a_fan_in_node_suspends_with_its_dict_input_and_resume_continues(tmp_path: Path) -> None:
    from wingman_actors import Formation

    store = tmp_path / "r.db"
    f = (Formation("fan").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 10)
         .add_function("join", lambda a, b: a + b).connect("a", "join").connect("b", "join"))

    stopped = f.run(1, store=store, break_before=["join"])

    assert stopped.status == "suspended"
    assert stopped.interrupt == {"node": "join", "payload": {"breakpoint": "before", "input": {"a": 2, "b": 10}}}
    assert f.resume(stopped.run_id, store=store).output == 12


def test_break_after_the_sink_suspends_with_its_output_and_resume_ends_the_run(tmp_path: Path) -> None:
    from wingman_actors import Formation

    store = tmp_path / "r.db"
    f = Formation("two").add_function("a", str.strip).add_function("b", str.upper).connect("a", "b")

    stopped = f.run(" x ", store=store, break_after=["b"])

    assert (stopped.status, stopped.interrupt) == ("suspended", {"node": "b", "payload": {"breakpoint": "after",
                                                                                           "output": "X"}})
    done = f.resume(stopped.run_id, store=store)
    assert (done.status, done.output, done.nodes["b"].outputs) == ("succeeded", "X", ["X"])


ASKING = """
from wingman_actors import Formation, interrupt


def ask(text: str) -> str:
    return f"{text}: {interrupt({'question': 'go?'})}"


formation = Formation("asking").add_function("clean", str.strip).add_function("ask", ask).connect("clean", "ask")
"""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wingman_actors", *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_runs_show_without_store_reads_the_default_store_the_launcher_journalled_into(tmp_path: Path) -> None:
    flow = tmp_path / "asking.py"
    flow.write_text(ASKING)
    assert _cli("run", str(flow), "--input", " x ").returncode == 0
    listed = _cli("runs", "--json")
    (row,) = json.loads(listed.stdout)

    shown = _cli("runs", "show", row["run_id"], "--json")

    document: dict[str, Any] = json.loads(shown.stdout)
    assert (document["run_id"], document["status"]) == (row["run_id"], "suspended")
    assert document["interrupt"]["node"] == "ask" and document["interrupt"]["payload"] == {"question": "go?"}
    assert document["nodes"]["clean"]["outputs"] == ["x"]
    table = _cli("runs", "show", row["run_id"]).stdout
    assert "clean" in table and "waiting at node 'ask'" in table


def test_every_json_document_of_the_launcher_names_the_run_id_run_id(tmp_path: Path) -> None:
    flow, store = tmp_path / "asking.py", str(tmp_path / "runs.sqlite")
    flow.write_text(ASKING)

    ran = json.loads(_cli("run", str(flow), "--input", "x", "--store", store, "--json").stdout)
    run_id = ran["run_id"]
    listed = json.loads(_cli("runs", "--store", store, "--json").stdout)
    shown = json.loads(_cli("runs", "show", run_id, "--store", store, "--json").stdout)
    resumed = json.loads(_cli("resume", run_id, "--store", store, "--answer", '"yes"', "--json").stdout)

    assert [row["run_id"] for row in listed] == [run_id]
    assert shown["run_id"] == resumed["run_id"] == run_id
    for document in (ran, *listed, shown, resumed):
        assert "id" not in document
    assert resumed["output"] == "x: yes"


def test_resume_with_formation_continues_a_python_run_with_an_answer(tmp_path: Path) -> None:
    flow, store = tmp_path / "asking.py", tmp_path / "runs.sqlite"
    flow.write_text(ASKING)
    namespace: dict[str, Any] = {}
    exec(compile(ASKING, str(flow), "exec"), namespace)  # the same formation, built in this process
    suspended = namespace["formation"].run(" x ", store=store)
    assert suspended.status == "suspended"

    done = _cli("resume", suspended.run_id, "--store", str(store), "--formation", str(flow), "--answer", '"ok"',
                "--json")

    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["run_id"], document["status"], document["output"]) == (suspended.run_id, "succeeded", "x: ok")

