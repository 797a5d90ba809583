"""More randomly initialised Hugging Face architectures (and ViT, Whisper): correct attention, so no rule may flag them.

Tiny one-layer models built from configs at the probe sizes (nothing is downloaded), each checked
whole with ``shapetrace.check`` in eager and sdpa attention where the architecture has both, and
traced to show the eager attention is read. Bart is an encoder-decoder: its decoder is causal, its
encoder and cross-attention are not, and the input reaches decoder position 0 from every encoder
position without a causal leak.
"""

from __future__ import annotations

import logging

import pytest
import torch

import shapetrace as st
from shapetrace.analysis.facts import analyse
from shapetrace.base.dims import Dims

import transformers as tf  # noqa: E402 - a test extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

STRICT = ("softmax-axis", "attention-scale", "unnormalized-attention", "silent-broadcast",
          "discarded-result", "reversed-transpose", "non-finite", "dim-collision", "head-grouping",
          "causal-leak", "batch-leak")


@pytest.fixture(autouse=True)
def _quiet_transformers():
    logger = logging.getLogger("transformers")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)



def build(name, s, impl):
    C, H, d, V, L = s["C"], s["H"], s["d"], s["V"], s["L"]
    common = {"vocab_size": V, "attn_implementation": impl}
    if name == "mistral":
        return tf.MistralForCausalLM(tf.MistralConfig(hidden_size=C, num_attention_heads=H, num_key_value_heads=H, head_dim=d,
            num_hidden_layers=1, intermediate_size=2*C, max_position_embeddings=L, sliding_window=4, **common))
    if name == "qwen2":
        return tf.Qwen2ForCausalLM(tf.Qwen2Config(hidden_size=C, num_attention_heads=H, num_key_value_heads=2, head_dim=d,
            num_hidden_layers=1, intermediate_size=2*C, max_position_embeddings=L, **common))
    if name == "gemma":
        return tf.GemmaForCausalLM(tf.GemmaConfig(hidden_size=C, num_attention_heads=H, num_key_value_heads=H, head_dim=d,
            num_hidden_layers=1, intermediate_size=2*C, max_position_embeddings=L, **common))
    if name == "opt":
        return tf.OPTForCausalLM(tf.OPTConfig(hidden_size=C, num_attention_heads=H, num_hidden_layers=1, ffn_dim=2*C,
            word_embed_proj_dim=C, max_position_embeddings=L, **common))
    if name == "gptj":
        return tf.GPTJForCausalLM(tf.GPTJConfig(n_embd=C, n_head=H, n_layer=1, n_positions=L, rotary_dim=d, **common))
    if name == "bloom":
        return tf.BloomForCausalLM(tf.BloomConfig(hidden_size=C, n_head=H, n_layer=1, **common))
    if name == "falcon":
        return tf.FalconForCausalLM(tf.FalconConfig(hidden_size=C, num_attention_heads=H, num_hidden_layers=1,
            max_position_embeddings=L, **common))
    if name == "bart":
        return tf.BartModel(tf.BartConfig(d_model=C, encoder_attention_heads=H, decoder_attention_heads=H,
            encoder_layers=1, decoder_layers=1, encoder_ffn_dim=2*C, decoder_ffn_dim=2*C, max_position_embeddings=L, **common))
    if name == "distilbert":
        return tf.DistilBertModel(tf.DistilBertConfig(dim=C, n_heads=H, n_layers=1, hidden_dim=2*C, max_position_embeddings=L, **common))
    if name == "roberta":
        return tf.RobertaModel(tf.RobertaConfig(hidden_size=C, num_attention_heads=H, num_hidden_layers=1,
            intermediate_size=2*C, max_position_embeddings=L+2, **common))
    if name == "clip-text":
        return tf.CLIPTextModel(tf.CLIPTextConfig(hidden_size=C, num_attention_heads=H, num_hidden_layers=1,
            intermediate_size=2*C, max_position_embeddings=L, **common))
    if name == "phi":
        return tf.PhiForCausalLM(tf.PhiConfig(hidden_size=C, num_attention_heads=H, num_key_value_heads=H,
            num_hidden_layers=1, intermediate_size=2*C, max_position_embeddings=L, partial_rotary_factor=1.0, **common))
    raise KeyError(name)



