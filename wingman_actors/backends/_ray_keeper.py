"""Starting Ray so that its local processes live as long as the formation, whichever
thread starts it.

On Linux, ``ray.init`` starts Ray's local processes (GCS, raylet) with
``prctl(PR_SET_PDEATHSIG, SIGKILL)``, and the kernel counts the *thread* that started a
process as its parent: when the thread that called ``ray.init`` ends, Ray's processes are
killed, though the process that started them lives on. Ray offers no option to turn this
off. So when a formation starts Ray from a thread other than the main thread (a request
handler, a worker pool), :func:`init_ray` calls ``ray.init`` on a thread of its own that
lives until the formation stops, and shuts Ray down from there; from the main thread it
calls ``ray.init`` directly (the main thread lives as long as the process, and only there
does Ray install its SIGTERM handler).

Several formations of one process share that Ray: :func:`acquire_ray` starts it for the
first and counts the others in, :func:`release_ray` shuts it down when the last of them
stops (before, the first formation to stop shut down the Ray the others still used). A Ray
the program set up itself is shared and never shut down by a formation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["RayKeeper", "acquire_ray", "init_ray", "release_ray"]

log = logging.getLogger("wingman_actors.backends")


class RayKeeper:
    """A thread that called ``ray.init`` and waits, keeping Ray's local processes alive,
    until :meth:`stop` (which shuts that Ray down and ends the thread)."""

    def __init__(self, ray: Any, kwargs: Mapping[str, Any]) -> None:
        self._ray = ray
        self._kwargs = dict(kwargs)
        self._ready = threading.Event()
        self._release = threading.Event()
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._keep, name="wingman-ray-init", daemon=True)

    def start(self) -> None:
        """Call ``ray.init`` on the keeper's thread; raise what it raised."""
        self.thread.start()
        self._ready.wait()
        if self._error is not None:
            self.thread.join()
            raise self._error

    def _keep(self) -> None:
        try:
            self._ray.init(**self._kwargs)
        except BaseException as exc:  # handed to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._release.wait()
        try:
            if self._ray.is_initialized():
                self._ray.shutdown()
        except Exception:
            log.warning("shutting down the Ray this formation started failed", exc_info=True)

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the Ray down (on the keeper's thread) and end the thread."""
        self._release.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            log.warning("Ray's shutdown took more than %.0fs; its thread is left to finish", timeout)


def init_ray(ray: Any, kwargs: Mapping[str, Any]) -> RayKeeper | None:
    """``ray.init(**kwargs)`` where Ray's processes outlive the calling thread: directly
    on the main thread (None), else on a :class:`RayKeeper`'s thread (returned: stop it to
    shut that Ray down)."""
    if threading.current_thread() is threading.main_thread():
        ray.init(**kwargs)
        return None
    keeper = RayKeeper(ray, kwargs)
    keeper.start()
    return keeper


class _Shared:
    """The Ray formations of this process started, and how many formations use it."""

    lock = threading.Lock()
    users = 0
    keeper: RayKeeper | None = None


def acquire_ray(ray: Any, kwargs: Mapping[str, Any]) -> bool:
    """Make sure Ray is up for a formation: ``ray.init(**kwargs)`` (see :func:`init_ray`)
    unless this process has a Ray already.

    Returns:
        True if the formation shares a Ray that formations started (it must call
        :func:`release_ray` when it stops); False for a Ray the program set up itself.
    """
    with _Shared.lock:
        if ray.is_initialized():
            if _Shared.users == 0:
                return False  # not ours: the program's own, left alone
            _Shared.users += 1
            return True
        _Shared.keeper = init_ray(ray, kwargs)
        _Shared.users = 1
        return True


def release_ray(ray: Any) -> None:
    """A formation that :func:`acquire_ray` counted in stops: the last one shuts Ray down
    (a local Ray ends; a cluster that was joined is only left)."""
    with _Shared.lock:
        _Shared.users = max(0, _Shared.users - 1)
        if _Shared.users:
            return
        keeper, _Shared.keeper = _Shared.keeper, None
    if keeper is not None:
        keeper.stop()  # shuts down the Ray it started, then ends
    elif ray.is_initialized():
        ray.shutdown()
