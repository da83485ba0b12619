"""Plain Pykka baselines measured beside each scenario, in the same process."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pykka

__all__ = ["EchoActor", "PlainChain"]


class _Stage(pykka.ThreadingActor):
    """One stage of a plain chain: apply ``fn`` and tell the next stage (or finish)."""

    def __init__(self, fn: Callable[[Any], Any], next_ref: Any, done: Callable[[Any], None] | None) -> None:
        super().__init__()
        self.fn = fn
        self.next_ref = next_ref
        self.done = done

    def on_receive(self, message: Any) -> Any:
        value, reply = message
        out = self.fn(value)
        if self.next_ref is not None:
            self.next_ref.tell((out, reply))
        elif reply is not None:
            reply.set_result(out)
        elif self.done is not None:
            self.done(out)
        return None


class PlainChain:
    """Three Pykka actors forwarding with ``tell``: the cheapest chain Pykka allows."""

    def __init__(self, fns: list[Callable[[Any], Any]], on_output: Callable[[Any], None] | None = None) -> None:
        self.refs: list[Any] = []
        next_ref = None
        for i, fn in enumerate(reversed(fns)):
            ref = _Stage.start(fn, next_ref, on_output if i == 0 else None)
            self.refs.insert(0, ref)
            next_ref = ref

    def send(self, value: Any) -> None:
        self.refs[0].tell((value, None))

    def submit(self, value: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        self.refs[0].tell((value, fut))
        return fut

    def ask(self, value: Any) -> Any:
        return self.submit(value).result()

    def stop(self) -> None:
        for ref in self.refs:
            ref.stop()


class EchoActor(pykka.ThreadingActor):
    """Answers ``ask`` with the message: the raw Pykka round trip."""

    def on_receive(self, message: Any) -> Any:
        return message
