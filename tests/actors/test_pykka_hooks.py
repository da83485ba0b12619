"""The Pykka internals the node actors rely on beyond Pykka's documented seams.

Node actors use the documented seams for implementors of actor types
(``_create_actor_inbox``, ``_start_actor_loop``, ``use_daemon_thread``), and, for the hot
path, more: they replace ``_actor_loop_running`` with a loop that runs work envelopes
without Pykka's wrapper (and mirror Pykka's handling of other messages), skip
``_actor_loop_teardown`` on a shared queue, stop themselves with ``_stop``, and reach the
actor object through ``ActorRef._actor_weakref``. pyproject.toml pins the Pykka versions
these were tested with; every test here fails when one of those hooks changes, so a new
Pykka release is checked before the pin is widened.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
import time
from typing import Any

import pykka

from wingman_actors.actors._address import start_actor

# sha256 of the source of the Pykka methods whose behaviour nodes.py mirrors or relies on
# (Pykka 4.5). A change means: read the new source, adapt nodes.py, update the digest.
_DIGESTS = {
    "_actor_loop": "961c1b2b624061fa",
    "_actor_loop_running": "4109f316d2be434e",
    "_actor_loop_teardown": "1b35ca263372af74",
    "_stop": "1d3216e9851326ac",
    "_handle_receive": "2851d2852985bbb5",
}


def test_the_pykka_methods_node_actors_mirror_are_unchanged() -> None:
    changed = {
        name: hashlib.sha256(inspect.getsource(getattr(pykka.Actor, name)).encode()).hexdigest()[:16]
        for name in _DIGESTS
    }
    assert changed == _DIGESTS, "Pykka changed a method wingman_actors/actors/nodes.py relies on"


class _Recorder(pykka.ThreadingActor):
    use_daemon_thread = True

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.seen: list[Any] = []

    def _actor_loop_setup(self) -> None:
        self.calls.append("setup")
        super()._actor_loop_setup()

    def _actor_loop_running(self) -> None:
        self.calls.append("running")
        item = self.actor_inbox.get()  # what ref.tell() put in the inbox
        self.seen.append(item)
        self._stop()

    def _actor_loop_teardown(self) -> None:
        self.calls.append("teardown")
        super()._actor_loop_teardown()


def test_the_loop_runs_setup_running_teardown_and_told_messages_carry_message_and_reply_to() -> None:
    actor = start_actor(_Recorder)
    assert isinstance(actor, _Recorder)  # ActorRef._actor_weakref gives the actor object
    actor.actor_ref.tell("hello")
    deadline = time.monotonic() + 3
    while len(actor.calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert actor.calls == ["setup", "running", "teardown"]
    (item,) = actor.seen
    assert item.message == "hello" and item.reply_to is None
    assert actor.actor_stopped.is_set()
    assert actor.actor_ref not in pykka.ActorRegistry.get_all()  # _stop unregistered it


def test_start_actor_loop_and_create_actor_inbox_are_the_seams_pykka_calls() -> None:
    made: list[str] = []

    class Hooked(pykka.ThreadingActor):
        @staticmethod
        def _create_actor_inbox() -> Any:
            made.append("inbox")
            return pykka.ThreadingActor._create_actor_inbox()

        def _start_actor_loop(self) -> None:
            made.append("loop")
            self.thread = threading.Thread(target=self._actor_loop, daemon=True)
            self.thread.start()

    ref = Hooked.start()
    ref.stop()
    assert made == ["inbox", "loop"]
