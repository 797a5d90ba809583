"""Properties every correct module has, checked on the values of a run: the buggy modules of
tests/data/valueprops break one at the line marked ``# BUG``; the correct ones stay quiet."""

import sys
from pathlib import Path

import pytest

from shapetrace.drive.targets import resolve_targets
import resolved

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "valueprops"


_check = resolved.report


def _marked(path: Path, cls: str) -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, t in enumerate(lines)
                 if t.startswith((f"class {cls}(", f"def {cls}(")))
    for number in range(start, len(lines)):
        if "# BUG" in lines[number]:
            return number + 1
    raise AssertionError(f"no # BUG marker in {cls}")


NEW_RULES = {"constant-result", "stateful-forward", "weight-without-effect", "mask-ignored",
             "positions-ignored", "residual-missing"}
PADDED = {"inputs": ["x=B,T,C", "attention_mask=B,T:long:2"]}
KEY_PADDING = {"inputs": ["x=B,T,C", "key_padding_mask=B,T:bool"]}
BOOL_MASK = {"inputs": ["x=B,T,C", "mask=B,T:bool"]}

FIRING = [
    ("collapse.py", "DiagonalWeights", "constant-result", {}),
    ("collapse.py", "NormOverScore", "constant-result", {}),
    ("collapse.py", "SumNormalisedOverScore", "constant-result", {}),
    # a softmax layer whose constructor chose the size-1 axis: found at the line that built it
    ("collapse.py", "AdditiveOverSizeOne", "constant-result", {}),
    # scores against a learned vector (one column: no key of the input's) normalised over it
    ("collapse.py", "ScoredByWeightVector", "constant-result", {}),
    ("state.py", "ShiftAddedToBias", "stateful-forward", {}),
    ("state.py", "CallCounterBuffer", "stateful-forward", {}),
    # a bias cached on the first call and added again from the second on, beside a harmless
    # cached mask: the finding names the bias, where it is made and where the next call reads it
    ("state.py", "CachedBiasAttention", "stateful-forward", {}),
    ("reach.py", "MlpResultLost", "weight-without-effect", {}),
    ("reach.py", "GateTimesZero", "weight-without-effect", {}),
    # parts of a weight: only one head of a fused projection, only a diagonal
    ("reach.py", "OneHeadKept", "weight-without-effect", {}),
    ("reach.py", "MixingDiagonal", "weight-without-effect", {}),
    # the same features of every head dropped from q and k (the rest of a partial rotation cut
    # as the last features): found where they are cut away
    ("reach.py", "PartialRotaryKeepsTheEnd", "weight-without-effect", {"dims": {"H": 4, "d": 16}}),
    # a vector (the final norm's scale) whose value path is dropped: the head reads the stream
    ("reach.py", "FinalNormLost", "weight-without-effect", {}),
    # a layer's result read only by a check, on no path handed back
    ("reach.py", "SummaryNeverReturned", "weight-without-effect", {}),
    # a codebook whose values go on past a straight-through estimator's detach, into a result
    # its caller binds and never reads: found at the call
    ("reach.py", "CodesLeftUnused", "weight-without-effect", {}),
    # a learned bias computed, cached in a buffer for later calls, and dropped on every call
    ("reach.py", "DistanceBiasCachedAndDropped", "weight-without-effect", {}),
    ("masks.py", "PaddingMaskUnused", "mask-ignored", PADDED),
    # attention pooling: the mask multiplied into the scores, read from the code as 1 = keep
    ("masks.py", "MaskedPoolingScoresMultiplied", "mask-ignored", BOOL_MASK),
    # read from the code (True = keep / True = masked out), applied to the queries' rows
    ("masks.py", "PaddingMaskOnQueries", "mask-ignored", PADDED),
    ("masks.py", "KeyPaddingOnQueries", "mask-ignored", KEY_PADDING),
    ("masks.py", "SdpaMaskOnQueries", "mask-ignored", BOOL_MASK),
    # the mask's meaning read where forward hands it: a fast path that applies it and a
    # default path that never does; a submodule that applies it to the queries' rows
    ("masks.py", "KeyMaskOnFastPathOnly", "mask-ignored", BOOL_MASK),
    ("masks.py", "KeyMaskHandedToSubmoduleOnQueries", "mask-ignored",
     {"inputs": ["x=B,T,C", "pad_mask=B,T:bool"]}),
    # rotary tables cut by the batch at B = 2, a size the halves of a head share: the positions
    # shuffled leave every output as it was
    ("positions.py", "RotaryOneAnglePerSample", "positions-ignored",
     {"dims": {"B": 2, "H": 4, "d": 8}}),
    # the table asked for as many positions as heads, with one head: every token turned alike,
    # so reordering the tokens only reorders the outputs; found where the table was asked for
    ("positions.py", "RotaryCountedByHeads", "positions-ignored", {"dims": {"H": 1, "d": 16}}),
    # the mask cast to floats for a mean pooling, and never given to the encoder before it
    ("masks.py", "MeanPooledEncoderMaskOnlyPooled", "mask-ignored", BOOL_MASK),
    # a mask of no stated meaning, read (reshaped, padded for a null key, made a bias) and
    # then left out: found where the attention was called without it, or at its softmax
    ("masks.py", "PreparedMaskNeverPassed", "mask-ignored", BOOL_MASK),
    ("masks.py", "PreparedMaskLeftBeside", "mask-ignored", BOOL_MASK),
    # blocks whose input reaches the output only through the sublayers: found at the product
    # that cut the stream, else where the output was made (the line that called the sublayer)
    ("residual.py", "AttentionFedOn", "residual-missing", {}),
    ("residual.py", "StreamTimesFeedForward", "residual-missing", {}),
    ("residual.py", "FeedForwardWithoutSkip", "residual-missing", {}),
    ("residual.py", "TorchAttentionFedOn", "residual-missing", {}),
    ("residual.py", "CrossAttentionWithoutSkip", "residual-missing", {"inputs": ["x=B,T,C", "context=B,S,C"]}),
    ("residual.py", "OwnCrossAttentionWithoutSkip", "residual-missing", {"inputs": ["x=B,T,C", "context=B,S,C"]}),
]
QUIET = [
    ("collapse.py", "ContractedWeights", {}),
    ("collapse.py", "TopOneRouter", {}),
    ("collapse.py", "SumNormalisedOverPositions", {}),
    ("collapse.py", "AdditiveOverSteps", {}),
    ("collapse.py", "ScoredOverTokens", {}),
    ("state.py", "AnglesEachCall", {}),
    ("state.py", "ShiftAddedToOutput", {}),
    ("state.py", "LazyTableForMaxLength", {}),
    ("state.py", "KeepsLastAttention", {}),
    ("state.py", "CachedBiasAttentionFixed", {}),
    ("reach.py", "MlpResultUsed", {}),
    # a layer's result handed back only when the caller asks: a side output, not a dropped one
    ("reach.py", "SummaryOnRequest", {}),
    ("reach.py", "CodesUsed", {}),
    ("reach.py", "ZeroInitGate", {}),
    ("reach.py", "FinalNormUsed", {}),
    ("reach.py", "FrozenTeacherAndCache", {}),
    ("reach.py", "AuxiliaryLossKept", {}),
    # a buffer written for later calls: its weights are judged by the next call's output
    ("reach.py", "DistanceBiasCachedAndUsed", {}),
    ("reach.py", "SummaryForNextCall", {}),
    # parts of a weight idle by design: half a projection used in training only, the upper
    # triangle of a causal mixing matrix, a key/value head shared by every query head
    ("reach.py", "MeanOnlyInEval", {}),
    ("reach.py", "CausalTokenMixing", {}),
    ("reach.py", "GroupedHeadsAllUsed", {}),
    ("reach.py", "PartialRotaryKeepsTheRest", {"dims": {"H": 4, "d": 16}}),
    # a weight that weighs zeros in this call (no previous step given yet) is not judged
    ("reach.py", "LocationFromPreviousWeights", {}),
    # a weight of no elements (a conditioning width of 0) holds nothing that could move anything
    ("reach.py", "ConditionWidthZero", {}),
    # detached steps and a flat softmax: the query moves the output only a little, not nothing
    ("reach.py", "GreedyFlatDecoder", {}),
    # attention over the one pixel an image of 4 x 4 leaves after downsampling: weighs it 1
    ("reach.py", "PixelAttentionAfterDownsampling", {"inputs": ["x=B,3,4,4"]}),
    ("masks.py", "PaddedSelfAttention", PADDED),
    ("masks.py", "PaddingMaskSdpa", PADDED),
    ("masks.py", "PaddingMaskAdditive", PADDED),
    ("masks.py", "PaddingThenConv", PADDED),
    # 1 = padding is a convention too: a mask that changes the output is not judged undeclared
    ("masks.py", "PaddingMaskOneIsPadding", PADDED),
    ("masks.py", "KeyPadding", KEY_PADDING),
    ("masks.py", "SdpaMaskOnKeys", BOOL_MASK),
    # the mask hides outputs, not keys: not judged as a key mask
    ("masks.py", "OutputsMaskedOnly", PADDED),
    ("masks.py", "KeyMaskHandedToMethod", BOOL_MASK),
    ("masks.py", "MaskedPooling", BOOL_MASK),
    ("masks.py", "MeanPooledEncoder", BOOL_MASK),
    ("masks.py", "MaskedPoolingWeightsMultiplied", BOOL_MASK),
    ("masks.py", "PoolingWithCoordinatesFilledWrapped", BOOL_MASK),
    ("masks.py", "KeyMaskHandedToSubmodule", {"inputs": ["x=B,T,C", "pad_mask=B,T:bool"]}),
    # the same masks applied, by either convention; one a signature takes and never reads; one
    # read only for the lengths
    *[("masks.py", cls, BOOL_MASK) for cls in (
        "PreparedMaskPassed", "PaddingMarkedTrue", "MaskTakenAndLeft", "MaskOnlyCounted")],
    # positions made into tables in the forward, each row where its token is
    ("positions.py", "RotaryOnePerToken", {"dims": {"B": 2, "H": 4, "d": 8}}),
    ("positions.py", "RotaryTimeFirstHelper", {"dims": {"B": 2, "H": 4, "d": 8}}),
    ("positions.py", "RotaryTimeFirstHelper", {}),
    ("positions.py", "LearnedPositionsLookedUp", {}),
    ("positions.py", "RelativeBiasLookedUp", {}),
    ("positions.py", "SinusoidalAddedInForward", {"dims": {"C": 32}}),
    ("positions.py", "TimeStepFeatures", {"dims": {"C": 32}}),
    ("positions.py", "RotaryCountedByTokens", {"dims": {"H": 1, "d": 16}}),
    # residual designs: pre- and post-norm, einsum and fused attention with a gated
    # feed-forward, parallel sublayers, a learned gate, scaled branches, a decoder block with a
    # context, sublayers kept in a list, torch's own layer
    *[("residual.py", cls, {}) for cls in (
        "PreNorm", "PostNorm", "EinsumPreNorm", "FusedPreNorm", "Parallel", "HighwayGated",
        "ScaledBranches", "Layers", "TorchEncoderLayer")],
    ("residual.py", "CrossAttending", {"inputs": ["x=B,T,C", "context=B,S,C"]}),
    # not blocks: an attention alone, a block between input and output layers, a projected skip
    *[("residual.py", cls, {}) for cls in ("AttentionAlone", "ProjectedInAndOut", "ProjectedSkip",
                                           "GatedOutputAttention", "ScoreBiasNetwork",
                                           "AttentionThenRegressionHead")],
    # mixes samples by design (batch-leak says so): only the diagonal must not be reported
    ("collapse.py", "InBatchPositives", {"batch_mixing": True}),
]


