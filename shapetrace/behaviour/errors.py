"""Whose fault an exception raised while re-running a module is: the module's, or shapetrace's.

The module's own failures (it raises on the second call, or on float64 inputs) are not findings:
the trace of the first run reports how the module fails, and the checks say they could not run.
A failure of the checks themselves must not be passed off as the module's: it propagates as an
:class:`InternalCheckError`, which ``check()`` reports as an internal error to be reported.
"""

from __future__ import annotations

import os

from ..base.source import innermost_user_frame, is_library_file

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: shapetrace's torch-function handlers (the tracer's) only hand the user's call on to torch:
#: an exception that passes through one was raised by the op, not by shapetrace.
_DISPATCH = "__torch_function__"


class InternalCheckError(Exception):
    """A bug in one of shapetrace's behaviour checks (not in the checked module)."""

    def __init__(self, check: str, error: BaseException):
        self.check = check
        self.error = error
        #: what the checks that had finished found, with the others skipped for this error
        #: (a ``BehaviourResult``; None when no check had begun)
        self.partial = None
        super().__init__(f"internal error in shapetrace's {check} check: {type(error).__name__}: "
                         f"{error}. This is a bug in shapetrace, not in the module: please report it")


def raised_by_user(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc`` that is not torch's nor Python's is the user's.

    The user's frames are found by ``innermost_user_frame`` (installed packages, a Hugging Face
    model, count as the user's); a shapetrace frame deeper than the innermost user frame (a hook
    or an observer that the checks installed) makes the exception shapetrace's, and so does a
    traceback with no user frame at all (raised by the checks' own code)."""
    tb = exc.__traceback__
    user = innermost_user_frame(tb, installed_is_library=False)
    if user is None:
        return False
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    last = max(i for i, (code, line) in enumerate(frames) if (code.co_filename, line) == user)
    return not any(_is_own(code) for code, _ in frames[last + 1:])


def _is_own(code) -> bool:
    """A frame of shapetrace's own code (its demo is user code), other than a dispatch."""
    filename = code.co_filename
    return (filename.startswith(_PACKAGE) and is_library_file(filename)
            and code.co_name != _DISPATCH)
