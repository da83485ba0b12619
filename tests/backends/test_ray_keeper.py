"""A Ray that formations started is shared by the formations of the process, and shut down
by the last of them to stop; a Ray the program set up itself is never shut down by them."""

from __future__ import annotations

import threading
from typing import Any

from wingman_actors.backends._ray_keeper import acquire_ray, release_ray


class FakeRay:
    """``ray.init`` / ``is_initialized`` / ``shutdown``, counted (no processes)."""

    def __init__(self) -> None:
        self.up = False
        self.inits: list[dict[str, Any]] = []
        self.shutdowns = 0
        self.init_threads: list[str] = []

    def init(self, **kwargs: Any) -> None:
        self.up = True
        self.inits.append(kwargs)
        self.init_threads.append(threading.current_thread().name)

    def is_initialized(self) -> bool:
        return self.up

    def shutdown(self) -> None:
        self.up = False
        self.shutdowns += 1


def test_the_ray_formations_started_ends_with_the_last_formation_that_uses_it() -> None:
    ray = FakeRay()
    assert acquire_ray(ray, {"address": "local"}) is True  # formation A starts Ray
    assert acquire_ray(ray, {"address": "local"}) is True  # formation B shares it
    assert ray.inits == [{"address": "local"}]
    release_ray(ray)  # A stops: B still uses it
    assert ray.up and ray.shutdowns == 0
    release_ray(ray)  # B stops: the last one
    assert not ray.up and ray.shutdowns == 1
    assert acquire_ray(ray, {"address": "local"}) is True  # a later formation starts a new one
    release_ray(ray)
    assert len(ray.inits) == 2 and ray.shutdowns == 2


def test_a_ray_the_program_set_up_itself_is_shared_and_never_shut_down() -> None:
    ray = FakeRay()
    ray.init(address="auto")  # the program's own
    assert acquire_ray(ray, {"address": "local"}) is False
    assert ray.inits == [{"address": "auto"}] and ray.up and ray.shutdowns == 0


def test_from_another_thread_ray_starts_and_ends_on_a_thread_of_its_own() -> None:
    ray = FakeRay()
    result: list[bool] = []
    starter = threading.Thread(target=lambda: result.append(acquire_ray(ray, {})), name="request-handler")
    starter.start()
    starter.join()
    assert result == [True] and ray.init_threads == ["wingman-ray-init"]  # not the short-lived caller
    release_ray(ray)
    assert not ray.up
    assert not any(t.name == "wingman-ray-init" for t in threading.enumerate())
