"""Warnings shown while a trace records: noted on the op that raised them.

``warnings.showwarning`` is global, and traces may run in several threads at once: one route
serves every recorder alive, installed by the first and put back by the last.
"""

from __future__ import annotations

import threading
import warnings


class WarningRoute:
    """One ``warnings.showwarning`` for every recorder alive, in any thread: installed by the
    first, the one it replaced put back by the last, whatever order they leave in (traces in
    two threads each replacing it would leave one's installed). A warning goes to the recorder
    of the thread that shows it, then on to the ``showwarning`` that was there before."""

    def __init__(self):
        self._lock = threading.Lock()
        self._recorders: list = []
        self._before = None

    def add(self, recorder) -> None:
        with self._lock:
            if not self._recorders:
                self._before = warnings.showwarning
                warnings.showwarning = self._show
            self._recorders.append(recorder)

    def remove(self, recorder) -> None:
        with self._lock:
            if recorder not in self._recorders:
                return
            self._recorders.remove(recorder)
            if not self._recorders:
                if warnings.showwarning == self._show:  # unless the user replaced it since
                    warnings.showwarning = self._before
                self._before = None

    def _show(self, message, category, filename, lineno, file=None, line=None):
        me = threading.get_ident()
        for recorder in list(self._recorders):
            if recorder.thread == me:
                filename, lineno = recorder._warned(message, category, filename, lineno)
        if self._before is not None:
            self._before(message, category, filename, lineno, file, line)


#: the one route, shared by every recorder
WARNINGS = WarningRoute()
