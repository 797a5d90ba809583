"""Library calls that run many ops as one step: which records an optimizer step made.

``opt.step()`` on AdamW runs a dozen elementwise ops per parameter, all at the user's one line.
While a trace is entered, torch's global optimizer step hooks (public API) note the first and
the last record of each step, on the recording thread only, so that the renderer can show the
step as one line. A step that raises has no end and stays as its ops (they hold the error).
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from .hooks import LOCK, unhook


class Span(NamedTuple):
    """Records ``start`` to ``end`` (exclusive) were made by one call of ``label``."""

    start: int
    end: int
    label: str  # "AdamW.step"


class OptimizerSpans:
    """While entered, appends a :class:`Span` to ``spans`` for each optimizer step."""

    def __init__(self, records: list, spans: list):
        self.records = records
        self.spans = spans
        #: False: no optimizer hooks of its own; the caller's hooks (a training run's step
        #: watch) call :meth:`_pre` and :meth:`_post` for it
        self.hooks = True
        self._open: list[int] = []
        self._handles: list = []
        self._thread: int | None = None

    def __enter__(self) -> "OptimizerSpans":
        self._thread = threading.get_ident()
        if self.hooks:  # (without hooks of its own, nothing of torch's is looked up)
            from torch.optim import optimizer

            with LOCK:
                self._handles = [optimizer.register_optimizer_step_pre_hook(self._pre),
                                 optimizer.register_optimizer_step_post_hook(self._post)]
        return self

    def __exit__(self, *exc) -> bool:
        unhook(self._handles)
        self._open.clear()
        return False

    def _pre(self, opt, args, kwargs):
        if threading.get_ident() == self._thread:
            self._open.append(len(self.records))
        return None

    def _post(self, opt, args, kwargs):
        if threading.get_ident() != self._thread or not self._open:
            return None
        start = self._open.pop()
        if not self._open and len(self.records) > start:  # nested steps: the outermost only
            self.spans.append(Span(start, len(self.records), f"{type(opt).__name__}.step"))
        return None
