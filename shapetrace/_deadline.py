"""``--timeout``: stop a target that is still running after a given time.

A target is the user's code (its import, its constructor, its forward), which may loop forever.
The deadline is a timer signal that raises :class:`TimedOut` in the main thread wherever that
code is. ``TimedOut`` is a ``KeyboardInterrupt``, so every place that lets Ctrl-C through lets
the deadline through too, and ``except Exception`` in the user's code does not swallow it. If the
user's code catches it anyway (a bare ``except:`` in a retry loop), it is raised again every
quarter of a second, only ever inside the user's own code, until it gets out: shapetrace's and
torch's cleanup on the way out (restoring the model, removing hooks) is never interrupted twice.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from ._source import is_library_file

_AGAIN = 0.25  # seconds between repeats once the deadline has passed


class TimedOut(KeyboardInterrupt):
    """Raised into the running target when its ``--timeout`` has passed."""

    def __init__(self, seconds: float):
        super().__init__(f"still running after {seconds:g} s")
        self.seconds = seconds


def supported() -> bool:
    """True where a deadline can interrupt running Python code: a timer signal in the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def deadline(seconds: float | None):
    """Raise :class:`TimedOut` in the block once ``seconds`` have passed (None: no deadline).

    Where no timer signal can be used (Windows, a thread other than the main one) the block runs
    without a deadline.
    """
    if not seconds or not supported():
        yield
        return
    raised = False

    def expire(signum, frame):
        nonlocal raised
        if raised and (frame is None or is_library_file(frame.f_code.co_filename)):
            return  # on the way out: let the cleanup finish, stop the user's code next time
        raised = True
        raise TimedOut(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, _AGAIN)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
