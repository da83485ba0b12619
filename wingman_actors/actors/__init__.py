"""Node actors: the Pykka actors a running formation is made of.

Internal: a formation starts these for its nodes (function, agent, fleet and map nodes),
and the messages between them are envelopes. To test a node alone, use
:mod:`wingman_actors.testing` (``run_node``, ``ActorProbe``), which exposes all a test
needs without importing from here.
"""
