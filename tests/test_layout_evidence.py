"""Which axis is the batch comes from evidence, never from a guess alone: time-first modules fed
a batch-first guess are read time-first when the run or the code says so, a finding that rests
on a guessed layout is a warning that says what it assumed, and code that splits a size in
halves gets an even one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shapetrace.frontends.cli import main

DATA = Path(__file__).parent / "data" / "layout_evidence"
SEQUENCE_FIRST = str(DATA / "sequence_first.py")
HALVES = str(DATA / "halves.py")


@pytest.fixture(scope="module")
def layouts():
    return _report(SEQUENCE_FIRST)


def _report(path: str, *argv: str) -> dict[str, dict]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([path, "--format", "json", "--no-trace", *argv])
    return {t["target"].split("::")[-1]: t for t in json.loads(out.getvalue())["targets"]}


def _errors(target: dict) -> list[str]:
    return [d["rule"] for d in target["diagnostics"] if d["severity"] == "error"]


def test_library_attention_at_its_default_layout_is_fed_time_first(layouts):
    block = layouts["LibraryAttentionBlock"]
    assert block["error"] is None and _errors(block) == []
    assert any(n.startswith("inputs taken time-first") and "F.multi_head_attention_forward" in n
               for n in block["notes"])


def test_batch_first_said_and_fed_to_time_first_attention_is_still_the_bug(layouts):
    bug = layouts["BatchFirstIntoLibraryAttention"]
    assert _errors(bug) == ["batch-leak"]
    assert not any(n.startswith("inputs taken time-first") for n in bug["notes"])


def test_batch_size_read_from_the_second_axis_means_time_first(layouts):
    folded = layouts["FoldedHeadsAttention"]
    assert folded["error"] is None and folded["ok"], folded["diagnostics"]


def test_finding_on_a_guessed_layout_is_a_warning_that_says_so(layouts):
    guessed = layouts["MixesFirstAxis"]
    assert _errors(guessed) == []
    (warning,) = [d for d in guessed["diagnostics"] if d["rule"] == "batch-leak"]
    assert warning["severity"] == "warning"
    assert "assumed: x batch-first" in warning["message"] and "--input" in warning["message"]


@pytest.mark.parametrize("name", ["MixesBatchSaysBatchFirst", "PatternSaysBatchFirst",
                                  "UnpacksOnlyTheLength"])
def test_finding_on_a_layout_the_code_states_stays_an_error(layouts, name):
    assert _errors(layouts[name]) == ["batch-leak"]


@pytest.mark.parametrize("name", ["TriangleAddedInBatchFirstAttention",
                                  "BlockAroundBatchFirstAttention"])
def test_a_layer_built_batch_first_states_the_layout(layouts, name):
    """nn.MultiheadAttention(batch_first=True) inside the module says (B, T, C): the causal leak
    of a float triangle added to the scores stays an error, in the block around it too."""
    found = [d for d in layouts[name]["diagnostics"] if d["rule"] == "causal-leak"]
    assert [d["severity"] for d in found] == ["error"], layouts[name]["diagnostics"]


def test_declared_inputs_are_no_guess():
    declared = _report(f"{SEQUENCE_FIRST}::MixesFirstAxis", "--input", "x=B,T,C")
    assert _errors(declared["MixesFirstAxis"]) == ["batch-leak"]


@pytest.mark.parametrize("name", ["RotaryHalves", "GatedHalves", "RotaryPairs", "StepFeatures"])
def test_code_that_halves_a_size_gets_an_even_one(name):
    result = _report(f"{HALVES}::{name}")[name]
    assert result["error"] is None and result["ok"], result["diagnostics"]
    assert result["dims"]["d"] % 2 == 0 and result["dims"]["C"] % 2 == 0
    assert any("in halves" in n or "in pairs" in n or "divides evenly" in n
               for n in result["notes"]), result["notes"]


def test_halves_at_a_head_size_the_user_chose_stay_as_they_ran():
    result = _report(f"{HALVES}::RotaryHalves", "--dims", "d=13")["RotaryHalves"]
    assert "op-failed" in _errors(result)


def test_two_named_sizes_are_read_by_their_order_not_one_at_a_time(layouts):
    """``N, S, D = x.shape``: N is not read as a sequence length on its own (it is the batch
    here); positions cut to S and added batch-first are right."""
    target = layouts["TableCutByLengthAfterN"]
    assert target["error"] is None and target["ok"], target["diagnostics"]
    assert not [d for d in target["diagnostics"] if d["rule"] in ("position-axis", "batch-leak")]


def test_the_code_reading_its_shape_outranks_a_mask_shape_in_the_docstring(layouts):
    """``tgt_len, bsz, embed_dim = query.size()`` says time-first; the docstring's only bracketed
    shape is the padding mask's ``(batch, src_len)``, batch-first in time-first code too."""
    padded = layouts["PaddedTimeFirstAttention"]
    assert padded["error"] is None, padded["error"]
    assert _errors(padded) == [] and not [d for d in padded["diagnostics"]
                                          if d["severity"] == "warning"], padded["diagnostics"]
    first = next(r for r in padded["trace"] if r["op"] == "F.multi_head_attention_forward") \
        if padded.get("trace") else None
    assert first is None or first["inputs"][0].startswith("(T, B")


