"""Axis names worked out once per distinct run.

Naming every axis (``provenance.annotate``) walks the records in order and reads the code at
each op's line. A block traced again as it ran before (a notebook cell run again, a test that
calls the same module twice, a forward traced per batch) has records that repeat the earlier
ones exactly: the same ops, called on the same lines, reading the same tensors (the same
producing ops and output slots) at the same shapes, with the same sizes named. Names depend on
nothing else, so such a trace takes the earlier trace's names instead of walking again: one
pass that builds the run's signature and, when it is known, hands each tensor its axes.

Values never enter the signature, and nothing that depends on them is kept here: the value
probes run on every trace, and so do the rules that read what they measured (``rules.memo``
keeps the others' findings, keyed on this signature and what else the records hold).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..base.records import OpRecord
from .provenance import annotate
from .reshapes import ReshapeCheck

#: distinct runs whose names are kept (the most recent ones)
KEPT = 8

# signature -> (every input's and output's axes, record by record; the reshapes read; the
# signature itself)
_NAMED: OrderedDict[Signature, tuple[list, dict[int, ReshapeCheck], Signature]] = OrderedDict()
_LOCK = threading.Lock()  # traces named on several threads at once


def annotate_once(trace) -> dict[int, ReshapeCheck]:
    """:func:`~shapetrace.naming.provenance.annotate`, or the names of an earlier trace whose
    run was the same (see the module's docstring)."""
    records: list[OpRecord] = trace.records
    rest: list = []
    key = signature(records, trace, rest)
    known = None
    if key is not None:
        with _LOCK:
            known = _NAMED.get(key)
            if known is not None:
                _NAMED.move_to_end(key)
    # the run's structure, the key of its findings (``rules.memo``): the very key kept when the
    # run is known, so that the findings' key, which holds it, is found without comparing it
    trace.run_structure = None if key is None else (key if known is None else known[2], rest)
    if known is not None:
        axes, reshapes, _ = known
        _hand_out(records, axes)
        return dict(reshapes)
    reshapes = annotate(trace)
    if key is not None:
        named = (_collect(records), dict(reshapes), key)
        with _LOCK:
            _NAMED[key] = named
            while len(_NAMED) > KEPT:
                _NAMED.popitem(last=False)
    return reshapes


class Signature:
    """A run's signature (a tuple) with its hash worked out once: the tuple of a few hundred
    records would be hashed again by every lookup of it."""

    __slots__ = ("parts", "_hash")

    def __init__(self, parts: tuple, hashed=hash):
        self.parts = parts
        #: ``hashed``: a function of the parts that equal parts give equal results, cheaper
        #: than hashing them all (then a part that cannot be hashed is found when compared)
        self._hash = hashed(parts)  # TypeError for a part that cannot be hashed

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return type(other) is Signature and self._hash == other._hash \
            and self.parts == other.parts

    def __ne__(self, other) -> bool:
        return not self == other


#: what the rest of a signature holds for an input that is the very output of an earlier record
#: (the usual case), in place of that output's fields: one item, never None, so that it is never
#: taken for the first of the eight items of an input described anew (None there)
_SAME = (True,)


def signature(records: list[OpRecord], trace, rest: list | None = None) -> Signature | None:
    """What naming reads of a run, hashable; None when some argument cannot be hashed (such a
    run is named afresh each time). ``rest``: filled, in the same pass, with what else the
    records hold that a rule may read (``rules.memo``): each record's module path, error and
    warnings, and each tensor's dtype, contiguity, one-element value, uses, reads back, the
    module call that returned it, whether it was alive at the end, and, for a tensor from
    outside the trace, which of them it is (numbered as met); an input that is the output of an
    earlier record as that record holds it is marked so, its fields said with that record's."""
    dims = trace.dims
    own = dims.strict
    weights = tuple(sorted(getattr(trace, "weight_shapes", ()))) if own else ()
    parts: list = [dims.fingerprint, weights]
    append, extend = parts.append, parts.extend
    # One flat sequence, each record's fields in a fixed order and its inputs and outputs
    # preceded by their count (so that two runs give equal sequences only when every record is
    # equal): no tuple made per record.
    more = rest is not None
    add = rest.extend if more else None
    outside: dict[int, int] = {}  # id(meta) of a tensor from outside the trace -> its number
    # Each record's site (its code object kept alive by the key, so that the code's id is never
    # reused while the key lives), compared but not hashed: hashing a code object hashes its
    # constants and names again each time, most of the cost of hashing the whole signature.
    # The code's id is hashed with the rest (two code objects of different files can compare
    # equal).
    sites: list = []
    site_of = sites.append
    for rec in records:
        site = rec.site
        site_of(site)
        extend((rec.op, None if site is None else id(site[0]), rec.args,
                tuple(rec.kwargs.items()) if rec.kwargs else None, len(rec.inputs)))
        if more:
            warnings = rec.warnings
            add((rec.module, rec.error, tuple(warnings) if warnings else None))
        for m in rec.inputs:
            made_by, slot = m._made_by, m._slot
            extend((made_by, slot, m.shape))
            if more:
                if made_by is None:
                    add((outside.setdefault(id(m), len(outside)), m.dtype, m.contiguous,
                         m.value, m.used, m.looked, m.returned, m.ref))
                    continue
                made = records[made_by].outputs
                if slot < len(made) and made[slot] is m:
                    add(_SAME)  # the very output described with its record: said there
                    continue
                add((None, m.dtype, m.contiguous, m.value, m.used, m.looked, m.returned, m.ref))
        append(len(rec.outputs))
        for m in rec.outputs:
            append(m.shape)
            if more:
                add((m.dtype, m.contiguous, m.value, m.used, m.looked, m.returned, m.ref))
        append(rec.error is None)
    key, sites = tuple(parts), tuple(sites)
    try:
        return Signature((key, sites), hashed=_hash_first)
    except TypeError:  # a list (permute([0, 2, 1, 3])) or a slice (x[:, :T]) in the arguments
        try:
            return Signature((_frozen(key), sites), hashed=_hash_first)
        except TypeError:
            return None


def _hash_first(parts: tuple) -> int:
    """The hash of a signature's records without their sites (equal parts: equal hashes)."""
    return hash(parts[0])


def _frozen(value):
    """``value`` with every list and slice a tuple marked as such (slices cannot be hashed
    before Python 3.12; dicts of arguments are tuples of items already)."""
    kind = type(value)
    if kind is tuple:
        return tuple(_frozen(v) for v in value)
    if kind is slice:
        return ("<slice>", value.start, value.stop, value.step)
    if isinstance(value, list):
        return ("<list>", *(_frozen(v) for v in value))
    return value


def _collect(records: list[OpRecord]) -> list:
    out = []
    for rec in records:
        out.append(tuple([m.axes for m in rec.inputs]))
        out.append(tuple([m.axes for m in rec.outputs]))
    return out


def _hand_out(records: list[OpRecord], axes: list) -> None:
    it = iter(axes)
    for rec in records:
        for meta, a in zip(rec.inputs, next(it)):
            meta.axes = a
        for meta, a in zip(rec.outputs, next(it)):
            meta.axes = a


__all__ = ["KEPT", "Signature", "annotate_once", "signature"]
