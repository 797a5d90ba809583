"""norm-bypassed: one projection of self-attention reads the normalised stream, another the
stream before that norm; projections of different tensors by design stay quiet."""

from pathlib import Path

import pytest

import resolved

DATA = Path(__file__).resolve().parent / "data" / "streams" / "norms.py"


def _marked(cls: str) -> int:
    lines = DATA.read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if t.startswith(f"class {cls}("))
    return next(n for n in range(start, len(lines)) if "# BUG" in lines[n]) + 1


@pytest.mark.parametrize("cls, side", [("KeysFromRawStream", "keys and values"),
                                       ("QueriesFromRawStream", "queries")])
def test_the_projection_that_bypasses_the_norm_is_named(cls, side):
    result = resolved.result(f"{DATA}::{cls}")
    assert result.error is None, result.error
    found = [d for d in result.diagnostics if d.rule == "norm-bypassed"]
    assert [d.line for d in found] == [_marked(cls)], result.diagnostics
    assert found[0].message.startswith(f"the {side} are projected from the stream before its norm")


@pytest.mark.parametrize("cls, inputs", [
    ("PreNormBlock", None),
    ("KeysFromNormedStream", None),
    ("PositionsOnQueriesAndKeys", ["x=B,T,C", "pos=B,T,C"]),
    ("CrossAttention", ["x=B,T,C", "memory=B,S,C"]),
    ("SeparateNorms", None),
    ("PostNorm", None),
    ("DefaultContextAfterNorm", ["x=B,T,C"]),
    # a block that normalises its query argument only, used for self-attention by its caller
    ("SelfAttendingStack", None),
])
def test_projections_of_one_tensor_or_of_different_tensors_stay_quiet(cls, inputs):
    result = resolved.result(f"{DATA}::{cls}", **({"inputs": inputs} if inputs else {}))
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics


def test_a_default_chosen_before_the_norm_is_found_where_it_was_chosen():
    """The projection reads a name bound by a line that only picks a value (the context, or x
    when there is none): the finding is there, the projection kept as where it is used. The
    branch that would normalise a given context did not run and is passed over."""
    result = resolved.result(f"{DATA}::DefaultContextBeforeNorm", inputs=["x=B,T,C"])
    assert result.error is None, result.error
    (found,) = [d for d in result.diagnostics if d.rule == "norm-bypassed"]
    assert found.line == _marked("DefaultContextBeforeNorm"), found
    assert found.used_at is not None and found.used_at[1] == found.line + 5  # the to_kv line
    assert found.message.startswith("the keys and values are projected from the stream before")
