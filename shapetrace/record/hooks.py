"""Registering and removing torch hooks one thread at a time.

torch numbers each hook handle with a class counter (``RemovableHandle.next_id``) that two
threads can read at once: two traces entered on two threads at the same moment could get one
number for two hooks, and the first one removed would take the other's hook with it (a global
module hook of one trace silently gone from the other). Every hook shapetrace adds or takes
away goes through :data:`LOCK`.
"""

from __future__ import annotations

import threading
from typing import Callable

#: held while a hook is registered or removed (re-entrant: a helper may call another)
LOCK = threading.RLock()


def hooked(register: Callable, *args, **kwargs):
    """``register(*args, **kwargs)`` (a ``register_*_hook``) under the lock: its handle."""
    with LOCK:
        return register(*args, **kwargs)


def unhook(handles: list) -> None:
    """Removes every handle in ``handles`` under the lock, and empties the list."""
    with LOCK:
        for handle in handles:
            handle.remove()
    handles.clear()


__all__ = ["LOCK", "hooked", "unhook"]
