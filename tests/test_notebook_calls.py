"""A module collected from a course's chapters is built as the notebook beside it builds it
(its code cells read, nothing run): a module argument (copies of a layer handed in) and a size
nothing else says (the number of features a recurrent encoder takes), each named in a note by
the notebook's code cell. ``X`` is the data, as in such courses."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import resolved

DATA = Path(__file__).parent / "data" / "notebook_calls"
_check = partial(resolved.result, DATA / "layers.py")


def test_a_module_argument_is_built_as_the_notebook_beside_builds_it():
    result = _check("StackEncoder")
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("encoder_layer built as chapter.ipynb, code cell 3 builds it: EncoderLayer(...)" in n
               for n in result.notes), result.notes


def test_a_size_the_notebook_passes_is_taken_and_the_input_read_at_its_width():
    result = _check("RnnEncoder")
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    assert any("n_features=2 as chapter.ipynb, code cell 2 passes it" in n for n in result.notes), result.notes
    assert any(n.startswith("C=2, the width") for n in result.notes), result.notes
