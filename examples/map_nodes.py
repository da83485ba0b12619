"""Map nodes: one function applied to every item of a list, at most ``max_workers`` items
at once, results in item order. A plain function runs on worker threads; an ``async def``
function is awaited on an event loop the runtime owns. ``retries`` apply per item: a retry
reruns only the items that failed, and the items that succeeded are kept.

The pipeline: split a text into words, look each word up (async, with a flaky "service"
that fails the first lookup of one word), then count the letters of each (sync), then
sum them.

Run it with::

    python examples/map_nodes.py
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

from wingman_actors import Formation

lookups: Counter[str] = Counter()


def words(text: str) -> list[str]:
    return text.split()


async def lookup(word: str) -> str:
    """A fake async service: answers after a short wait; 'actors' fails the first time."""
    lookups[word] += 1
    await asyncio.sleep(0.1)
    if word == "actors" and lookups[word] == 1:
        raise ConnectionError("the service hiccuped")
    return word.capitalize()


def letters(word: str) -> int:
    return len(word)


def total(counts: list[int]) -> int:
    return sum(counts)


formation = (
    Formation("map-demo")
    .add_function("words", words)
    .add_map("lookup", lookup, max_workers=8, retries=2, backoff=0)
    .add_map("letters", letters, max_workers=4)
    .add_function("total", total)
    .connect("words", "lookup", "letters", "total")
)

if __name__ == "__main__":
    print(formation.to_mermaid())
    text = "maps run one function over many items with actors"
    t0 = time.perf_counter()
    result = formation.run(text)
    elapsed = time.perf_counter() - t0
    print("letters in all the words:", result.output)
    print(f"{len(text.split())} lookups of 0.1 s each took {elapsed:.2f} s (8 at once)")
    print("lookups per word:", dict(lookups))  # only 'actors' was looked up twice
    print("attempts of the lookup node:", result.nodes["lookup"].attempts)
