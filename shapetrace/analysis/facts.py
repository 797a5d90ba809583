"""What the rules read: a recorded trace with its axes named and its dataflow graph, built once.

``analyse(data)`` runs provenance (``naming.provenance.annotate``: every ``meta.axes``) and returns an
``Analysis``. The rest is computed on first use and kept: the index of records by op, the
consumer graph (``analysis.graph``), the live and dead values (``analysis.liveness``), the
attentions found in the graph, the reading of each reshape, and the lineage facts (constant?
batched?) of every tensor. Every rule takes one ``Analysis`` and yields
Diagnostics; no rule recomputes what another one already found.

An Analysis holds the records and the dims, not the trace it came from: the facade keeps its
analysis, and a reference back would make a cycle that only the garbage collector frees.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

from ..base.dims import Dims
from ..base.ops import SOFTMAXES
from ..base.records import OpRecord, TensorMeta, TraceData, UnreadLayer
from ..naming.axes import format_axes
from ..naming.memo import annotate_once
from ..naming.reshapes import ReshapeCheck, reshape_check
from .graph import Attention, Graph, Lineage, find_attentions
from .liveness import Liveness


class Analysis:
    """A trace after provenance: records with named axes, and the facts the rules share."""

    def __init__(self, records: list[OpRecord], dims: Dims,
                 exception: BaseException | None = None,
                 reshapes: dict[int, ReshapeCheck | None] | None = None,
                 unread_layers: list[UnreadLayer] | None = None, shapes_only: bool = False,
                 module_calls: dict[type, set] | None = None):
        self.records = records
        self.dims = dims
        self.exception = exception
        #: plain layers of the model that the block never used (``record.layers``)
        self.unread_layers = unread_layers or []
        #: an op failed on fake tensors: its strides were torch's prediction, not a fact
        self.shapes_only = shapes_only
        #: a module class -> the ``(code, lasti)`` of the user's lines that called its modules
        self.module_calls = module_calls or {}
        #: record index -> its reading as a reshape: those provenance read, the rest on first use
        self._reshapes: dict[int, ReshapeCheck | None] = reshapes if reshapes is not None else {}

    def shape_of(self, meta: TensorMeta) -> str:
        """A tensor's shape in named dims: ``(B, H, T, d)``."""
        if meta.axes is None:
            return str(tuple(meta.shape))
        return format_axes(meta.axes, self.dims)

    @cached_property
    def by_op(self) -> dict[str, list[OpRecord]]:
        """op name -> its records, in trace order."""
        by_op: dict[str, list[OpRecord]] = {}
        for rec in self.records:
            by_op.setdefault(rec.op, []).append(rec)
        return by_op

    def records_of(self, ops: Iterable[str]) -> list[OpRecord]:
        """The records whose op is one of ``ops``, in trace order."""
        by_op = self.by_op
        found = [by_op[op] for op in ops if op in by_op]
        if len(found) == 1:
            return found[0]
        return sorted((rec for recs in found for rec in recs), key=_index)

    @cached_property
    def graph(self) -> Graph:
        """Who consumes each tensor; the walks along values (``analysis.graph.Graph``)."""
        return Graph(self.records)

    @cached_property
    def attentions(self) -> list[Attention]:
        """Every softmax whose weights a matmul or einsum contracts, in trace order."""
        softmaxes = self.records_of(SOFTMAXES)
        return find_attentions(softmaxes, self.graph) if softmaxes else []

    @cached_property
    def liveness(self) -> Liveness:
        """Which values reach an output, a kept tensor or a write, and which are dead."""
        return Liveness(self.records, self.graph)

    @cached_property
    def lineage(self) -> Lineage:
        """Whether a tensor is built from constants only, or descends from batched data."""
        return Lineage(self.records)

    def reshape(self, rec: OpRecord) -> ReshapeCheck | None:
        """A reshape read as splits and merges of named factors (None for other ops)."""
        try:
            return self._reshapes[rec.index]
        except KeyError:
            found = self._reshapes[rec.index] = reshape_check(rec, self.dims)
            return found


def _index(rec: OpRecord) -> int:
    return rec.index


def analyse(data: TraceData) -> Analysis:
    """Name every axis of ``data`` (in place: ``meta.axes``) and wrap it for the rules."""
    reshapes = annotate_once(data)
    return Analysis(data.records, data.dims, data.exception, reshapes,
                    getattr(data, "unread_layers", None), getattr(data, "shapes_only", False),
                    getattr(data, "module_calls", None))


__all__ = ["Analysis", "analyse"]
