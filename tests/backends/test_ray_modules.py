"""Modules no other process can import by name are shipped to Ray workers by value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.backends.conftest import module_from_file
from wingman_actors.backends._ray_modules import ship_unimportable_by_value


class Recorder:
    """Stands in for Ray's cloudpickle: records the modules registered by value."""

    def __init__(self) -> None:
        self.by_value: list[Any] = []

    def register_pickle_by_value(self, module: Any) -> None:
        self.by_value.append(module)


def test_a_module_loaded_from_a_file_under_a_name_no_import_finds_is_shipped_by_value(tmp_path: Path) -> None:
    source = tmp_path / "flows.py"
    source.write_text("def double(x):\n    return 2 * x\n")
    name = "wingman_test_formation_flows"
    with module_from_file(source, name) as module:
        recorder = Recorder()
        shipped = ship_unimportable_by_value(recorder)
    assert name in shipped
    assert module in recorder.by_value
    assert "json" not in shipped and "wingman_actors" not in shipped  # importable anywhere
