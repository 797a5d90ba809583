"""The public ``trace()`` / ``Trace``: the stages composed behind SPEC section 6.

``with shapetrace.trace(model) as t:`` records (``record.tracer``); ``t.diagnostics`` analyses the
records once (``analysis.facts.analyse``: axis names, then the dataflow graph) and runs the rules
on that analysis (``rules``); ``t.print()`` renders (``render``). The recorder knows none of the
later stages: this module is where they meet.

``t.diagnostics`` is the one list of findings about the run: ``check()`` adds what it finds
beyond the trace rules (what the forward raised, the behaviour checks, the reference comparison)
with ``t.add(...)``, and its report reads the same list (``results.TargetResult``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import torch

from ..analysis.facts import Analysis, analyse
from ..base.compat import all_modules, compiler_off, eager_module
from ..base.diagnostics import Diagnostic
from ..base.dims import Dims
from ..base.records import OpRecord, TensorMeta, TraceData
from ..record.spans import OptimizerSpans
from ..record.tracer import Observer, Recorder


class Trace(TraceData):
    """The ops recorded inside a ``with shapetrace.trace(...)`` block.

    ``records`` are in execution order. ``diagnostics`` are the findings: the rules', computed
    on first access after the block, then those a caller adds (:meth:`add`). ``exception`` is what ended the block: a copy of the exception the
    caller caught (same type, message and attributes) without its traceback, so that a trace kept
    after a failure does not keep the frames of the code that raised, and their tensors, alive.
    The caller's own exception propagates untouched, traceback and all.
    """

    def __init__(self, model: torch.nn.Module | None = None, *, dims=None, inputs=None,
                 rules: bool = True, root: str | None = None, probes: bool = True,
                 observer: Observer | None = None, probe_names: bool = True,
                 skip: Iterable[str] = (), every_step: bool = False):
        self._witness = None
        # False for a script or a notebook cell: sizes nobody chose for shapetrace, even when
        # they happen to be 5 and 7, are never read as the probe sizes
        self._probe_names = probe_names
        #: observations that are not findings, shown with the trace
        self.notes: list[str] = []
        eager = eager_module(model)
        if eager is not None:  # torch.compile'd: the ops run eagerly inside the block
            model = eager
            self.notes.append("traced the eager module behind torch.compile: compiled code "
                              "runs eagerly inside the trace")
        if isinstance(dims, Dims):  # check(): probe sizes (or a file's own), as given
            super().__init__(dims)
            self._declared = None
        else:  # the user's own sizes: names from dims=, or what the model and its run prove
            from ..naming.proven import SizeWitness

            if dims:
                Dims.declared(dims)  # a bad size is the caller's error, raised here
            self._declared = dict(dims or {})
            self._witness = SizeWitness(model, inputs)
            super().__init__(later=True)
        self.model = model
        self._run_rules = rules
        self._skip = tuple(skip)  # rules left out (those that need values, under --fake)
        self._diagnostics: list[Diagnostic] | None = None
        self._analysis: Analysis | None = None
        #: optimizer steps, each shown as one line (``record.spans``)
        self.spans: list = []
        self._spans = OptimizerSpans(self.records, self.spans)
        # A training loop's repeated steps are counted, not kept (``record.steps``); not where
        # an observer must see every op (the plugin's kept attention heads), nor when asked
        self._recorder = Recorder(self, model, root=root, probes=probes, observer=observer,
                                  steps=observer is None and not every_step, spans=self.spans)
        self._watch = self._recorder.steps
        if self._watch is not None:  # the watch's optimizer hooks note the spans too
            self._spans.hooks = False
            self._watch.span_watch = self._spans
        if self._witness is not None:  # told of each module call by the recorder's hook
            self._recorder.watchers.append(self._witness.observe)
        self._entered = False
        self._exited = False

    @property
    def dims(self) -> Dims:
        """The names of sizes: as given (a ``Dims``), else resolved from what the block ran.

        ``dims={...}`` and the model's own ``n_embd``/``n_head``/... name sizes; the probe
        defaults name the rest only when the block ran at probe sizes (``resolve_dims``).
        """
        if self._witness is None:
            return self._dims
        if self._resolved is not None:
            return self._resolved
        from ..naming.proven import run_dims

        # the model's modules walked once, for its weights' shapes and its attributes
        modules = self.model_modules if self.model_modules is not None and self._exited else \
            all_modules(self.model) if isinstance(self.model, torch.nn.Module) else []
        dims = run_dims(self.model, self._witness, self._declared, self.records,
                        probe_names=self._probe_names, weights=self._weights_of(modules),
                        modules=modules)
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
        self._eager = compiler_off()  # compiled code runs eagerly: every op is seen, and
        self._eager.__enter__()  # dynamo never traces shapetrace's own hooks
        self._spans.__enter__()
        try:
            if self._witness is not None:
                self._witness.__enter__()
            self._recorder.__enter__()
        except BaseException:
            self._spans.__exit__(None, None, None)
            if self._witness is not None:
                self._witness.__exit__(None, None, None)
            self._eager.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            try:
                self._recorder.__exit__(exc_type, exc, tb)
            finally:
                self._spans.__exit__(exc_type, exc, tb)
                if self._witness is not None:
                    self._witness.__exit__(exc_type, exc, tb)
                self._eager.__exit__(exc_type, exc, tb)
        finally:
            self.exception = detached(exc)
            self._exited = True
        return False

    # results
    @property
    def step_count(self) -> int:
        """How many steps the block ran: calls of the traced model (without one, of the first
        module called outside any other). See :attr:`steps`."""
        return self._watch.step if self._watch is not None else 0

    @property
    def steps(self) -> list:
        """The steps kept, one per kind (``record.steps.StepRun``: its records, the step it was
        first seen at, how many steps ran the same ops with the same shapes), and any forward
        run again to find a NaN; empty for a block of one step or none."""
        if self._watch is None or self._watch.step < 2:
            return [run for run in (self._watch.runs if self._watch else ()) if run.rerun]
        return list(self._watch.runs)

    @property
    def value_events(self) -> list:
        """The NaN and Inf seen over the run (``record.steps.ValueEvent``): the first in a
        forward's output, in gradients, in parameters."""
        return list(self._watch.events) if self._watch is not None else []

    @property
    def weight_shapes(self) -> set:
        """The shapes of the model's parameters and buffers (none without a model): at the
        user's sizes their axes are never named B or T."""
        return self._weights_of()

    def _weights_of(self, modules: list | None = None) -> set:
        """:attr:`weight_shapes`; ``modules``: the model's, when the caller has walked them."""
        known = getattr(self, "_weight_shapes", None)
        if known is not None:
            return known
        from ..naming.proven import weight_shapes

        shapes = weight_shapes(self.model, modules)
        if self._exited:  # the model's weights as the block left them: read once
            self._weight_shapes = shapes
        return shapes

    def _analyse(self) -> Analysis:
        """The analysis of the records, made on first use after the block, then kept."""
        if self._analysis is None:
            self._analysis = analyse(self)  # reads self.dims: resolved once, here
        return self._analysis

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """Every finding about this run, in one list: the trace rules' (run on first access after
        the block), then what a caller added."""
        if self._diagnostics is None:
            if self._run_rules:
                from ..rules import run_trace_rules

                from ..rules.memo import findings_key

                steps = self.steps
                analysis = self._analyse()
                # a run that repeats one already checked takes its findings (one run, after
                # the block: the findings of several kinds of steps are merged by step, and
                # what lives at the end is known only then)
                key = None if steps or not self._exited else findings_key(self, self._skip)
                self._diagnostics = run_trace_rules(analysis, skip=self._skip,
                                                    step=_step_of(steps) if steps else None,
                                                    key=key)
                if "attention-scale" not in self._skip:
                    from ..rules.scale_unapplied import unapplied_scales

                    self._diagnostics = unapplied_scales(self._diagnostics, self.model)
                if self._watch is not None and (self._watch.step > 1 or self._watch.events):
                    from ..rules.steps import over_steps

                    self._diagnostics = over_steps(self._diagnostics, self.steps,
                                                   self.value_events, self._analyse(),
                                                   skip=self._skip)
            else:
                self._diagnostics = []
        return self._diagnostics

    @diagnostics.setter
    def diagnostics(self, found: Iterable[Diagnostic]) -> None:
        self._diagnostics = list(found)

    def add(self, found: Iterable[Diagnostic]) -> None:
        """Add findings about this run that the trace rules do not make (what the forward
        raised, the behaviour checks, the reference comparison), after the rules' own. A
        finding that one already there explains (the batch-leak of a position table cut by the
        batch, at the line position-axis names) is the same bug, and is left out."""
        from ..rules import unexplained

        known = self.diagnostics
        known.extend(unexplained(known, found))

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
        from ..render import print_trace

        print_trace(self, console=console, **options)

    def _repr_html_(self) -> str:  # a notebook shows the trace as the HTML report does
        from ..render.notebook import report_html
        from .results import Report, TargetResult

        result = TargetResult("trace", dims=self.dims.as_dict(), trace=self, notes=self.notes)
        return report_html(Report([result]))

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)


