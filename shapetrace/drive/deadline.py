"""``--timeout`` (or ``timeout = SECONDS`` in the config): stop a target that is still running
after a given time.

A target is the user's code (its import, its constructor, its forward), which may loop forever.
The deadline is a timer signal that raises :class:`TimedOut` in the main thread wherever that
code is. ``TimedOut`` is a ``KeyboardInterrupt``, so every place that lets Ctrl-C through lets
the deadline through too, and ``except Exception`` in the user's code does not swallow it. If the
user's code catches it anyway (a bare ``except:`` around the loop body), a line tracer raises it
again at each of the user's lines until it gets out. shapetrace's and torch's cleanup on the way
out (restoring the model, removing hooks) is never interrupted. A timer that was already set
(pytest-timeout's, an enclosing deadline) is set again afterwards with the time it had left.
"""

from __future__ import annotations

import contextlib
import dis
import signal
import sys
import threading
import time

from ..base.source import is_library_file

_AGAIN = 0.25  # seconds between repeats once the deadline has passed


class TimedOut(KeyboardInterrupt):
    """Raised into the running target when its ``--timeout`` has passed."""

    def __init__(self, seconds: float):
        super().__init__(f"still running after {seconds:g} s")
        self.seconds = seconds


def supported() -> bool:
    """True where a deadline can interrupt running Python code: a timer signal in the main thread."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _in_user_code(frame) -> bool:
    """Whether the user's code is on the stack (still running, having caught the deadline)."""
    while frame is not None:
        if not is_library_file(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return False


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
    collecting = _Collecting()

    def expire(signum, frame):
        nonlocal raised
        if collecting.now or frame is None or frame.f_code in _OWN_CALLBACKS:
            # inside a garbage-collector callback (hypothesis installs one; ours mark the
            # collection's start and end, and the signal may come before the mark), an
            # exception is printed as "ignored" and lost: wait for the next repeat
            return
        if raised:
            if _in_user_code(frame):  # the user's code caught it: stop it at its next line
                _raise_on_user_lines(frame, seconds)
            return  # else on the way out: let the cleanup finish
        raised = True
        raise TimedOut(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    collecting.__enter__()
    tracer = sys.gettrace()
    left, repeat = signal.setitimer(signal.ITIMER_REAL, seconds, _AGAIN)  # an earlier timer's
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        collecting.__exit__()
        if sys.gettrace() is not tracer:
            sys.settrace(tracer)
        if left:  # the earlier timer goes on, less the time spent here (at once if it is past)
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 1e-3),
                             repeat)


class _Collecting:
    """Whether the garbage collector is running its callbacks: ``now`` is true from the first
    callback of a collection to the last (two callbacks of its own, first and last in
    ``gc.callbacks``)."""

    def __init__(self):
        self.now = False

    def _start(self, phase, info):
        if phase == "start":
            self.now = True

    def _stop(self, phase, info):
        if phase == "stop":
            self.now = False

    def __enter__(self):
        import gc

        gc.callbacks.insert(0, self._start)
        gc.callbacks.append(self._stop)
        return self

    def __exit__(self, *exc_info):
        import gc

        for callback in (self._start, self._stop):
            if callback in gc.callbacks:
                gc.callbacks.remove(callback)
        self.now = False
        return False


#: the code of the collector callbacks that mark a collection: a signal that arrives in one of
#: them arrives inside a collection
_OWN_CALLBACKS = (_Collecting._start.__code__, _Collecting._stop.__code__)


def stopped(exc: TimedOut, doing: str, source: str = "--timeout") -> str:
    """One line for a target stopped by its deadline: how long, which setting, what it was
    doing, and where its code was (``stopped after 1 s (--timeout) while running it, still
    running at model.py:12``)."""
    from ..base.source import display_path, innermost_user_frame

    found = innermost_user_frame(exc.__traceback__, installed_is_library=False, files_only=True) \
        or innermost_user_frame(exc.__traceback__, installed_is_library=False)
    where = f", still running at {display_path(found[0])}:{found[1]}" if found else ""
    return f"stopped after {exc.seconds:g} s ({source}) while {doing}{where}"


def _at_nop(frame) -> bool:
    """Whether the frame is at a ``NOP`` (``try:``, ``while True:``, ``pass``). The compiler
    leaves some of them outside every exception handler's range (the ``try:`` a loop jumps back
    to), so an exception raised there would skip every ``except`` and ``with`` of the frame;
    the next instruction that does something is a safe place."""
    code = frame.f_code.co_code
    lasti = frame.f_lasti
    return 0 <= lasti < len(code) and code[lasti] == _NOP


_NOP = dis.opmap["NOP"]


def _raise_on_user_lines(frame, seconds: float) -> None:
    """A line tracer that raises :class:`TimedOut` at every line of the user's code, so a bare
    ``except:`` around the loop body cannot keep it running (the handler's own line raises)."""

    def on_line(frame, event, arg):
        if event == "line" and not is_library_file(frame.f_code.co_filename) \
                and not _at_nop(frame):
            raise TimedOut(seconds)
        return on_line

    def on_call(frame, event, arg):
        return None if is_library_file(frame.f_code.co_filename) else on_line

    while frame is not None:  # frames already running: sys.settrace only sees new calls
        if not is_library_file(frame.f_code.co_filename):
            frame.f_trace = on_line
        frame = frame.f_back
    sys.settrace(on_call)
