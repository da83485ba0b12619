"""A Griffe extension for the API reference: our docstrings, read as Markdown.

The docstrings are Google style with two habits from Sphinx that Griffe's Google parser
and Markdown do not know, and this extension translates them before a docstring is
parsed, so the sources keep their spelling:

* ``Example:`` heads a doctest; Griffe reads it as an admonition (the ``>>>`` lines would
  render as prose, and brackets in them as Markdown links). ``Examples:`` is the section
  it renders as Python code.
* Sphinx roles (``:class:`~wingman_actors.core.Message```, ``:meth:`run```) become inline
  code (``Message``, ``run``), as Sphinx would show them.

Loaded by ``mkdocs.yml`` (mkdocstrings' python handler, ``extensions``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)
_ROLE = re.compile(r":(?:attr|class|data|exc|func|meth|mod|obj):`(~?)\.?([^`]+)`")


def _role(match: re.Match[str]) -> str:
    shorten, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if shorten else target}`"


class ReadableDocstrings(griffe.Extension):
    """Rename ``Example:`` sections to ``Examples:`` and turn Sphinx roles into code."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            text = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = _ROLE.sub(_role, text)
