"""Token ids annotated as floats (``Float[Tensor, "batch seq"]``): a table indexed by them
refuses floats, and they are read again as token ids, with a note; a (batch, seq) input that is
used as real values keeps its annotation."""

from __future__ import annotations

import shapetrace as st

def test_ids_annotated_as_floats_are_read_as_token_ids():
    from tests.data.annotated_ids.lm import AnnotatedLM

    result = st.check(AnnotatedLM).targets[0]
    assert result.error is None, result.error
    assert any("in_indices read as token ids: as floats" in n for n in result.notes), result.notes
    looked_up = [r for r in result.trace.records if r.op == "[]"]
    assert looked_up and str(looked_up[0].inputs[1].dtype) == "torch.int64"
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics


def test_real_values_annotated_as_floats_stay_floats():
    from tests.data.annotated_ids.lm import ScaledFeatures

    result = st.check(ScaledFeatures).targets[0]
    assert result.error is None, result.error
    assert not any("read as token ids" in n for n in result.notes), result.notes