@pytest.mark.parametrize("file, cls, rule, options", FIRING, ids=[c[1] for c in FIRING])
def test_property_fires_at_the_marked_line(file, cls, rule, options):
    report = _check(f"{DATA / file}::{cls}", **options)
    assert report.targets[0].error is None
    found = [d for d in report.diagnostics if d.rule == rule]
    assert found, [(d.rule, d.line, d.message) for d in report.diagnostics]
    assert _marked(DATA / file, cls) in {d.line for d in found}


@pytest.mark.parametrize("file, cls, options", [(f, c, dict(o)) for f, c, o in QUIET], ids=[c[1] for c in QUIET])
def test_correct_module_stays_quiet(file, cls, options):
    mixing = options.pop("batch_mixing", False)
    report = _check(f"{DATA / file}::{cls}", **options)
    assert report.targets[0].error is None
    assert mixing or report.ok, [(d.rule, d.line, d.message) for d in report.errors]
    mine = [d for d in report.diagnostics if d.rule in NEW_RULES]
    assert not mine, [(d.rule, d.line, d.message) for d in mine]


def test_state_built_from_the_first_call_is_found_on_a_module_not_yet_called():
    """A table scaled by the first call's length: seen when the behaviour checks get the module
    before its first call (``check()`` traces one call first, which already builds the table)."""
    import torch

    from shapetrace.behaviour import run_behaviour

    def built(cls):
        (target,) = resolve_targets(f"{DATA / 'state.py'}::{cls}", root=ROOT)
        return target.cls(143)

    found = run_behaviour(built("AnglesFromFirstLength"), [torch.randn(5, 7, 143)], causal=None)
    hits = [d for d in found.diagnostics if d.rule == "stateful-forward"]
    assert hits and hits[0].line == _marked(DATA / "state.py", "AnglesFromFirstLength")
    quiet = run_behaviour(built("AnglesEachCall"), [torch.randn(5, 7, 143)], causal=None)
    assert not quiet.diagnostics


