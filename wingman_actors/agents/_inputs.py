"""What a session takes from its caller, checked: the message of a run, a run's timeout,
the history a session starts from. A bad one is refused with an error naming it before
anything of the session changes.

Used by :class:`~wingman_actors.agents._session.Session` and
:class:`~wingman_actors.agents._fleet.Fleet`; not a public API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import _timeouts as timeouts
from ..core import Message

__all__ = ["check_timeout", "start_history", "user_message"]


def user_message(message: str | Message) -> Message:
    """The user message a run starts from: ``message`` itself, or text made a user message.

    Raises:
        TypeError: ``message`` is neither (checked before the history takes it).
    """
    if isinstance(message, str):
        return Message.user(message)
    if isinstance(message, Message):
        return message
    raise TypeError(
        f"a session's message must be a str or a Message, got {type(message).__name__}: "
        "pass the text (session.run('...')) or Message.user(...)"
    )


def check_timeout(timeout: Any, owner: str = "") -> float | None:
    """Refuse a ``timeout`` that is not a number of seconds > 0, ``math.inf`` or None.

    Returns:
        The timeout to run with: None for no limit (``math.inf`` included).

    Raises:
        TypeError: not a number (a bool is not one).
        ValueError: not > 0 (nan included).
    """
    return timeouts.limit(f"{owner}timeout", timeout)


def start_history(history: Any) -> list[Message]:
    """A session's starting history as a new list of messages (message dicts validated; a
    dict's ``content`` may be text, as chat APIs write it: ``{"role": "user", "content": "hi"}``).

    Raises:
        TypeError: not a list of messages.
    """
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Iterable):
        raise TypeError(f"Session history must be a list of Message objects, got {type(history).__name__}")
    messages = list(history)
    for i, m in enumerate(messages):
        if type(m) is Message:
            continue
        if isinstance(m, Mapping):
            if isinstance(m.get("content"), str):
                m = {**m, "content": [{"type": "text", "text": m["content"]}]}
            messages[i] = Message.model_validate(m)
        elif not isinstance(m, Message):
            raise TypeError(
                f"Session history must be a list of Message objects; item {i} is a {type(m).__name__} "
                "(make one with Message.user(...), or keep session.history of an earlier session)"
            )
    return messages
