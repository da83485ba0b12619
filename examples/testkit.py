"""The testkit: unit-test actors and formation nodes alone, offline.

1. ``ActorProbe``: an actor that records what it receives. Make it the ``reply_to`` of a
   node actor (``node_actor(function_or_agent)``), tell the actor a ``work(payload)``
   message, then ``expect_message`` the ``ReplyKind.RESULT`` (or ``ReplyKind.FAILURE``)
   envelope it sends back.
2. ``run_node(formation, "node", input, provider=ScriptedProvider([...]))``: run one
   node of a formation by itself, with its agent's provider swapped for a scripted one;
   you get its output and trace. (The pytest plugin offers the same as the fixtures
   ``actor_probe`` and ``scripted_provider``.)

Run it with::

    python examples/testkit.py
"""

from __future__ import annotations

from pydantic import BaseModel

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.providers import new_provider
from wingman_actors.testing import ActorProbe, ReplyKind, ScriptedProvider, node_actor, run_node, work


class Summary(BaseModel):
    headline: str
    words: int


def word_count(text: str) -> int:
    if not text:
        raise ValueError("empty text")
    return len(text.split())


def probe_an_actor() -> None:
    print("1. ActorProbe + node_actor")
    with ActorProbe.start() as probe:
        ref = node_actor(word_count, name="count", reply_to=probe)
        try:
            ref.tell(work("the quick brown fox", run_id="r1"))
            reply = probe.expect_message(ReplyKind.RESULT, timeout=2)
            print(f"   result envelope: sender={reply.sender!r} run_id={reply.run_id!r} payload={reply.payload!r}")
            assert reply.payload == 4

            ref.tell(work(""))
            failure = probe.expect_message(ReplyKind.FAILURE, timeout=2)
            print(f"   failure envelope: payload={failure.payload!r}")
            probe.expect_no_message(0.05)
            print(f"   the probe received {len(probe.messages)} messages: {[str(m.type) for m in probe.messages]}")
        finally:
            ref.stop()


def formation() -> Formation:
    # In production the agent would use a real provider, e.g. new_provider("anthropic", {...});
    # here a scripted one stands in so the example has no network dependency at all.
    summarizer = Agent("summarizer", instructions="Summarise.", output_schema=Summary,
                       provider=new_provider("scripted", {"replies": ["(the real model)"]}))
    return (
        Formation("digest")
        .add_function("clean", str.strip)
        .add_agent("summarize", summarizer, prompt="Summarise in one line:\n{input}")
        .add_function("render", lambda s: f"{s.headline} ({s.words} words)")
        .connect("clean", "summarize", "render")
    )


def run_one_node() -> None:
    print("\n2. run_node: one agent node alone, with a scripted provider")
    provider = ScriptedProvider(['{"headline": "Owls hunt at night", "words": 4}'])
    run = run_node(formation(), "summarize", "Owls are nocturnal hunters.", provider=provider)
    print(f"   output: {run.output!r}")
    print(f"   trace: status={run.trace.status} attempts={run.trace.attempts} "
          f"tokens={run.trace.usage.total_tokens} duration={run.trace.duration_s * 1000:.1f} ms")
    print(f"   the model was asked: {provider.requests[0].messages[-1].text!r}")
    assert run.output == Summary(headline="Owls hunt at night", words=4)

    # A reply that never matches the schema: the node fails, with the cause chained.
    bad = ScriptedProvider(["not json", "still not json"])
    try:
        run_node(formation(), "summarize", "Owls.", provider=bad)
    except FormationRuntimeError as exc:
        print(f"   a failing node: {exc.node!r} -> {type(exc.__cause__).__name__}: {str(exc.__cause__)[:70]}...")


def main() -> None:
    probe_an_actor()
    run_one_node()


if __name__ == "__main__":
    main()
