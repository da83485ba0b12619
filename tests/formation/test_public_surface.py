"""The formation package's surface as DESIGN writes it: the errors a user catches are
importable from ``wingman_actors.formation`` (without importing the runtime for them), and
``run(input, timeout)`` takes its timeout by position too."""

from __future__ import annotations

import subprocess
import sys

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, WingmanError


def test_nested_run_error_is_what_a_failed_formation_node_raises_and_is_importable_from_the_package() -> None:
    from wingman_actors.formation import NestedRunError

    def boom(x: int) -> int:
        raise ValueError("no luck")

    inner = Formation("inner").add_function("boom", boom)
    outer = Formation("outer").add_formation("sub", inner)
    with pytest.raises(FormationRuntimeError) as caught:
        outer.run(1)
    assert isinstance(caught.value.__cause__, NestedRunError)
    assert issubclass(NestedRunError, WingmanError)


def test_fork_point_error_is_importable_from_the_package() -> None:
    from wingman_actors.formation import ForkPointError

    assert issubclass(ForkPointError, WingmanError) and issubclass(ForkPointError, ValueError)


def test_an_unknown_name_of_the_package_is_an_attribute_error() -> None:
    import wingman_actors.formation as formation

    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        formation.Nope  # noqa: B018


def test_importing_the_formation_package_loads_neither_error_module() -> None:
    code = ("import sys, wingman_actors.formation; "
            "print(sorted(m for m in ('wingman_actors.formation._fork', 'wingman_actors.formation._nesting') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_run_takes_its_timeout_by_position_as_design_writes_it() -> None:
    # DESIGN: `.run(input, timeout=None) -> FormationResult`
    import threading

    from wingman_actors.errors import FormationRuntimeError

    gate = threading.Event()
    slow = Formation("slow").add_function("wait", lambda x: gate.wait(5) and x)
    try:
        with pytest.raises(FormationRuntimeError, match=r"timed out|timeout"):
            slow.run(1, 0.2)
    finally:
        gate.set()
    assert Formation("quick").add_function("inc", lambda x: x + 1).run(1, 5).output == 2
