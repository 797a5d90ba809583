"""non-finite: a NaN the output holds that no op of the forward made, made by the module's own
constructor, is found at the constructor's line that made it (an error there); a table filled
with -inf on purpose says nothing."""

from __future__ import annotations

from pathlib import Path

import resolved

FILE = Path(__file__).parent / "data" / "held" / "tables.py"


def _line(text: str) -> int:
    return next(i for i, line in enumerate(FILE.read_text().splitlines(), 1) if text in line)


def test_a_nan_made_by_the_constructor_is_found_where_it_was_made():
    result = resolved.result(FILE, "ShadowedTable")
    (found,) = [d for d in result.diagnostics if d.rule == "non-finite"]
    assert found.severity == "error"
    assert found.line == _line("div = torch.exp(")
    assert "the constructor made it at line" in found.message and "`pe`" in found.message


def test_a_mask_of_minus_infinity_made_on_purpose_says_nothing():
    result = resolved.result(FILE, "MaskedTable")
    assert result.error is None and [d for d in result.diagnostics if d.severity != "info"] == []


def test_the_first_op_that_made_a_nan_from_values_without_one():
    import torch

    from shapetrace.drive.held import nan_made_by_constructor

    class Table(torch.nn.Module):
        def __init__(self):
            super().__init__()
            zero = torch.zeros(3)
            ratio = zero / zero  # the NaN is made here
            self.register_buffer("t", ratio * 2)  # and only carried on here

    file, line, _ = nan_made_by_constructor(Table, {})
    assert file == __file__
    assert "zero / zero" in Path(__file__).read_text().splitlines()[line - 1]
    assert nan_made_by_constructor(torch.nn.Linear, {"in_features": 2, "out_features": 2}) is None
