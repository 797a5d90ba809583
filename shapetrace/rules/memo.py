"""Findings worked out once per distinct run.

A block traced again as it ran before (a forward traced per batch, a test that calls the same
module twice) repeats the earlier run's records: the same ops on the same lines in the same
modules, reading the same tensors at the same shapes and dtypes, with the same axis names. A
rule that reads only that (``Rule.reads_values`` False) finds the same again, so its findings
are the earlier run's, copied; the rules that read what the value probes measured while the
ops ran (weight sums, NaN and Inf) run on every trace, starting from the attentions the
earlier run found (``analysis.graph.attentions_at``: the same records, by index).

The key of a run is the naming signature (``naming.memo``: ops, lines, producers, shapes,
sizes named) and everything else of the records and the trace a rule may read: each record's
module path, error and warnings; each tensor's dtype, contiguity, one-element value, how often
it was used or read back, the module call that returned it and whether it was alive at the
end, and which tensors from outside the trace are one tensor; the layers never called; the
directory paths are shown relative to. A trace that ended in an exception, or whose records
cannot be keyed, is checked afresh.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict

from ..analysis.graph import attention_indices, attentions_at
from ..base.source import shown_directory
from ..naming.memo import Signature

#: distinct runs whose findings are kept (the most recent ones)
KEPT = 8

# key -> ({rule name: its findings} for the rules that read no values, the attentions found
# by record index or None)
_FOUND: OrderedDict = OrderedDict()
_LOCK = threading.Lock()  # traces checked on several threads at once


def findings_key(data, skip: tuple = ()) -> Signature | None:
    """The key of ``data``'s findings (see the module's docstring), or None: not kept. Read
    from what naming noted of the run's records (``naming.memo.signature``)."""
    structure = getattr(data, "run_structure", None)
    if structure is None or data.exception is not None:
        return None
    named, rest = structure
    try:  # hashed once, without the rest of the records: equal keys have equal signatures
        return Signature((named, tuple(skip), tuple(data.unread_layers or ()),
                          bool(getattr(data, "shapes_only", False)), shown_directory(),
                          tuple(rest)), hashed=lambda parts: hash(parts[:-1]))
    except TypeError:  # a value or an error that cannot be hashed: checked afresh
        return None


def known(key, analysis) -> dict | None:
    """The findings of each rule that reads no values kept for ``key`` (copies), or None.
    ``analysis`` (of the run) is handed the attentions found in the run kept, when they were
    (``analysis.graph.attentions_at``): the rules that read values start from them."""
    with _LOCK:
        kept = _FOUND.get(key)
        if kept is not None:
            _FOUND.move_to_end(key)
    if kept is None:
        return None
    found, attentions = kept
    if attentions is not None and "attentions" not in vars(analysis):
        analysis.attentions = attentions_at(analysis.records, attentions)  # a cached_property
    return _copied(found)


def keep(key, found: dict, analysis) -> None:
    """Keeps ``found`` (rule name -> its findings, before merging) for ``key``, and the
    attentions ``analysis`` found, by record index, when it looked for them."""
    attentions = vars(analysis).get("attentions")
    kept = (_copied(found), None if attentions is None else attention_indices(attentions))
    with _LOCK:
        _FOUND[key] = kept
        while len(_FOUND) > KEPT:
            _FOUND.popitem(last=False)


def _copied(found: dict) -> dict:
    """Findings are changed as they are merged and reported: each trace has its own."""
    return {name: copy.deepcopy(found_by) if found_by else [] for name, found_by in found.items()}


__all__ = ["KEPT", "findings_key", "keep", "known"]