#: Rotary embeddings need an even head size; Qwen2 groups 6 query heads over 2 key/value heads.
DIMS = {"mistral": {"d": 8}, "qwen2": {"d": 8, "H": 6}, "gemma": {"d": 8}, "gptj": {"d": 8},
        "phi": {"d": 8}, "falcon": {"d": 8}}
EAGER_ONLY = ("gptj", "bloom")  # no scaled_dot_product_attention in transformers for these
NAMES = ("mistral", "qwen2", "gemma", "opt", "gptj", "bloom", "falcon", "bart", "distilbert",
         "roberta", "clip-text", "phi")
CASES = [pytest.param(name, impl, id=f"{name}-{impl}") for name in NAMES
         for impl in ("eager", "sdpa") if not (impl == "sdpa" and name in EAGER_ONLY)]


def show(diagnostics) -> str:
    return "\n".join(f"{d.severity} {d.rule} {d.location}: {d.message}" for d in diagnostics)


@pytest.mark.parametrize(("name", "impl"), CASES)
def test_hugging_face_model_is_quiet(name, impl):
    torch.manual_seed(0)
    model = build(name, Dims(DIMS.get(name)), impl)
    report = st.check(model, inputs=["input_ids=B,T:long:V"], dims=DIMS.get(name))
    assert report.targets[0].error is None, report.targets[0].error
    assert not report.errors, show(report.diagnostics)
    assert not [d for d in report.diagnostics if d.rule in STRICT], show(report.diagnostics)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "bart"])
def test_eager_attention_is_read(name):
    """The quiet result above is not for lack of looking: each layer's attention is found."""
    sizes = Dims(DIMS.get(name))
    torch.manual_seed(0)
    model = build(name, sizes, "eager").eval()
    ids = torch.randint(0, sizes["V"], (sizes["B"], sizes["T"]))
    with st.trace(model, dims=DIMS.get(name)) as t:
        model(ids)
    found = analyse(t).attentions
    assert len(found) == 1, show(t.diagnostics)  # one layer
    assert found[0].scores is not None
    assert not [d for d in t.diagnostics if d.rule in STRICT or d.severity == "error"], \
        show(t.diagnostics)


def test_bart_attentions_are_read_and_decoder_is_not_a_leak():
    """Bart's three attentions (encoder, decoder, cross) are found; the decoder's causal mask
    does not make the whole encoder-decoder causal."""
    sizes = Dims(None)
    torch.manual_seed(0)
    model = build("bart", sizes, "eager").eval()
    ids = torch.randint(0, sizes["V"], (sizes["B"], sizes["T"]))
    with st.trace(model) as t:
        model(ids)
    assert len(analyse(t).attentions) == 3
    report = st.check(model, inputs=["input_ids=B,T:long:V"])
    notes = report.targets[0].notes
    assert not [d for d in report.diagnostics if d.rule == "causal-leak"], show(report.diagnostics)
    assert any("causal-leak not checked" in n and "encoder-decoder" in n for n in notes), notes
    declared = st.check(model, inputs=["input_ids=B,T:long:V"], causal=True, behaviour=True)
    assert [d for d in declared.diagnostics if d.rule == "causal-leak"]  # the encoder does leak


# --- ViT and Whisper ------------------------------------------------------------------------------

def vit(impl):
    s = Dims(None)
    return tf.ViTModel(tf.ViTConfig(hidden_size=s["C"], num_attention_heads=s["H"], num_hidden_layers=1,
                                    intermediate_size=2 * s["C"], image_size=28, patch_size=7,
                                    attn_implementation=impl))


