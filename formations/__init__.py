"""Ready formations the launcher runs (``wingman-actors run formations/budget.py``).

* :mod:`formations.budget` — a PDF bank statement → transactions → categories (a fleet of
  agents, structured output) → totals by category → budget advice.
* :mod:`formations.research` — an outline (structured output) → a fleet of researchers,
  one per section → an assembled report.

Each module exposes ``build(provider=None, **options) -> Formation``, a
``sample_provider()`` giving deterministic offline sample replies (so the launcher works
with no API key and no network), and a default input (``default_input()`` or
``DEFAULT_INPUT``). Write your own formation module the same way and run it with
``wingman-actors run path/to/module.py``.
"""
