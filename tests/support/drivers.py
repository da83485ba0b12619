"""Running one session message by each of the four ways a caller can: ``run``, ``run_stream``,
``arun`` and ``astream`` (a test parametrised over :data:`DRIVERS` checks that they agree)."""

from __future__ import annotations

import asyncio

from wingman_actors import Session
from wingman_actors.agents import Result

DRIVERS = ["run", "run_stream", "arun", "astream"]


def run_with(driver: str, session: Session, message: str) -> Result:
    """``session``'s result for ``message``, run by ``driver`` (one of :data:`DRIVERS`; a
    stream is read to its end first)."""
    if driver == "run":
        return session.run(message)
    if driver == "run_stream":
        stream = session.run_stream(message)
        for _ in stream:
            pass
        return stream.result()

    async def main() -> Result:
        if driver == "arun":
            return await session.arun(message)
        astream = session.astream(message)
        async for _ in astream:
            pass
        return astream.result()

    return asyncio.run(main())