class Whisper(torch.nn.Module):
    """WhisperModel called with the two inputs it needs, by keyword (its forward's second
    positional parameter is an attention mask)."""

    def __init__(self, d_model, n_head, vocab_size, max_source, impl="eager"):
        super().__init__()
        config = tf.WhisperConfig(d_model=d_model, encoder_attention_heads=n_head,
                                  decoder_attention_heads=n_head, encoder_layers=1, decoder_layers=1,
                                  encoder_ffn_dim=2 * d_model, decoder_ffn_dim=2 * d_model,
                                  vocab_size=vocab_size, num_mel_bins=8, max_source_positions=max_source,
                                  max_target_positions=32, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                  decoder_start_token_id=1, attn_implementation=impl)
        self.model = tf.WhisperModel(config)

    def forward(self, input_features, decoder_input_ids):
        return self.model(input_features=input_features,
                          decoder_input_ids=decoder_input_ids).last_hidden_state


WHISPER_INIT = {"d_model": "C", "n_head": "H", "vocab_size": "V", "max_source": "S"}
WHISPER_INPUTS = ["input_features=B,8,34", "decoder_input_ids=B,T:long:V"]  # 34 = 2*S frames


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_vit_is_quiet(impl):
    torch.manual_seed(0)
    report = st.check(vit(impl), inputs=["pixel_values=B,3,28,28"])
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.rule in STRICT or d.severity != "info"], \
        show(report.diagnostics)


def test_vit_eager_attention_is_read():
    torch.manual_seed(0)
    model = vit("eager").eval()
    with st.trace(model) as t:
        model(torch.randn(5, 3, 28, 28))
    (found,) = analyse(t).attentions
    assert found.scores is not None
    assert not [d for d in t.diagnostics if d.severity != "info"], show(t.diagnostics)


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_whisper_at_an_even_width_is_quiet(impl):
    """Whisper's sinusoidal positions need an even width: d=8 makes C=88."""
    report = st.check(Whisper, init={**WHISPER_INIT, "impl": impl}, inputs=WHISPER_INPUTS,
                      dims={"d": 8})
    assert report.targets[0].error is None, report.targets[0].error
    assert not [d for d in report.diagnostics if d.rule in STRICT or d.severity != "info"], \
        show(report.diagnostics)


def test_whisper_eager_attentions_are_read():
    sizes = Dims({"d": 8})
    torch.manual_seed(0)
    model = Whisper(sizes["C"], sizes["H"], sizes["V"], sizes["S"]).eval()
    with st.trace(model, dims={"d": 8}) as t:
        model(torch.randn(sizes["B"], 8, 2 * sizes["S"]),
              torch.randint(0, sizes["V"], (sizes["B"], sizes["T"])))
    assert len(analyse(t).attentions) == 3  # encoder, decoder, cross
    assert not [d for d in t.diagnostics if d.severity != "info"], show(t.diagnostics)


def test_whisper_at_the_default_width_is_built_at_an_even_one():
    """At C=143 WhisperModel refuses to build (its sinusoidal table needs an even width): it is
    built again at an even width, with a note saying so, and checked there."""
    (result,) = st.check(Whisper, init=WHISPER_INIT, inputs=WHISPER_INPUTS).targets
    assert result.error is None, result.error
    assert any("the constructor needs an even width" in n for n in result.notes)
    assert result.dims["C"] % 2 == 0
    assert not [d for d in result.diagnostics if d.severity == "error"], show(result.diagnostics)


def test_whisper_at_a_width_the_user_chose_is_a_target_error_with_the_way_out():
    """Sizes the user gives are never changed: at an odd C given with --dims, a target error in
    one line, naming transformers' check."""
    (result,) = st.check(Whisper, init=WHISPER_INIT, inputs=WHISPER_INPUTS,
                         dims={"H": 11, "d": 13}).targets
    assert result.error is not None and "\n" not in result.error
    assert "divisible by 2" in result.error and "modeling_whisper.py" in result.error
    assert not result.diagnostics
