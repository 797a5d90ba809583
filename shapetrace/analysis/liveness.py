"""Which recorded values reach something that lasts, and which are dead.

A value (one output of one record) is *live* when it reaches, through the recorded ops that
read it, something the traced code keeps or shows:

- the output of the outermost module call (the model's output), and a tensor still alive
  when the block ended (a loss, a cache or a buffer kept on a module, anything the caller
  holds);
- a read by code the trace does not see: ``.item()``, ``bool(t)``, ``print(t)``, ``.tolist()``,
  ``.data`` (``TensorMeta.looked``); reading only its shape (``B, T, C = q.shape``) is no use of
  its values;
- an op that writes into a tensor (``x[:, 0] = y``, ``cache.copy_(k)``, ``out=``), or that gives
  nothing back (``loss.backward()``): state the caller can see.

Every other value is dead: computed, and never used. Producers come before their consumers, so
one pass from the last record back settles every value.
"""

from __future__ import annotations

from ..base.ops import WRITES, base_name
from ..base.records import OpRecord, TensorMeta
from .graph import Graph


class Liveness:
    """Live and dead values of a trace (see the module's docstring)."""

    def __init__(self, records: list[OpRecord], graph: Graph):
        self.records = records
        consumers = graph.consumers
        live_rec = [False] * len(records)
        self._dead: set[tuple[int, int]] = set()
        for rec in reversed(records):
            alive = _keeps_state(rec)
            for slot, meta in enumerate(rec.outputs):
                readers = consumers.get((rec.index, slot), ())
                if _lasts(meta) or any(live_rec[r.index] for r, _ in readers):
                    alive = True
                else:
                    self._dead.add((rec.index, slot))
            live_rec[rec.index] = alive
        self._live_records = live_rec

    def dead(self, meta: TensorMeta) -> bool:
        """Whether a recorded tensor is dead (a tensor from outside the trace never is)."""
        return meta.src is not None and meta.src in self._dead

    def dead_record(self, rec: OpRecord) -> bool:
        """Whether nothing a record did is used: every output dead, and no state written."""
        return not self._live_records[rec.index]

    def dead_values(self) -> list[tuple[OpRecord, int]]:
        """``(record, output slot)`` of every dead value, in trace order."""
        return [(self.records[i], slot) for i, slot in sorted(self._dead)]


def _lasts(meta: TensorMeta) -> bool:
    """Alive at the end of the block, or read by code the trace does not see."""
    ref = meta.ref
    if ref is not None and ref is not False and ref is not True:
        ref = ref() is not None  # still recording: a weak reference
    return bool(ref) or meta.looked > 0


def _keeps_state(rec: OpRecord) -> bool:
    """An op whose effect is not (only) its output: a write into a tensor, an op that gives
    nothing back, an op that failed (what came after it never ran)."""
    if rec.error is not None or not rec.outputs:
        return True
    if rec.op in WRITES or "out" in rec.kwargs:
        return True
    name = base_name(rec.op)
    return name.endswith("_") and not name.endswith("__")
