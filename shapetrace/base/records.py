"""What a trace is made of, as plain data: tensor metadata, op records, probe results.

The tracer writes these; every later stage (axis naming, the dataflow graph, rules, behaviour
checks, reports, renderers) reads them. Records keep metadata only (shapes, dtypes, contiguity,
the non-tensor arguments), never the tensors, so a trace does not keep activations alive.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .dims import Dims
from .source import display_path, resolve_site, source_segment


class TensorMeta:
    """What shapetrace keeps of one tensor flowing through an op."""

    __slots__ = ("shape", "dtype", "contiguous", "_made_by", "_slot", "value", "axes", "ref",
                 "used", "looked", "returned")

    def __init__(self, shape: tuple[int, ...], dtype, contiguous: bool, made_by=None,
                 slot: int = 0, ref=None):
        self.shape: tuple[int, ...] = shape
        self.dtype = dtype
        self.contiguous: bool = contiguous
        self._made_by = made_by  # the index of the record that made it (see src)
        self._slot = slot
        self.value = None  # the number, for one-element tensors (scales, fill values)
        self.axes = None  # provenance: one tuple of (size, name) factors per axis (_provenance)
        #: For an output: a weakref while tracing, then whether it was still alive at the end.
        self.ref = ref
        self.used = 0  # how often it was consumed by a recorded op or returned by a module
        #: how often code the trace does not see read its values (``.item()``, ``bool(t)``,
        #: ``print(t)``, ``.data``, ``.numpy()``); reading its shape (``t.shape``) does not count
        self.looked = 0
        #: the outermost module call that returned it (a module's output), or None
        self.returned: ModuleReturn | None = None

    @property
    def src(self) -> tuple[int, int] | None:
        """``(record index, output slot)`` of the op that made the tensor, or None for one that
        came from outside the trace (an input, a parameter). A tensor is described once: the
        inputs of later ops that read it are this same object."""
        return None if self._made_by is None else (self._made_by, self._slot)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"TensorMeta({self.shape}, {self.dtype})"


class ModuleReturn(NamedTuple):
    """A module call that returned a tensor: ``out, cache = self.block(x)``."""

    module: str  # the module's path ("GPT.blocks.0")
    kind: str  # its class's name ("Block", "Linear")
    caller: str  # the path of the module whose code made the call ("GPT"), or ""
    #: ``(code, lasti)`` of the user's line that called it, or None: called from library code
    #: (a container's loop, a library's wrapper) rather than written on the user's line
    site: tuple | None
    #: where the tensor sits in what the call returned: None (the tensor itself), the index in
    #: a returned tuple or list, or -1 (deeper, or a dict's value)
    index: int | None
    library: bool  # the module's class is torch's or an installed package's

    @property
    def where(self) -> tuple[str | None, int | None, int | None, int | None]:
        """``(filename, line, col, end_col)`` of the call in the user's code."""
        if self.site is None:
            return None, None, None, None
        return resolve_site(self.site[0], self.site[1])


class UnreadLayer(NamedTuple):
    """A plain layer (``nn.Linear``, ``nn.Embedding``, ``nn.Conv2d``...) inside the traced
    model that was never called and none of whose parameters any recorded op read, while the
    module that owns it ran."""

    path: str  # "Attention.proj"
    attribute: str  # its name on its owner: "proj"
    kind: str  # "Linear"
    owner: str  # the owner's path ("Attention")
    #: the source files of the owner's classes (its own and the bases it inherits, the
    #: user's only): where a use of the attribute would be written
    files: tuple[str, ...]
    classes: tuple[str, ...]  # those classes' names
    shapes: tuple[tuple[int, ...], ...]  # its parameters' shapes


