"""A FastAPI service that runs a formation per request without blocking its event loop.

Two endpoints:

* ``GET /answer?q=...`` awaits ``formation.arun(q)``: the formation starts, runs and stops
  for this request (node actors start and stop on a worker thread).
* ``GET /fast?q=...`` awaits ``running.asubmit(q)`` on a formation started once, for the
  app's lifetime, in its lifespan (``async with formation.astart() as running``).

Ten concurrent requests to either take about as long as one: the loop serves them all
while the formation's ``async def`` node awaits. A client that disconnects cancels its
request's task, which cancels its run. Here the requests go through httpx's ASGI transport
(no server, no port); serve it for real with ``uvicorn examples.async_service:app``.

Run it with::

    python examples/async_service.py
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI, Request

from wingman_actors import Formation


async def fetch(question: str) -> str:
    """Stands in for an HTTP call or a database query: 200 ms of awaiting."""
    await asyncio.sleep(0.2)
    return f"facts about {question}"


def summarize(facts: str) -> str:
    return facts.upper()


formation = (
    Formation("answer")
    .add_function("fetch", fetch, concurrency=10)  # ten requests' coroutines at once
    .add_function("summarize", summarize)
    .connect("fetch", "summarize")
)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with formation.astart() as running:  # started once, stopped at shutdown
        app.state.running = running
        yield


app = FastAPI(lifespan=lifespan)


@app.get("/answer")
async def answer(q: str) -> dict[str, str]:
    result = await formation.arun(q, timeout=10)
    return {"answer": result.output, "run_id": result.run_id}


@app.get("/fast")
async def fast(q: str, request: Request) -> dict[str, str]:
    run = request.app.state.running.asubmit(q, timeout=10)
    result = await run
    return {"answer": result.output, "run_id": run.run_id}


async def main() -> None:
    async with lifespan(app):  # httpx's ASGI transport does not run the lifespan itself
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://service") as client:
            for path in ("/answer", "/fast"):
                t0 = time.perf_counter()
                replies = await asyncio.gather(*(client.get(path, params={"q": f"topic {i}"}) for i in range(10)))
                elapsed = time.perf_counter() - t0
                answers = [r.json()["answer"] for r in replies]
                print(f"{path}: 10 concurrent requests in {elapsed:.2f}s (one takes 0.2s); first: {answers[0]!r}")


if __name__ == "__main__":
    asyncio.run(main())
