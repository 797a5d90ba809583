"""What shapetrace does on the side leaves nothing behind: a module built on the meta device
(to count its parameters, to read its layers) does not leave meta tensors in the caches of the
user's code (tests/data/cached/tables.py), and a side input's dependencies are not read along
an axis that is only as long as the batch."""

from __future__ import annotations

from functools import partial
import sys
from pathlib import Path

import shapetrace as st
from shapetrace.drive.devices import on_meta
import resolved

DATA = Path(__file__).parent / "data" / "cached"


_target = partial(resolved.target, DATA / "tables.py")


def test_a_cached_table_made_on_meta_is_not_handed_to_the_real_build():
    target = _target("WeightedPositions")
    result = st.check(target.cls, dims={"T": 24}, target=target.display).targets[0]
    assert result.error is None, result.error
    assert not [(d.rule, d.line, d.message) for d in result.diagnostics if d.severity == "error"]


def test_caches_that_gained_entries_on_meta_are_emptied_both_plain_and_wrapped():
    module = sys.modules[_target("WeightedPositions").cls.__module__]
    with on_meta():
        plain, wrapped = module.log_weights(6), module.decay_table(6)
    assert plain.is_meta and wrapped.is_meta
    assert not module.log_weights(6).is_meta and not module.decay_table(6).is_meta


def test_an_output_with_another_axis_as_long_as_the_batch_is_no_batch_leak():
    target = _target("LabelQueries")
    result = st.check(target.cls, inputs=["tokens=B,T,C", "keep=B,T:mask-keep"],
                      target=target.display).targets[0]
    assert result.error is None, result.error
    assert not [d.rule for d in result.diagnostics if d.severity == "error"]
    said = [*result.notes, *map(str, result.skipped)]
    assert any("batch-leak" in s and "as long" in s for s in said), said
