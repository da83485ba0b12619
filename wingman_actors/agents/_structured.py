"""Structured output: turning an agent's ``output_schema`` into a JSON Schema for the model
and validating the final answer against it."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..core import InferenceResponse
from ..errors import (
    AgentError,
    ErrorKind,
    OutputValidationError,  # defined with the other errors; kept importable here
)
from ..tools._base import typed_dict_note

__all__ = ["OutputSchema", "OutputValidationError", "extract_json", "only_tool_calls", "unmatched"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)\n?```", re.DOTALL)


def extract_json(text: str) -> str:
    """The JSON document in ``text``: the whole text, a fenced block, or the outermost braces."""
    stripped = text.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        return stripped
    m = _FENCE.search(text)
    if m:
        return m.group(1).strip()
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = text.find(open_), text.rfind(close)
        if 0 <= start < end:
            span = text[start : end + 1]
            return span if _is_json(span) else _first_document(text, open_) or span
    return stripped


def _is_json(doc: str) -> bool:
    try:
        json.loads(doc)
    except ValueError:
        return False
    return True


def _first_document(text: str, open_: str, tries: int = 8) -> str | None:
    """The first JSON document opening with ``open_`` in ``text``, when prose around it has
    brackets of its own (``{"a": 1}. Tell me if {anything} is missing``)."""
    decoder = json.JSONDecoder()
    start = text.find(open_)
    while start >= 0 and tries > 0:
        try:
            _, end = decoder.raw_decode(text, start)
        except ValueError:
            start, tries = text.find(open_, start + 1), tries - 1
            continue
        return text[start:end]
    return None


@dataclass(frozen=True)
class OutputSchema:
    """A validated wrapper around an ``output_schema``: a type pydantic can validate
    (usually a ``BaseModel`` subclass) or a JSON Schema dict."""

    source: Any
    adapter: TypeAdapter[Any] | None
    schema: dict[str, Any]

    @classmethod
    def of(cls, source: Any) -> OutputSchema:
        if isinstance(source, OutputSchema):
            return source
        if not isinstance(source, dict):
            try:
                return _cached_of(source)
            except TypeError as exc:
                if "unhashable" not in str(exc):
                    raise
        return cls._build(source)

    @classmethod
    def _build(cls, source: Any) -> OutputSchema:
        if isinstance(source, dict):
            if source.get("type") not in (None, "object", "array", "string", "number", "integer", "boolean"):
                raise ValueError(f"output_schema dict is not a JSON Schema: type={source.get('type')!r}")
            return cls(source, None, dict(source))
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(source)
            schema = adapter.json_schema()
        except Exception as exc:
            raise TypeError(
                f"output_schema {source!r} is not a type pydantic can validate{typed_dict_note(exc)} "
                "(use a pydantic BaseModel subclass or a JSON Schema dict)"
            ) from exc
        return cls(source, adapter, schema)

    def instruction(self) -> str:
        """The instruction appended to the system prompt."""
        return (
            "When you give your final answer, reply with only a JSON document (no prose, no code "
            "fences) that matches this JSON Schema:\n" + json.dumps(self.schema, separators=(",", ":"))
        )

    def validate_text(self, text: str) -> Any:
        """Parse and validate the answer; raises :class:`OutputValidationError`."""
        doc = extract_json(text)
        if self.adapter is not None:
            try:
                return self._validate(doc)
            except ValidationError as exc:
                value, error = self._as_string(text, exc)
                if error is None:
                    return value
                raise OutputValidationError(_problems(error)) from error
        try:
            value = json.loads(doc)
        except json.JSONDecodeError as exc:
            raise OutputValidationError(f"not valid JSON: {exc}") from exc
        expected = self.schema.get("type")
        if expected == "object":
            if not isinstance(value, dict):
                raise OutputValidationError(f"expected a JSON object, got {type(value).__name__}")
            missing = [k for k in self.schema.get("required", []) if k not in value]
            if missing:
                raise OutputValidationError(f"missing required field(s): {', '.join(missing)}")
        elif expected == "array" and not isinstance(value, list):
            raise OutputValidationError(f"expected a JSON array, got {type(value).__name__}")
        return value

    def _validate(self, doc: str) -> Any:
        assert self.adapter is not None
        value = self.adapter.validate_json(doc)
        if isinstance(value, Iterator):
            # Iterable[Model] validates lazily: its items now, so that a bad one is corrected
            # like any error and the output is a list (journalled, pickled, read twice).
            value = list(value)
        return value

    def _as_string(self, text: str, exc: ValidationError) -> tuple[Any, ValidationError | None]:
        """The answer taken as one JSON string, for schemas that take text (``str``, a
        ``Literal`` or ``Enum`` of labels, ``int | str``): a model asked for a label
        answers ``spam``, not ``"spam"``. Returns the value, or the error to report: this
        attempt's when the schema takes strings but not this one (it names the allowed
        labels), else the JSON document's."""
        assert self.adapter is not None
        if _is_json_string(text.strip()):
            # the answer is a JSON string already ('""'): read as text it would be its quotes
            return None, exc
        try:
            return self._validate(json.dumps(text.strip())), None
        except ValidationError as as_text:
            takes_strings = any(not e["type"].endswith(("_type", "_parsing")) for e in as_text.errors())
            return None, as_text if takes_strings else exc


def _is_json_string(text: str) -> bool:
    if text[:1] != '"':
        return False
    try:
        return isinstance(json.loads(text), str)
    except json.JSONDecodeError:
        return False


def unmatched(agent: str, exc: OutputValidationError, response: InferenceResponse) -> AgentError:
    """The error of a run whose answer still does not match the schema: after the
    corrective retry, or at once when the answer was cut off at max_tokens (a retry would
    be cut off too). The first carries the answer, which makes it retryable (a fresh
    session may answer differently); a cut-off one does not (it would be cut off again)."""
    error = _unmatched(agent, exc, response)
    if response.stop_reason != "max_tokens":
        error.answer = response.text
    return error


def only_tool_calls(agent: str, limit: int, tools: list[str]) -> AgentError:
    """The error of a run whose calls past ``max_steps`` (offered no tools) still asked for
    ``tools`` instead of answering: no text to validate, and the schema's "Invalid JSON"
    would not say why."""
    return AgentError(
        f"agent {agent!r} reached max_steps={limit}, and its calls past it (offered no tools) still asked for "
        f"tools ({', '.join(sorted(set(tools)))}) instead of answering: raise max_steps, or tell it in its "
        "instructions to answer once it has what it needs", kind=ErrorKind.INVALID)


def _unmatched(agent: str, exc: OutputValidationError, response: InferenceResponse) -> AgentError:
    if response.stop_reason == "max_tokens":
        return AgentError(
            f"agent {agent!r}: the answer was cut off at max_tokens ({response.usage.output_tokens} output "
            f"tokens) before it matched the output schema ({exc}); raise the agent's max_tokens or ask "
            "for a shorter answer",
            kind=ErrorKind.INVALID,
        )
    return AgentError(
        f"agent {agent!r}: the answer does not match the output schema after one corrective retry: {exc}",
        kind=ErrorKind.INVALID,
    )


def _problems(exc: ValidationError) -> str:
    """Every error of ``exc`` as ``loc: message``, for the model to read."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())


@functools.lru_cache(maxsize=256)
def _cached_of(source: Any) -> OutputSchema:
    # Building a TypeAdapter costs far more than a session run; agents built per task
    # (fleets with per-task instructions) share one per schema type.
    return OutputSchema._build(source)
