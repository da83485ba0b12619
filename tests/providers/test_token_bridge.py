"""The token bridge of the async providers (``providers/_aio.py``): what it is given to
await when the run is over already is closed, not left for the collector to warn about
(an unawaited coroutine's ``RuntimeWarning`` surfaces in whichever test collects it)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings

import pytest

from wingman_actors._cancel import CancelToken, cancel_scope
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._token_bridge import TokenBridge


def test_a_bridge_of_a_cancelled_run_closes_the_coroutine_it_does_not_await() -> None:
    token = CancelToken()
    token.cancel()

    async def main() -> tuple[str, ErrorKind]:
        with cancel_scope(token):
            bridge = TokenBridge()
            sleep = asyncio.sleep(1)
            try:
                with pytest.raises(AgentError) as info:
                    await bridge.run(sleep)
            finally:
                bridge.close()
            return inspect.getcoroutinestate(sleep), info.value.kind

    assert asyncio.run(main()) == (inspect.CORO_CLOSED, ErrorKind.CANCELLED)


def test_a_sleep_of_a_cancelled_run_raises_and_leaves_no_coroutine_unawaited() -> None:
    token = CancelToken()
    token.cancel()

    async def main() -> ErrorKind:
        with cancel_scope(token):
            bridge = TokenBridge()
            try:
                with pytest.raises(AgentError) as info:
                    await bridge.sleep(1.0)
            finally:
                bridge.close()
            return info.value.kind

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kind = asyncio.run(main())
        gc.collect()

    assert kind is ErrorKind.CANCELLED
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []
