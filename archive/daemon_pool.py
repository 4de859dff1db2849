"""A pool of daemon threads for the archive's requests, which a stopped run never waits for."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["DaemonPool"]

T = TypeVar("T")

_Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class DaemonPool:
    """Threads that only talk to the archive. Daemon threads, and leaving the block never waits
    for them: Ctrl-C or a stopped job must not wait on an answer the archive is trickling (each
    request ends by its own deadline anyway); tasks not begun are cancelled."""

    def __init__(self, size: int, name: str) -> None:
        self._tasks: queue.SimpleQueue[
            tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None
        ]
        self._tasks = queue.SimpleQueue()
        self._closed = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"hacs-{name}-{n}", daemon=True)
            for n in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, function: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        self._tasks.put((future, function, args))
        return future

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            future, function, args = task
            if self._closed.is_set():
                future.cancel()
                continue
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(function(*args))
            except BaseException as error:  # handed to the waiting thread
                future.set_exception(error)

    def __enter__(self) -> DaemonPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        for _thread in self._threads:
            self._tasks.put(None)