def trace(model: torch.nn.Module | None = None, *, dims=None, inputs=None,
          rules: bool = True, every_step: bool = False) -> Trace:
    """Record every tensor op run inside the ``with`` block.

    >>> with trace(model) as t:
    ...     y = model(x)
    >>> t.print()

    ``model`` is optional: it gives modules their attribute paths (``blocks.0.attn``) and its
    attributes (``n_embd``, ``n_head``, ...) name sizes. ``dims`` declares the sizes the block
    runs at (``{"B": 2, "T": 10, "C": 64}``); ``inputs`` declares the model's forward inputs
    as ``--input`` does (``["x=B,T,C"]``): the sizes ``x`` comes with name B, T and C. The
    jaxtyping annotations of the forwards that run (``x: Float[Tensor, "B T C"]``) name sizes
    too. A size nothing names prints as its number.

    Around a training loop, each call of ``model`` (without one, of the first module called
    outside any other) begins a step. The first step of each kind is recorded and checked; its
    repeats are counted, not kept, and once a kind has repeated its steps run untraced, at
    near the loop's own speed, with their outputs, gradients and parameters still watched for
    NaN and Inf (``t.steps``, ``t.step_count``). ``every_step=True`` records every step in full.
    """
    return Trace(model, dims=dims, inputs=inputs, rules=rules, every_step=every_step)


__all__ = ["OpRecord", "Trace", "trace"]


def _step_of(steps: list):
    """A finding -> which kept step its record is in (``merge_repeats``)."""
    def step(d) -> int | None:
        for i, run in enumerate(steps):
            if d.record is not None and run.start <= d.record < run.end:
                return i
        return None
    return step


def detached(exc: BaseException | None) -> BaseException | None:
    """A copy of ``exc`` with no traceback, cause or context: the exception as data (type,
    message, attributes), holding no frames. The original is left as it was."""
    if exc is None:
        return None
    cls = type(exc)
    try:  # no __init__ runs: the user's exception class is not called again
        clone = cls.__new__(cls, *exc.args)
        clone.args = exc.args
        clone.__dict__.update(getattr(exc, "__dict__", {}))
        if str(clone) != str(exc) and cls.__module__ == "builtins":
            clone = copy.copy(exc)  # OSError's filename, UnicodeError's fields: set by __init__
        if str(clone) != str(exc):
            raise TypeError
    except Exception:
        clone = RuntimeError(f"{cls.__name__}: {exc}")
    clone.__traceback__ = None
    clone.__cause__ = clone.__context__ = None
    return clone
