"""Causal intent (SPEC section 3): the evidence that a module is meant to be causal survives the
bug it is there to catch, and a module with no evidence is not checked, with one note saying so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

import intent_models as im
import shapetrace as st
from shapetrace.base.names import causal_name

MODELS_FILE = Path(im.__file__)
X = ["x=B,T,C"]
CN = {"n_embd": "C", "n_head": "H"}


def leak_line(case: str) -> int:
    for number, text in enumerate(MODELS_FILE.read_text().splitlines(), start=1):
        if re.search(rf"# leak: {re.escape(case)}$", text):
            return number
    raise LookupError(case)


def not_checked(result) -> list[str]:
    return [n for n in result.notes if n.startswith("causal-leak not checked")]


# (class, init, inputs, init that fixes it)
CAUGHT = [
    pytest.param(im.CausalSelfAttention, CN, X, None, id="causal-name-no-mask"),
    pytest.param(im.CausalSDPA, CN, X, {**CN, "is_causal_flag": True}, id="sdpa-is-causal-false"),
    pytest.param(im.MiniGPT, None, ["idx=B,T:long:V"], {"masked": True}, id="gpt-name"),
    pytest.param(im.AutoRegressiveConv, {"d_model": "C"}, X, {"d_model": "C", "left_only": True},
                 id="autoregressive-conv"),
    pytest.param(im.FlaggedAttention, CN, X, {**CN, "apply": True}, id="causal-flag"),
    pytest.param(im.AutoregressiveArgument, CN, X, {**CN, "apply": True}, id="autoregressive-argument"),
    pytest.param(im.Block, CN, X, {**CN, "fixed": True}, id="submodule-name"),
    pytest.param(im.LinearAttention, {"d_model": "C", "n_head": "H", "leaky_normaliser": True}, X,
                 {"d_model": "C", "n_head": "H"}, id="linear-normaliser"),
]


@pytest.mark.parametrize(("cls", "init", "inputs", "fixed"), CAUGHT)
def test_forgotten_mask_is_caught_at_its_line(request, cls, init, inputs, fixed):
    result = st.check(cls, init=init, inputs=inputs).targets[0]
    assert result.error is None, result.error
    leaks = [d for d in result.diagnostics if d.rule == "causal-leak"]
    assert leaks, [(d.rule, d.line) for d in result.diagnostics]
    assert leaks[0].line == leak_line(request.node.callspec.id)
    assert not not_checked(result)


@pytest.mark.parametrize(("cls", "init", "inputs", "fixed"), [p for p in CAUGHT if p.values[3] is not None])
def test_the_fix_keeps_the_evidence_and_is_clean(cls, init, inputs, fixed):
    result = st.check(cls, init=fixed, inputs=inputs).targets[0]
    assert result.error is None, result.error
    assert result.ok, [(d.rule, d.line, d.message) for d in result.diagnostics if d.severity == "error"]
    assert not [d for d in result.diagnostics if d.rule == "causal-leak"]
    assert not not_checked(result), result.notes  # still checked: the fix removed no evidence


def test_the_masked_nanogpt_attention_is_checked_and_clean():
    result = st.check(im.CausalSelfAttentionMasked, init=CN, inputs=X).targets[0]
    assert result.ok and not result.diagnostics and not not_checked(result)


BIDIRECTIONAL = [
    pytest.param(im.TransformerDecoder, {"d_model": "C", "nhead": "H"}, "TransformerDecoder",
                 id="decoder-named-detr-style"),
    pytest.param(im.LengthRegulatedDecoder, {"d_model": "C", "nhead": "H"}, "LengthRegulatedDecoder",
                 id="duration-cumsum-fastpitch-style"),
    pytest.param(im.LinearAttention, {"d_model": "C", "n_head": "H", "bidirectional": True}, None,
                 id="bidirectional-linear-attention"),
    pytest.param(im.Attention, CN, None, id="says-causal-false"),
    pytest.param(im.StoredFlagOnly, CN, None, id="causal-flag-stored-never-read"),
]


@pytest.mark.parametrize(("cls", "init", "named"), BIDIRECTIONAL)
def test_bidirectional_module_is_not_called_causal_and_one_note_says_so(cls, init, named):
    result = st.check(cls, init=init, inputs=X).targets[0]
    assert result.error is None, result.error
    assert not [d for d in result.diagnostics if d.rule == "causal-leak"]
    (note,) = not_checked(result)
    assert "--causal" in note and "causal = true" in note
    if named:
        assert named in note and "bidirectional" in note


def test_declared_not_causal_overrides_the_name():
    result = st.check(im.CausalSelfAttention, init=CN, inputs=X, causal=False).targets[0]
    assert result.ok and not result.diagnostics
    assert not not_checked(result)


def test_declared_causal_checks_a_plain_decoder():
    result = st.check(im.TransformerDecoder, init={"d_model": "C", "nhead": "H"}, inputs=X,
                      causal=True).targets[0]
    assert [d.rule for d in result.diagnostics] == ["causal-leak"]
    assert not not_checked(result)


class LeftPaddedConv(im.AutoRegressiveConv):
    """Causal in practice (left padding only), but nothing says it is meant to be."""


def test_one_note_also_says_causal_in_practice():
    result = st.check(LeftPaddedConv, init={"d_model": "C", "left_only": True}, inputs=X).targets[0]
    assert result.ok and not result.diagnostics
    (note,) = [n for n in result.notes if "causal" in n]
    assert note.startswith("causal-leak not checked") and "causal in practice" in note


@pytest.mark.parametrize(("name", "causal"), [
    ("CausalSelfAttention", True), ("GPT", True), ("GPT2Model", True), ("NanoGPT", True),
    ("GPTNeoXForCausalLM", True), ("LlamaForCausalLM", True), ("AutoRegressiveDecoder", True),
    ("AutoregressiveTransformer", True), ("TransformerDecoder", False), ("Decoder", False),
    ("NonCausalConv", False), ("AcausalFilter", False), ("BertModel", False),
    ("MaskedLanguageModel", False), ("Encoder", False), ("ALiBiCausalAttention", True),
    ("NotCausalMixer", False), ("AntiCausalBlock", False),
])
def test_class_names(name, causal):
    assert causal_name(name) is causal


# --- Hugging Face models ----------------------------------------------------------------------

import transformers  # noqa: E402 - a test extra


def _gpt2():
    return transformers.GPT2Model(transformers.GPT2Config(n_embd=143, n_head=11, n_layer=1, vocab_size=19,
                                                          n_positions=23))


def _llama():
    return transformers.LlamaModel(transformers.LlamaConfig(
        hidden_size=48, num_attention_heads=6, num_key_value_heads=3, head_dim=8, num_hidden_layers=1,
        intermediate_size=96, vocab_size=19, max_position_embeddings=23))


def _bert():
    return transformers.BertModel(transformers.BertConfig(
        hidden_size=143, num_attention_heads=11, num_hidden_layers=1, intermediate_size=286,
        vocab_size=19, max_position_embeddings=23))


def _t5_encoder():
    return transformers.T5EncoderModel(transformers.T5Config(
        d_model=143, num_heads=11, d_kv=13, d_ff=286, num_layers=1, vocab_size=19))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("build", "dims", "causal"), [
    pytest.param(_gpt2, None, True, id="gpt2"),
    pytest.param(_llama, {"H": 6, "d": 8}, True, id="llama"),
    pytest.param(_bert, None, False, id="bert"),
    pytest.param(_t5_encoder, None, False, id="t5-encoder"),
])
def test_hugging_face_intent(build, dims, causal):
    result = st.check(build(), inputs=["input_ids=B,T:long:V"], dims=dims).targets[0]
    assert result.error is None, result.error
    mine = [d for d in result.diagnostics if d.rule in ("causal-leak", "batch-leak", "input-mutated")]
    assert not mine, [(d.rule, d.message) for d in mine]
    assert bool(not_checked(result)) is not causal, result.notes


# --- the note in every format ------------------------------------------------------------------


def test_note_in_json_and_text(capsys, monkeypatch):
    from shapetrace.frontends.cli import main

    monkeypatch.setenv("COLUMNS", "100")
    target = f"{MODELS_FILE}::TransformerDecoder"
    assert main([target, "--init", "d_model=C,nhead=H", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    notes = data["targets"][0]["notes"]
    assert len([n for n in notes if n.startswith("causal-leak not checked")]) == 1
    assert main([target, "--init", "d_model=C,nhead=H", "--no-trace"]) == 0
    out = capsys.readouterr().out
    assert "causal-leak not checked" in out and "TransformerDecoder" in out
    assert main([target, "--init", "d_model=C,nhead=H", "--no-trace", "--no-causal"]) == 0
    assert "causal-leak not checked" not in capsys.readouterr().out


def test_a_mask_that_lets_the_future_through_is_where_it_is_found_not_called_missing():
    path = Path(__file__).parent / "data" / "causal" / "inverted_mask.py"
    import importlib.util

    spec = importlib.util.spec_from_file_location("inverted_mask", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = st.check(module.CausalSelfAttention, init={"n_embd": "C", "n_head": "H"},
                      inputs=["x=B,T,C"])
    (leak,) = [d for d in report.targets[0].diagnostics if d.rule == "causal-leak"]
    mask_line = next(i for i, line in enumerate(path.read_text().splitlines(), 1)
                     if "att.masked_fill(" in line)
    assert "without a causal mask" not in leak.hint
    assert leak.line == mask_line and leak.data["inverted"] and "j > i" in leak.hint


class _Masked(torch.nn.Module):
    """One head of attention whose keep-mask (True where a query may look) ``seen`` builds."""

    def __init__(self, n_embd=143):
        super().__init__()
        self.qkv = torch.nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        pos = torch.arange(T)
        keep = self.seen(pos)
        scores = (q @ k.transpose(-2, -1) / C ** 0.5).masked_fill(~keep, float("-inf"))
        return scores.softmax(dim=-1) @ v


class _PrefixLM(_Masked):
    """Tokens see themselves and earlier tokens, and the first three see each other: read both
    ways on purpose, so not meant to be causal."""

    def seen(self, pos):
        return (pos[None, :] <= pos[:, None]) | (pos[None, :] < 3)


class _CausalWithPadding(_Masked):
    def seen(self, pos):
        return (pos[None, :] <= pos[:, None]) & (pos[None, :] < len(pos) - 1)  # last key padding


class _HiddenFutureOrPadding(_Masked):
    def seen(self, pos):
        return ~((pos[None, :] > pos[:, None]) | (pos[None, :] >= len(pos) - 1))


class _CausalReversedWithPadding(_Masked):
    def seen(self, pos):
        return (pos[None, :] >= pos[:, None]) & (pos[None, :] > 0)  # the future kept


def _causal_findings(cls):
    (result,) = st.check(cls, inputs=["x=B,T,C"]).targets
    return result, [d for d in result.diagnostics if d.rule == "causal-leak"]


def test_a_prefix_widened_by_or_is_no_sign_of_a_causal_module():
    result, found = _causal_findings(_PrefixLM)
    assert found == [] and any("causal-leak not checked" in n for n in result.notes)


@pytest.mark.parametrize("cls", [_CausalWithPadding, _HiddenFutureOrPadding])
def test_a_causal_comparison_combined_with_padding_is_still_causal(cls):
    result, found = _causal_findings(cls)
    assert found == [] and not any("causal-leak not checked" in n for n in result.notes)


def test_a_reversed_comparison_combined_with_padding_is_still_caught():
    _, found = _causal_findings(_CausalReversedWithPadding)
    assert len(found) == 1


class _PaddedScoresCutBack(torch.nn.Module):
    """Scores padded by two summary slots on each axis and cut back to (T, T): a square tensor
    of each sample's values, no mask, so nothing says the module is causal."""

    def __init__(self, n_embd):
        super().__init__()
        self.qkv = torch.nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        T = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.nn.functional.pad(q @ k.transpose(-2, -1), (0, 2, 0, 2))
        return scores[:, :T, :T].softmax(-1) @ v


def test_scores_padded_and_cut_back_are_no_sign_of_a_causal_module():
    result, found = _causal_findings(_PaddedScoresCutBack)
    assert found == [] and any("causal-leak not checked" in n for n in result.notes)


def test_a_triangle_torch_makes_to_test_a_mask_is_no_evidence():
    result = st.check(im.GroupedEncoder, init={"d_model": "C", "nhead": "H"}, inputs=X).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert not_checked(result), result.notes


def test_a_causal_mask_torch_makes_at_the_users_call_is_evidence():
    result = st.check(im.SquareSubsequentEncoder, init={"d_model": "C", "nhead": "H"}, inputs=X).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert not not_checked(result), result.notes
