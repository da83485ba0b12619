"""Integrations with the wider ecosystem, each imported only when used.

* :mod:`wingman_actors.integrations.mcp`: Model Context Protocol tools, both ways
  (``pip install "wingman-actors[mcp]"``).
* :mod:`wingman_actors.integrations.otel`: OpenTelemetry spans after the GenAI semantic
  conventions (``pip install "wingman-actors[otel]"``); nothing of OpenTelemetry is
  imported unless it is installed.
"""
