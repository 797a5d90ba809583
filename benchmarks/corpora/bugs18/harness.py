"""Harness stubs for the bugs18 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# toynlp: the transformer takes a dataclass config (whose module imports tyro for its CLI) and a
# padding index. The probe fills the config from plain sizes, dropout 0, padding index 1.
HARNESS["b18_toynlp"] = {
    "tyro.py": PERMISSIVE,
    "probe_toynlp.py": probe('''from toynlp.transformer.config import TransformerConfig
from toynlp.transformer.model import TransformerModel


class ToyTransformer(TransformerModel):
    """toynlp's encoder-decoder transformer from plain sizes (padding index 1)"""
    def __init__(self, vocab_size, d_model, heads, layers=1, max_len=64):
        cfg = TransformerConfig(vocab_size=vocab_size, d_model=d_model, attention_d_k=d_model,
                                attention_d_v=d_model, head_num=heads, d_feed_forward=2 * d_model,
                                encoder_layers=layers, decoder_layers=layers, dropout_ratio=0.0,
                                max_source_seq_length=max_len, max_target_seq_length=max_len)
        super().__init__(cfg, padding_idx=1)'''),
}


# TransformerLens (2023): the attention component takes a HookedTransformerConfig. The package's
# __init__ and utils pull in the whole library (datasets, transformers, ...), so both get small
# stand-ins; fancy_einsum (named-axis einsum) and typeguard are not installed and get ours too.
# The probe builds the config from plain sizes as a GPT-J style rotary model, gives the weights
# (allocated with torch.empty) a normal init, and feeds the same x as query, key and value input.
_FANCY_EINSUM = '''"""stand-in for fancy_einsum: einsum with axis names instead of letters"""
import string
import torch


def einsum(equation, *operands):
    lhs, rhs = equation.split("->")
    names = {}
    def letters(part):
        out = ""
        for w in part.split():
            if w not in names:
                names[w] = string.ascii_letters[len(names)]
            out += names[w]
        return out
    ins = ",".join(letters(p) for p in lhs.split(","))
    return torch.einsum(ins + "->" + letters(rhs), *operands)
'''

_TL_UTILS = '''"""stand-in for transformer_lens.utils: the few helpers the components and config use"""
import numpy as np
import torch
import torch.nn.functional as F


def get_device():
    return torch.device("cpu")


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def gelu_fast(x):
    return 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))


def solu(x):
    return x * F.softmax(x, dim=-1)
'''

HARNESS["b18_tlens"] = {
    "fancy_einsum.py": _FANCY_EINSUM,
    "typeguard.py": '"""stand-in for typeguard"""\ndef typeguard_ignore(f):\n    return f\n',
    "typeguard-4.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: typeguard\nVersion: 4.0.0\n",
    "transformer_lens/utils.py": _TL_UTILS,
    "probe_tlens.py": probe('''import torch
import torch.nn as nn
from transformer_lens.HookedTransformerConfig import HookedTransformerConfig
from transformer_lens.components import Attention


class TLRotaryAttention(Attention):
    """TransformerLens attention, GPT-J style rotary, from plain sizes"""
    def __init__(self, d_model, n_heads, d_head, n_ctx):
        cfg = HookedTransformerConfig(n_layers=1, d_model=d_model, n_ctx=n_ctx, d_head=d_head,
                                      n_heads=n_heads, act_fn="gelu", d_vocab=16,
                                      positional_embedding_type="rotary",
                                      original_architecture="GPTJForCausalLM")
        super().__init__(cfg)
        g = torch.Generator().manual_seed(0)
        for p in (self.W_Q, self.W_K, self.W_V, self.W_O):
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * 0.2)

    def forward(self, x):
        return super().forward(x, x, x)'''),
}


# self-attention-cv (AI Summer), early 2021 layout: the block file uses relative imports inside the
# self_attention package, whose __init__ pulls in every other module; the probe imports the block
# through the package (its __init__ emptied by the case) and keeps the block's own forward.
HARNESS["b18_aisummer"] = {"probe_aisummer.py": probe('''from self_attention.transformer_vanilla.transformer_block import TransformerBlock


class AISummerBlock(TransformerBlock):
    """the vanilla transformer block of self-attention-cv, built from plain sizes"""
    def __init__(self, dim, heads):
        super().__init__(dim, heads=heads)''')}


# mozilla/TTS (late 2020): the Glow-TTS text encoder with its time-depth-separable conv stack and
# the optional conv prenet, from plain sizes. The prenet's last projection is zero-initialised
# (it starts as an identity around its residual), so the probe gives it a small random init, as
# training would, to make the prenet's weights matter.
HARNESS["b18_glowtts"] = {"probe_glowtts.py": probe('''import torch
from TTS.tts.layers.glow_tts.encoder import Encoder


class GlowTTSEncoder(Encoder):
    """Glow-TTS encoder (time-depth-separable convs, conv prenet) from plain sizes"""
    def __init__(self, num_chars, hidden_channels, out_channels):
        super().__init__(num_chars=num_chars, out_channels=out_channels, hidden_channels=hidden_channels,
                         hidden_channels_ffn=2 * hidden_channels, hidden_channels_dp=hidden_channels,
                         encoder_type="time_depth_separable", num_heads=2, num_layers=2, dropout_p=0.0,
                         use_prenet=True)
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            self.pre.proj.weight.copy_(torch.randn(self.pre.proj.weight.shape, generator=g) * 0.1)''')}


# lightly-train (2025): the DINOv2 ViT wrapper takes a built DinoVisionTransformer. The package's
# __init__ imports the whole training stack (cv2, torchvision, lightning) and is emptied by the
# case; lightning_utilities (used only to ask whether xformers is installed) gets a stand-in that
# says no. The probe builds a one-block ViT from plain sizes (patch 4) and returns the wrapper's
# patch feature map.
HARNESS["b18_lightly"] = {
    "src/lightning_utilities/__init__.py": EMPTY,
    "src/lightning_utilities/core/__init__.py": EMPTY,
    "src/lightning_utilities/core/imports.py": '''"""stand-in for lightning_utilities.core.imports: no optional requirement is installed"""
class RequirementCache:
    def __init__(self, requirement=None, module=None):
        self.requirement = requirement

    def __bool__(self):
        return False
''',
    "src/probe_lightly.py": probe('''from lightly_train._models.dinov2_vit.dinov2_vit import DINOv2ViTModelWrapper
from lightly_train._models.dinov2_vit.dinov2_vit_src.models.vision_transformer import DinoVisionTransformer


class DinoFeatureMap(DINOv2ViTModelWrapper):
    """lightly-train's DINOv2 wrapper around a small one-block ViT; returns the patch feature map"""
    def __init__(self, embed_dim, num_heads, img_size=16):
        super().__init__(DinoVisionTransformer(img_size=img_size, patch_size=4, embed_dim=embed_dim, depth=1,
                                               num_heads=num_heads, block_chunks=0))

    def forward(self, x):
        return self.forward_features(x)["features"]'''),
}
