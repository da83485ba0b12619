"""Loading a formation module: by file path (``formations/budget.py``), by module name
(``formations.budget``), or a ready formation by name (``budget``, see :mod:`.ready`).

A formation module exposes ``formation`` (a :class:`~wingman_actors.Formation`) or
``build(**options) -> Formation`` — taking ``provider=`` too if it wants the run's
provider — and optionally:

* ``sample_provider() -> Provider`` or ``SAMPLE_REPLIES`` (a list of scripted replies, or
  a dict of them per agent name: see :mod:`.samples`): deterministic offline replies,
  used when no real provider is configured;
* ``SAMPLE_LATENCY_S``: seconds each sample reply takes when the live view is on (a
  terminal), so a newcomer sees the run unfold offline; piped and ``--json`` runs stay
  instant;
* ``default_input()`` or ``DEFAULT_INPUT``: the input of a run given no ``--input``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import FormationSetupError, MissingExtraError
from ..formation import Formation
from ..providers._base import Provider
from ..providers._scripted import ScriptedProvider
from .errors import UsageError
from .ready import import_ready, ready_name, ready_names
from .samples import SampleReplies

__all__ = ["FormationModule", "load_module"]

_EXAMPLE = "e.g. my_flow.py, a module name such as my_pkg.flow, or a ready formation such as budget"


@dataclass(frozen=True)
class FormationModule:
    """A loaded formation module.

    Attributes:
        target: what the user named (a path or a module name).
        module: the imported module.
    """

    target: str
    module: ModuleType

    @property
    def has_samples(self) -> bool:
        """Whether the module ships offline sample replies."""
        return callable(getattr(self.module, "sample_provider", None)) or hasattr(self.module, "SAMPLE_REPLIES")

    def sample_latency(self) -> float:
        """The module's ``SAMPLE_LATENCY_S`` (0 when it sets none).

        Raises:
            UsageError: it is not a number >= 0.
        """
        value = getattr(self.module, "SAMPLE_LATENCY_S", 0.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise UsageError(f"{self.target}: SAMPLE_LATENCY_S must be a number of seconds >= 0, got {value!r}")
        return float(value)

    def sample_provider(self, latency_s: float = 0.0) -> Provider | None:
        """The module's sample replies as a provider, or None when it ships none.

        Args:
            latency_s: seconds each reply takes (a scripted provider's ``latency_s``).
        """
        factory = getattr(self.module, "sample_provider", None)
        if callable(factory):
            provider = factory()
            if not hasattr(provider, "run_inference"):
                raise UsageError(f"{self.target}: sample_provider() must return a provider, "
                                 f"got {type(provider).__name__}")
            if latency_s and isinstance(provider, ScriptedProvider):
                provider.latency_s = latency_s
            return provider  # type: ignore[no-any-return]
        replies = getattr(self.module, "SAMPLE_REPLIES", None)
        if replies is None:
            return None
        if isinstance(replies, Mapping):
            return SampleReplies(replies, latency_s)
        if isinstance(replies, str) or not hasattr(replies, "__iter__"):
            raise UsageError(f"{self.target}: SAMPLE_REPLIES must be a list of replies, or a dict of them per "
                             f"agent name, got {type(replies).__name__}")
        return ScriptedProvider(list(replies), cycle=True, model="sample-replies", latency_s=latency_s)

    def default_input(self) -> Any:
        """The module's default input (``default_input()`` or ``DEFAULT_INPUT``), or None."""
        factory = getattr(self.module, "default_input", None)
        if callable(factory):
            return factory()
        return getattr(self.module, "DEFAULT_INPUT", None)

    def build(self, provider: Provider | None, params: Mapping[str, Any]) -> tuple[Formation, bool]:
        """Build the module's formation.

        Args:
            provider: the run's provider, handed to ``build(provider=...)`` when ``build``
                takes it.
            params: keyword options for ``build`` (from ``--param``).

        Returns:
            The formation, and whether ``build`` took the provider (if not, the caller
            gives it to the run, where it replaces every agent's provider).

        Raises:
            UsageError: the module exposes no formation, ``build`` refuses the options or
                fails, or returns something else than a Formation.
            FormationSetupError: ``build`` found the formation invalid.
        """
        build = getattr(self.module, "build", None)
        if build is None:
            formation = getattr(self.module, "formation", None)
            if isinstance(formation, Formation):
                if params:
                    raise UsageError(f"{self.target} exposes a ready `formation`, which takes no options; "
                                     f"drop --param {', '.join(params)} (options need a build(**options) function)")
                return formation, False
            got = "" if formation is None else f" (its `formation` is a {type(formation).__name__})"
            raise UsageError(
                f"{self.target} exposes neither `formation` (a Formation) nor `build(**options) -> Formation`{got}; "
                "add one, e.g. `formation = Formation('name').add_function(...)`"
            )
        if not callable(build):
            raise UsageError(f"{self.target}: `build` must be a function returning a Formation, "
                             f"got {type(build).__name__}")
        try:
            signature = inspect.signature(build)
        except (TypeError, ValueError):
            signature = None
        takes_provider = signature is not None and "provider" in signature.parameters
        kwargs = dict(params)
        if takes_provider:
            kwargs["provider"] = provider
        if signature is not None:
            try:
                signature.bind(**kwargs)
            except TypeError as exc:
                accepted = [p for p in signature.parameters if p != "provider"]
                raise UsageError(f"{self.target}: build{signature} does not accept these options ({exc}); "
                                 f"options it takes: {', '.join(accepted) or 'none'}") from None
        try:
            formation = build(**kwargs)
        except FormationSetupError:
            raise
        except Exception as exc:
            raise UsageError(f"{self.target}: build() failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(formation, Formation):
            raise UsageError(f"{self.target}: build() must return a Formation, got {type(formation).__name__}")
        return formation, takes_provider


def _looks_like_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or os.sep in target or Path(target).exists()


def load_module(target: str) -> FormationModule:
    """Import the formation module ``target``: a ``.py`` file path, a module name, or the
    name of a ready formation (``budget``; ``formations/budget.py`` and
    ``formations.budget`` find it too where no such file or module is beside you).

    A file inside a package (a folder with ``__init__.py``) is imported by its dotted
    name, so its relative imports work; names resolve from the current directory first.

    Raises:
        UsageError: nothing found by that name, or importing it raised.
        FormationSetupError: the module declares an invalid formation as it is imported.
    """
    if not target.strip():
        raise UsageError(f"name a formation: a file path or a module name ({_EXAMPLE})")
    if _looks_like_path(target):
        ready = None if Path(target).expanduser().exists() else ready_name(target)
        module = _import_ready(target, ready) if ready else _import_file(target)
        return FormationModule(target, module)
    if not all(part.isidentifier() for part in target.split(".")):
        raise UsageError(f"{target!r} is neither a formation file nor a module name ({_EXAMPLE})")
    ready = ready_name(target)
    if ready and not _beside_you(target):
        return FormationModule(target, _import_ready(target, ready))
    cwd = os.getcwd()
    if cwd not in sys.path:  # as `python -m` does, so modules beside the user resolve
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and (target == exc.name or target.startswith(exc.name + ".")):
            raise UsageError(f"no module named {target!r}: pass a file path or an importable module name "
                             f"({_EXAMPLE}), from the directory that contains it{_ready_hint()}") from exc
        raise _import_failed(target, exc) from exc
    except FormationSetupError:  # declared wrong at import: the CLI says to fix the declaration, as for build()
        raise
    except Exception as exc:
        raise _import_failed(target, exc) from exc
    return FormationModule(target, module)


def _beside_you(target: str) -> bool:
    """Whether the current directory holds the module's top-level package or file."""
    top = Path.cwd() / target.split(".")[0]
    return top.is_dir() or top.with_suffix(".py").is_file()


def _import_ready(target: str, name: str) -> ModuleType:
    try:
        return import_ready(name)
    except FormationSetupError:
        raise
    except Exception as exc:
        raise _import_failed(target, exc) from exc


def _ready_hint() -> str:
    names = ready_names()
    return f"; ready formations: {', '.join(names)}" if names else ""


def _import_failed(target: str, exc: BaseException) -> UsageError:
    where = ""
    if isinstance(exc, SyntaxError) and exc.lineno:
        where = f" (line {exc.lineno})"
    if isinstance(exc, MissingExtraError):  # its message names the extra to install
        return UsageError(f"cannot load formation {target!r}: {exc}")
    return UsageError(f"cannot load formation {target!r}: {type(exc).__name__}{where}: {exc}")


def _import_file(target: str) -> ModuleType:
    path = Path(target).expanduser()
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "not found"
        raise UsageError(f"formation file {target!r} {what}: pass a .py file ({_EXAMPLE}){_ready_hint()}")
    path = path.resolve()
    parts = [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    if str(root) not in sys.path:  # siblings (and the package) import by name
        sys.path.insert(0, str(root))
    try:
        if len(parts) > 1 and all(p.isidentifier() for p in parts):
            module = importlib.import_module(".".join(parts))
            loaded = Path(getattr(module, "__file__", "") or "").resolve()
            if loaded != path:
                raise UsageError(f"{target}: importing it as {'.'.join(parts)!r} loads {loaded} instead "
                                 f"(another package of that name comes first on sys.path); run from "
                                 "the checkout that contains the file, or use the module name")
            return module
        name = f"wingman_formation_{path.stem}" if path.stem.isidentifier() else "wingman_formation"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise UsageError(f"{target}: not an importable Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # pydantic and type hints look modules up by name
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    except (UsageError, FormationSetupError):
        raise
    except Exception as exc:
        raise _import_failed(target, exc) from exc