def test_a_docstring_counts_its_shapes_with_the_most_axes():
    from shapetrace.drive.layout import _docstring

    def forward(self, x, mask):
        """x: shape [seq_len, batch_size, d_model]; mask: shape (batch, seq_len)"""

    def crossed(self, x):
        """Input shape: Time x Batch x Channel"""

    assert list(_docstring(forward)) == ["time-first"]
    assert list(_docstring(crossed)) == ["time-first"]


def test_a_mask_handed_on_as_key_padding_mask_is_one_flag_per_key_of_each_sample(layouts):
    padded = layouts["PaddedLibraryBlock"]
    assert padded["error"] is None, padded["error"]
    assert _errors(padded) == [], padded["diagnostics"]
    assert any(n.startswith("inputs taken time-first") for n in padded["notes"]), padded["notes"]
    from shapetrace.base.dims import Dims
    from shapetrace.drive.infer import infer_inputs
    from style_corpus import load

    module = load(Path(SEQUENCE_FIRST), "sequence_first_masks")
    specs = {s.name: s for s in infer_inputs(module.PaddedLibraryBlock, Dims())}
    assert specs["pad_mask"].dims == ("B", "T") and specs["pad_mask"].dtype == "bool"


@pytest.mark.parametrize("name", ["HelperReadsTimeFirst", "LayerAroundHelperAttention"])
def test_the_layout_is_read_where_the_input_is_handed_on_as_it_came(layouts, name):
    """A forward that hands its input to a helper function, or to a layer of its own class,
    takes the layout that code reads (``tgt_len, bsz, embed_dim = query.size()``)."""
    target = layouts[name]
    assert target["error"] is None and target["ok"], target["diagnostics"]
    assert not [d for d in target["diagnostics"] if d["rule"] == "batch-leak"]


def test_a_shape_read_after_the_input_s_first_axes_are_swapped_says_the_other_order(layouts):
    """``x = x.transpose(0, 1)`` then ``self.pe[:x.size(0)]``: the table is cut by the length,
    so the input comes batch-first; fed so, the module is clean (a stale docstring saying
    time-first is outranked by the code)."""
    assert _errors(layouts["TableAfterSwap"]) == [], layouts["TableAfterSwap"]["diagnostics"]
    assert _errors(layouts["TableCutByBatch"]) == ["position-axis"]


def test_a_pairwise_mask_unpacked_batch_first_says_nothing_of_the_sequences(layouts):
    encoder = layouts["TiledMaskEncoder"]
    assert encoder["error"] is None and _errors(encoder) == [], encoder["diagnostics"]
    assert any(n.startswith("inputs taken time-first") for n in encoder["notes"])
