"""A Griffe extension for the API reference: read ``Example:`` as ``Examples:``.

Our docstrings (Google style) head their doctests ``Example:``, which Griffe's Google
parser reads as an admonition, so the ``>>>`` lines would render as prose (and the
brackets in them as Markdown links). ``Examples:`` is the section Griffe renders as
Python code; this extension reads the one as the other, so the sources keep their
spelling. Loaded by ``mkdocs.yml`` (mkdocstrings' python handler, ``extensions``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class DoctestExamples(griffe.Extension):
    """Rename ``Example:`` sections to ``Examples:`` before the docstring is parsed."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