def test_a_torchscript_helper_is_traced_as_python_and_put_back():
    """The helper's ops are recorded at their own lines (the failing multiply inside the
    scripted function, not the line that called it), and it is compiled again afterwards."""
    import torch

    spec = f"{DATA / 'scripted.py'}::RotaryScriptedWrongAxis"
    report = _check(spec, dims={"H": 3, "d": 8})
    failed = [d for d in report.diagnostics if d.rule == "op-failed"]
    assert failed and failed[0].line == _marked(DATA / "scripted.py", "apply_rotary_wrong")
    quiet = _check(f"{DATA / 'scripted.py'}::RotaryScripted", dims={"H": 3, "d": 8})
    assert quiet.ok, [(d.rule, d.line, d.message) for d in quiet.errors]
    (target,) = resolve_targets(spec, root=ROOT)
    helpers = sys.modules[target.cls.__module__]
    assert isinstance(helpers.apply_rotary_wrong, torch.jit.ScriptFunction)
    assert isinstance(helpers.rotate_half, torch.jit.ScriptFunction)


def test_a_weight_touched_on_purpose_with_zero_times_its_sum_is_not_reported():
    report = _check(f"{ROOT / 'tests' / 'data' / 'registry' / 'models.py'}::SpareLayerTouched")
    assert report.targets[0].error is None
    assert not [d for d in report.diagnostics if d.rule == "weight-without-effect"]