class TensorArg:
    """Stands in for the i-th tensor operand inside recorded arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"<tensor {self.index}>"


# TensorArgs are only ever read, so one per index is shared by every record.
_TENSOR_ARGS = tuple(TensorArg(i) for i in range(16))


def tensor_arg(index: int) -> TensorArg:
    return _TENSOR_ARGS[index] if index < 16 else TensorArg(index)


class WeightSums(NamedTuple):
    """How far a matmul operand that descends from a softmax is from summing to 1."""

    minimum: float
    #: axis -> the largest |sum - 1| over the slices along it that do not sum to 0 (fully
    #: masked rows), for the last two axes, the ones a product contracts.
    deviations: dict[int, float]


class NonFinite(NamedTuple):
    """An op whose output holds a NaN or an Inf: made there from finite inputs (``origin``
    None), or carried on from the op ``origin`` that made it."""

    kind: str  # "NaN" | "Inf"
    slot: int  # the output that holds it
    where: list[int] | None  # the index of the first such element (where it was made)
    origin: int | None = None  # the record that made it, when this one only passed it on
    #: why it was made, read from the values there (``record.causes``): "overflow", "0/0",
    #: "division by 0", "log of 0", "every key masked", ...; None where they do not say
    cause: str | None = None


_NO_WARNINGS: tuple = ()


class OpRecord:
    """One op of the trace."""

    __slots__ = ("index", "op", "site", "module", "inputs", "args", "kwargs",
                 "outputs", "error", "warnings", "weight_sums", "non_finite")

    def __init__(self, index: int, op: str, site, module: str, inputs: tuple = (),
                 args: tuple = (), kwargs: dict | None = None):
        self.index = index
        self.op: str = op  # "F.softmax", "@", "Tensor.view" (see _ops.op_name)
        #: ``(code, lasti, internal)`` of the user's frame, shared by every op of that site and
        #: resolved to a file and line only when asked; or None. ``internal``: the op was
        #: called from library code (``F.linear`` inside ``nn.Linear``) on that line.
        self.site: tuple | None = site
        self.module: str = module  # the running module's path ("GPT.blocks.0.attn"), or ""
        self.inputs: tuple[TensorMeta, ...] = inputs
        self.args: tuple = args  # the call's arguments, tensors replaced by TensorArg
        self.kwargs: dict = _EMPTY if kwargs is None else kwargs
        self.outputs: tuple[TensorMeta, ...] = ()
        self.error: tuple[str, str] | None = None  # (exception type, message)
        self.warnings: tuple[str, ...] | list[str] = _NO_WARNINGS
        #: Value probes (filled by the tracer's probes, read by the value-based rules).
        self.weight_sums: dict[int, WeightSums] | None = None  # input slot -> sums
        self.non_finite: NonFinite | None = None

    @property
    def internal(self) -> bool:
        """Whether the op was called from library code rather than written on the user's line."""
        return self.site is not None and self.site[2]

    @property
    def where(self) -> tuple[str | None, int | None, int | None, int | None]:
        """``(filename, line, col, end_col)`` in the user's code."""
        site = self.site
        if site is None:
            return None, None, None, None
        return resolve_site(site[0], site[1])

    @property
    def file(self) -> str | None:
        return display_path(self.where[0])

    @property
    def line(self) -> int | None:
        return self.where[1]

    @property
    def source(self) -> str:
        filename, line, col, end_col = self.where
        if filename is None:
            return ""
        return source_segment(filename, line, col, end_col)

    def arg(self, position: int, name: str | None = None, default=None):
        """A recorded argument by position or keyword (tensors come back as TensorArg)."""
        if name is not None and name in self.kwargs:
            return self.kwargs[name]
        if position < len(self.args):
            return self.args[position]
        return default

    def add_warning(self, text: str) -> None:
        if self.warnings is _NO_WARNINGS:
            self.warnings = []
        self.warnings.append(text)

    def __repr__(self):
        return (f"<OpRecord {self.index} {self.op} {[m.shape for m in self.inputs]} -> "
                f"{[m.shape for m in self.outputs]}>")


def descends_from(records: list[OpRecord], index: int, ops, depth: int, *, budget: int = 48,
                  besides: int | None = None) -> bool:
    """Whether record ``index`` is an op of ``ops`` (other than record ``besides``) or is made
    from one within ``depth`` ops. Breadth first, so that each record is reached by its
    shortest path (a renormalisation ``att / att.sum(...)`` reaches ``att`` both directly and
    through the sum); at most ``budget`` records are looked at."""
    queue, seen = [(index, 0)], {index}
    for idx, level in queue:
        rec = records[idx]
        if rec.op in ops and idx != besides:
            return True
        if level >= depth or len(seen) >= budget:
            continue
        for m in rec.inputs:
            if m._made_by is not None and m._made_by not in seen:
                seen.add(m._made_by)
                queue.append((m._made_by, level + 1))
    return False


class ReadOnlyDict(dict):
    """Keyword arguments shared by many records (the empty ones, ``dim=-1``): read-only."""

    def __setitem__(self, key, value):
        raise TypeError("recorded kwargs are read-only")


_EMPTY: dict[str, Any] = ReadOnlyDict()


class TraceData:
    """A recorded trace as data: the records in execution order, the sizes that name their
    axes, and the exception that ended the block, if any."""

    def __init__(self, dims: Dims | Any = None, *, later: bool = False):
        #: ``later``: a subclass resolves the names after recording (``Trace`` at the user's
        #: sizes), so none are made now
        self.dims: Dims = None if later else dims if isinstance(dims, Dims) else Dims(dims)
        self.records: list[OpRecord] = []
        self.exception: BaseException | None = None
        #: plain layers of the model that the block never used (``record.layers``)
        self.unread_layers: list[UnreadLayer] = []
        #: an op failed on fake tensors (``--fake``): its strides were torch's prediction
        self.shapes_only = False
        #: a module class -> the ``(code, lasti)`` of each line of the user's code that called a
        #: module of it (``record.tracer``'s post hook; library code's calls are not kept)
        self.module_calls: dict[type, set] = {}
        #: the traced model and its submodules as the recorder walked them (``all_modules``'
        #: order), or None: no model, or one that grew while recording
        self.model_modules: list | None = None


def module_at(model, path: str | None):
    """The module of ``model`` a record's or a finding's module path names (``GPT.blocks.0``:
    the root's name, then the path inside it), or None."""
    if not path:
        return None
    _, _, inner = path.partition(".")
    try:
        return model.get_submodule(inner) if inner else model
    except (AttributeError, TypeError):
        return None
