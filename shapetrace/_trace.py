"""The public ``trace()`` / ``Trace``: the stages composed behind SPEC section 6.

``with shapetrace.trace(model) as t:`` records (``_tracer``); ``t.diagnostics`` analyses the
records once (``_analysis.analyse``: axis names, then the dataflow graph) and runs the rules on
that analysis (``_rules``); ``t.print()`` renders (``_render``). The recorder knows none of the
later stages: this module is where they meet.
"""

from __future__ import annotations

import torch

from ._analysis import Analysis, analyse
from ._dims import Dims, resolve_dims
from ._records import OpRecord, TensorMeta, TraceData
from ._spans import OptimizerSpans
from ._tracer import Observer, Recorder


class Trace(TraceData):
    """The ops recorded inside a ``with shapetrace.trace(...)`` block.

    ``records`` are in execution order. ``diagnostics`` are the rule findings, computed on first
    access after the block. ``exception`` is the exception that ended the block, the very object
    the caller caught and left as it was: its traceback keeps the frames of the code that raised
    (and their local tensors) alive while it is held. Records keep no frames nor tracebacks, so
    ``t.exception = None`` (or dropping the trace) frees them once the caller's reference is gone.
    """

    def __init__(self, model: torch.nn.Module | None = None, *, dims=None, rules: bool = True,
                 root: str | None = None, probes: bool = True, observer: Observer | None = None):
        if isinstance(dims, Dims):  # check() and the plugin's fixture: probe sizes, as given
            super().__init__(dims)
            self._known = None
        else:  # the user's own sizes: names from dims=, the model's config, or probe sizes seen
            from ._spec import proven_dims

            Dims.declared(dims or {})  # a bad size is the caller's error, raised here
            self._known = {**proven_dims(model), **dict(dims or {})}
            super().__init__(None)
        self.model = model
        self._run_rules = rules
        self._diagnostics = None
        self._recorder = Recorder(self, model, root=root, probes=probes, observer=observer)
        self._entered = False
        self._exited = False
        self._analysis: Analysis | None = None
        #: optimizer steps, each shown as one line (``_spans``)
        self.spans: list = []
        self._spans = OptimizerSpans(self.records, self.spans)

    @property
    def dims(self) -> Dims:
        """The names of sizes: as given (a ``Dims``), else resolved from what the block ran.

        ``dims={...}`` and the model's own ``n_embd``/``n_head``/... name sizes; the probe
        defaults name the rest only when the block ran at probe sizes (``resolve_dims``).
        """
        if self._known is None:
            return self._dims
        if self._resolved is not None:
            return self._resolved
        own = _weight_shapes(self.model)  # a model's constants (a 64-wide buffer) say nothing
        sizes = [s for rec in self.records  # of the sizes it runs at: the data's do
                 for m in (rec.inputs if rec.inputs else rec.outputs)  # torch.randn(...)
                 if (m.src is None or not rec.inputs) and m.shape not in own for s in m.shape]
        dims = resolve_dims(self._known, sizes)
        if self._exited:
            self._resolved = dims
        return dims

    @dims.setter
    def dims(self, value) -> None:
        self._dims = value
        self._resolved = None

    # context manager
    def __enter__(self) -> "Trace":
        if self._entered:
            raise RuntimeError("a shapetrace.trace() block cannot be entered twice")
        self._entered = True
        self._spans.__enter__()
        try:
            self._recorder.__enter__()
        except BaseException:
            self._spans.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            try:
                self._recorder.__exit__(exc_type, exc, tb)
            finally:
                self._spans.__exit__(exc_type, exc, tb)
        finally:
            self.exception = exc
            self._exited = True
        return False

    # results
    def _analyse(self) -> Analysis:
        """The analysis of the records, made on first use after the block, then kept."""
        if self._analysis is None:
            self._analysis = analyse(self)  # reads self.dims: resolved once, here
        return self._analysis

    @property
    def diagnostics(self):
        if self._diagnostics is None:
            if self._run_rules:
                from ._rules import run_trace_rules

                self._diagnostics = run_trace_rules(self._analyse())
            else:
                self._diagnostics = []
        return self._diagnostics

    def shape_of(self, meta: TensorMeta) -> str:
        return self._analyse().shape_of(meta)

    def to_json(self) -> list[dict]:
        shape_of = self._analyse().shape_of
        out = []
        for rec in self.records:
            item = {
                "op": rec.op,
                "module": rec.module,
                "file": rec.file,
                "line": rec.line,
                "source": rec.source,
                "inputs": [shape_of(m) for m in rec.inputs],
                "outputs": [shape_of(m) for m in rec.outputs],
            }
            if rec.error:
                item["error"] = f"{rec.error[0]}: {rec.error[1]}"
            if rec.warnings:
                item["warnings"] = list(rec.warnings)
            out.append(item)
        return out

    def print(self, console=None, **options) -> None:
        from ._render import print_trace

        print_trace(self, console=console, **options)

    def _repr_html_(self) -> str:  # a notebook shows the trace as the HTML report does
        from ._render._notebook import trace_html

        return trace_html(self)

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)


def _weight_shapes(model) -> set[tuple[int, ...]]:
    if not isinstance(model, torch.nn.Module):
        return set()
    from ._compat import module_tensors

    return {tuple(t.shape) for t in module_tensors(model)}


def trace(model: torch.nn.Module | None = None, *, dims=None, rules: bool = True) -> Trace:
    """Record every tensor op run inside the ``with`` block.

    >>> with trace(model) as t:
    ...     y = model(x)
    >>> t.print()

    ``model`` is optional: it only gives modules their attribute paths (``blocks.0.attn``).
    ``dims`` overrides probe sizes used to name axes (``{"B": 5, "T": 7}``).
    """
    return Trace(model, dims=dims, rules=rules)


__all__ = ["OpRecord", "Trace", "trace"]
