"""Fan-in: a node with several predecessors runs once all of them have delivered.

Two ways to receive their outputs:

* keyword arguments named after the predecessors: ``def report(stats, words, title)``
  is called as ``report(stats=..., words=..., title=...)`` (each checked against its
  annotation);
* a single parameter, which receives a dict ``{predecessor: output}``.

Run it with::

    python examples/fan_in.py
"""

from __future__ import annotations

from typing import Any

from wingman_actors import Agent, Formation
from wingman_actors.testing import ScriptedProvider

TEXT = "the quick brown fox jumps over the lazy dog the end"


def tokens(text: str) -> list[str]:
    return text.split()


def stats(words: list[str]) -> dict[str, int]:
    return {"words": len(words), "unique": len(set(words))}


def longest(words: list[str]) -> str:
    return max(words, key=len)


def report(stats: dict[str, int], longest: str, title: str) -> str:
    """Fan-in by keyword: each parameter is named after a predecessor node."""
    return f"{title}: {stats['words']} words ({stats['unique']} unique), longest {longest!r}"


def merge(parts: dict[str, Any]) -> list[str]:
    """Fan-in by dict: one parameter receives {predecessor: output}."""
    return [f"{name} -> {value}" for name, value in sorted(parts.items())]


def main() -> None:
    titler = Agent("titler", provider=ScriptedProvider(["A Fox Tale"]))
    by_keyword = (
        Formation("fan-in-kwargs")
        .add_function("tokens", tokens)
        .add_function("stats", stats)
        .add_function("longest", longest)
        .add_agent("title", titler, prompt="Give a title to: {input}")
        .add_function("report", report)
        .connect("tokens", "stats", "report")
        .connect("tokens", "longest", "report")
        .connect("tokens", "title", "report")
    )
    print(by_keyword.to_mermaid())
    print("keyword fan-in:", by_keyword.run(TEXT).output)

    by_dict = (
        Formation("fan-in-dict")
        .add_function("tokens", tokens)
        .add_function("stats", stats)
        .add_function("longest", longest)
        .add_function("merge", merge)
        .connect("tokens", "stats", "merge")
        .connect("tokens", "longest", "merge")
    )
    print("\ndict fan-in:")
    for line in by_dict.run(TEXT).output:
        print("  ", line)


if __name__ == "__main__":
    main()
