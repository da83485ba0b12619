"""A journalled run needs the threads backend in this version: other backends are refused
before any actor starts, with an error that names the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError


def test_a_store_with_another_backend_is_a_setup_error_naming_the_fix(tmp_path: Path) -> None:
    formation = Formation("f").add_function("inc", lambda x: x + 1)
    with pytest.raises(FormationSetupError, match="store= works with backend='threads' only"):
        formation.run(1, store=tmp_path / "runs.sqlite", backend="ray")
