"""The public ``trace()`` / ``Trace``: the stages composed behind SPEC section 6.

``with shapetrace.trace(model) as t:`` records (``record.tracer``); ``t.diagnostics`` analyses the
records once (``analysis.facts.analyse``: axis names, then the dataflow graph) and runs the rules on
that analysis (``rules``); ``t.print()`` renders (``render``). The recorder knows none of the
later stages: this module is where they meet.
"""

from __future__ import annotations

import copy

import torch

from ..analysis.facts import Analysis, analyse
from ..base.compat import all_modules, module_tensors
from ..base.dims import Dims, resolve_dims
from ..base.records import OpRecord, TensorMeta, TraceData
from ..record.spans import OptimizerSpans
from ..record.tracer import Observer, Recorder


class Trace(TraceData):
    """The ops recorded inside a ``with shapetrace.trace(...)`` block.

    ``records`` are in execution order. ``diagnostics`` are the rule findings, computed on first
    access after the block. ``exception`` is what ended the block: a copy of the exception the
    caller caught (same type, message and attributes) without its traceback, so that a trace kept
    after a failure does not keep the frames of the code that raised, and their tensors, alive.
    The caller's own exception propagates untouched, traceback and all.
    """

    def __init__(self, model: torch.nn.Module | None = None, *, dims=None, inputs=None,
                 rules: bool = True, root: str | None = None, probes: bool = True,
                 observer: Observer | None = None, probe_names: bool = True):
        self._witness = None
        # False for a script or a notebook cell: sizes nobody chose for shapetrace, even when
        # they happen to be 5 and 7, are never read as the probe sizes
        self._probe_names = probe_names
        if isinstance(dims, Dims):  # check(): probe sizes (or a file's own), as given
            super().__init__(dims)
            self._declared = None
        else:  # the user's own sizes: names from dims=, or what the model and its run prove
            from ..naming.proven import SizeWitness

            Dims.declared(dims or {})  # a bad size is the caller's error, raised here
            self._declared = dict(dims or {})
            self._witness = SizeWitness(model, inputs)
            super().__init__(later=True)
        self.model = model
        self._run_rules = rules
        self._diagnostics = None
        self._recorder = Recorder(self, model, root=root, probes=probes, observer=observer)
        self._entered = False
        self._exited = False
        self._analysis: Analysis | None = None
        #: optimizer steps, each shown as one line (``record.spans``)
        self.spans: list = []
        self._spans = OptimizerSpans(self.records, self.spans)

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
        from ..naming.proven import proven_dims

        # the model's attributes, the annotations of the forwards that ran and the declared
        # inputs; a name they give two sizes is left out, and dims= overrides them all
        modules = all_modules(self.model) if isinstance(self.model, torch.nn.Module) else []
        attributes = proven_dims(self.model, modules)
        proven = self._witness.proven(attributes)
        known = {**proven, **self._declared}
        own = _weight_shapes(self.model, modules)  # a model's constants (a 64-wide buffer) say nothing
        entering = [m.shape for rec in self.records  # of the sizes it runs at: the data's do
                    for m in (rec.inputs if rec.inputs else rec.outputs)  # torch.randn(...)
                    if (m._made_by is None or not rec.inputs) and m.shape not in own]
        sizes = [s for shape in entering for s in shape]
        if self._probe_names and not _off_probe(proven, self._declared):
            dims = resolve_dims(known, sizes)
        else:
            dims = Dims.declared(known)
        if dims.strict:
            stated = set(self._declared) | set(self._witness.seen)
            unnamed = _unnamed_sizes(dims, stated, entering, self.records)
            if unnamed:
                dims = Dims.declared(known, unnamed=unnamed)
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
            if self._witness is not None:
                self._witness.__enter__()
            self._recorder.__enter__()
        except BaseException:
            self._spans.__exit__(None, None, None)
            if self._witness is not None:
                self._witness.__exit__(None, None, None)
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
        finally:
            self.exception = detached(exc)
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
                from ..rules import run_trace_rules

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
        from ..render import print_trace

        print_trace(self, console=console, **options)

    def _repr_html_(self) -> str:  # a notebook shows the trace as the HTML report does
        from ..render.notebook import report_html
        from .results import Report, TargetResult

        result = TargetResult("trace", dims=self.dims.as_dict(),
                              diagnostics=list(self.diagnostics), trace=self)
        return report_html(Report([result]))

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)


#: the probe names a model's own sizes are compared with: a vocabulary or a block size is
#: never the probe's (19, 23) and says nothing about whether the block ran at probe sizes
_PROBED = ("B", "T", "S", "H", "d", "C")


def _off_probe(proven: dict, declared: dict) -> bool:
    """Whether the model states a size that is not its probe size (``n_embd = 16``, where the
    probe C is 143, or what ``dims=`` makes it): then the block did not run at probe sizes, and a
    7 in it is not T nor a 10 ``2*B``."""
    probe = Dims(declared)
    return any(name in probe and probe[name] != size
               for name, size in proven.items() if name in _PROBED and name not in declared)


#: names of a model's insides: the data a model is given has no axis of these (its mask of
#: block_size is a buffer), so an axis of the data that has their size is something else
_INNER = frozenset(("H", "d", "L"))


def _unnamed_sizes(dims: Dims, stated: set, entering: list, records) -> set[int]:
    """Sizes that a name only the model's attributes prove (``n_embd = 8`` -> C) shares with an
    axis of the data that nothing names: in ``x`` of shape ``(3, 8, 8)`` one 8 is C and the
    other is T, and ``(2, 2, 8)`` beside a head size of 2 has no head axis at all. Printing the
    name there would call the time axis C or the batch d; the size prints as its number.

    Only the data that enters the model is read (tensors from outside the block, and tensors
    made outside any module, such as ``torch.randn(2, 10, 64)`` in the block), and only names
    nobody stated for this run (``dims=``, an annotation, a declared input): those name the
    axes they were bound from.
    """
    guessed = {name: size for name, size in dims.items() if name not in stated and size > 1}
    if not guessed:
        return set()
    outside = [m.shape for rec in records if not rec.inputs and not rec.module
               for m in rec.outputs]
    unnamed: set[int] = set()
    shapes = [*entering, *outside]
    for name, size in guessed.items():
        for shape in shapes:
            count = sum(1 for s in shape if s == size)
            if count > (0 if name in _INNER else 1):
                unnamed.add(size)
                break
    return unnamed


def _weight_shapes(model, modules: list) -> set[tuple[int, ...]]:
    """The shapes of the parameters and buffers of ``model`` (its ``modules``)."""
    return {tuple(t.shape) for t in module_tensors(model, modules)}


def trace(model: torch.nn.Module | None = None, *, dims=None, inputs=None,
          rules: bool = True) -> Trace:
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
    """
    return Trace(model, dims=dims, inputs=inputs, rules=rules)


__all__ = ["OpRecord", "Trace", "trace"]


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