def test_a_mask_read_from_the_code_is_judged_where_it_is_applied():
    """The finding names how forward reads the mask and the op that lets the masked positions
    through; it is at the op that applied the mask."""
    report = _check(f"{DATA / 'masks.py'}::KeyPaddingOnQueries", **KEY_PADDING)
    (found,) = [d for d in report.diagnostics if d.rule == "mask-ignored"]
    assert "forward reads it as True/1 = masked out" in found.message, found.message
    assert "scores.masked_fill(hidden, -1e4)" in found.message
    used = next(i for i, t in enumerate((DATA / "masks.py").read_text().splitlines(), 1)
                if t.strip().startswith("y = scores.softmax(-1) @ v") and i > found.line)
    assert f"masks.py:{used} mixes them in" in found.message
    assert "[:, None, None, :]" in found.hint


@pytest.mark.parametrize("cls, words", [
    ("OneHeadKept", "`qkv.weight`: only head 0 of its"),
    ("MixingDiagonal", "`mix`: only its diagonal"),
])
def test_a_part_of_a_weight_is_named_with_the_op_that_dropped_the_rest(cls, words):
    report = _check(f"{DATA / 'reach.py'}::{cls}")
    (found,) = [d for d in report.diagnostics if d.rule == "weight-without-effect"]
    assert words in found.message and found.data["end"] == "part", found.message
    assert "reads a value that depends on them and returns one that does not" in found.message


def test_a_mask_never_applied_is_placed_at_the_softmax_used_at_the_weighted_sum():
    """The fix goes before the softmax that took the weights; the weighted sum is where the
    padded keys were mixed in."""
    report = _check(f"{DATA / 'masks.py'}::KeyMaskOnFastPathOnly", **BOOL_MASK)
    (found,) = [d for d in report.diagnostics if d.rule == "mask-ignored"]
    softmax = _marked(DATA / "masks.py", "KeyMaskOnFastPathOnly")
    assert found.line == softmax and found.used_at is not None, (found.line, found.used_at)
    assert found.used_at[1] == softmax + 1 and "never applied" in found.message


def test_a_scripted_helper_whose_callee_was_defined_again_stays_compiled():
    """Traced as Python it would call the later definition and broadcast the batch against
    itself: what the module computes is the compiled one."""
    result = _check(f"{DATA / 'scripted_rebound.py'}::ConditionedOutput",
                    inputs=["x=B,T,C", "c=B,C"]).targets[0]
    assert result.error is None and not result.diagnostics, result.diagnostics


def test_a_mask_handed_to_the_base_class_forward_is_read_there():
    """``super().forward(x, None, mask)``: the mask's meaning is read in the base class's
    forward, where it is multiplied into the scores; the finding is at that line."""
    report = _check(f"{DATA / 'masks.py'}::PoolingWithCoordinatesWrapped", **BOOL_MASK)
    found = [d for d in report.diagnostics if d.rule == "mask-ignored"]
    assert [d.line for d in found] == [_marked(DATA / "masks.py", "PoolingWithCoordinates")], \
        [(d.rule, d.line, d.message) for d in report.diagnostics]
    assert "-inf" in found[0].hint


def test_a_vector_the_softmax_removes_is_no_weight_without_effect():
    """A vector whose contribution a softmax takes out again ends in a collapse, not a dropped
    result: weight-without-effect says nothing of it (attention-textbook names the term)."""
    report = _check(f"{DATA / 'reach.py'}::KeyBiasRemovedBySoftmax")
    rules = {d.rule for d in report.diagnostics}
    assert "weight-without-effect" not in rules and "attention-textbook" in rules, rules
