"""Harness stubs for the bugs19 corpus (our own code): probes that import a class from the
extracted package, and stand-ins for compiled extensions the extracted files import. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# torch-harmonics: the package imports two compiled helper modules (attention_helpers,
# disco_helpers) and modules that register custom ops from them. The stand-ins say that no
# optimized kernels are available, so the pure-torch paths run; the optimized-op modules get
# placeholders that raise if ever called.
_TH_HELPERS = '''"""stand-in for a compiled torch-harmonics helper module: no optimized kernels"""
def optimized_kernels_is_available():
    return False


def cuda_kernels_is_available():
    return False


def preprocess_psi(*args, **kwargs):
    raise NotImplementedError("compiled helper not available in the primer harness")
'''
_TH_ATT_OPT = '''"""placeholder for the optimized attention op (compiled extension not built)"""
def _neighborhood_s2_attention_optimized(*args, **kwargs):
    raise NotImplementedError("compiled kernels not available in the primer harness")
'''
_TH_DISCO_OPT = '''"""placeholder for the optimized DISCO ops (compiled extension not built)"""
def _disco_s2_contraction_optimized(*args, **kwargs):
    raise NotImplementedError("compiled kernels not available in the primer harness")


_disco_s2_fused_conv_optimized = _disco_s2_contraction_optimized
_disco_s2_transpose_contraction_optimized = _disco_s2_contraction_optimized
'''
HARNESS["b19_torch_harmonics"] = {
    "attention_helpers.py": _TH_HELPERS,
    "disco_helpers.py": _TH_HELPERS,
    "torch_harmonics/attention/optimized/attention_optimized.py": _TH_ATT_OPT,
    "torch_harmonics/disco/optimized/disco_optimized.py": _TH_DISCO_OPT,
    "probe_th.py": probe("from torch_harmonics.attention.attention import AttentionS2"),
}

# lunariscodex: the model takes a config object; the probe builds it from plain sizes (one
# layer, dropout 0, LoRA rank 4).
HARNESS["b19_lunaris"] = {
    "probe_lunaris.py": probe('''from model import LunarisCodexConfig, LunarisMind


class LunarisProbe(LunarisMind):
    """LunarisMind from plain sizes"""
    def __init__(self, vocab_size, d_model, n_heads, n_layers=1, lora_rank=4):
        super().__init__(LunarisCodexConfig(vocab_size=vocab_size, d_model=d_model, n_layers=n_layers,
                                            n_heads=n_heads, dropout=0.0, lora_rank=lora_rank, max_seq_len=64))'''),
}

# takah29/transformer-pytorch: the decoder's masked self-attention. Before the fix the layer took
# masking=True and built its own look-ahead mask; after it, the caller passes attn_mask built with
# the class's own _subsequent_mask. The probe builds whichever the version has, dropout 0.
HARNESS["b19_takah"] = {
    "probe_takah.py": probe('''import inspect

from torch import nn

from libs.transformer import MultiheadAttention


class MaskedSelfAttention(nn.Module):
    """the decoder's masked self-attention of libs/transformer.py from plain sizes"""
    def __init__(self, n_dim, head_num):
        super().__init__()
        self.caller_mask = "masking" not in inspect.signature(MultiheadAttention.__init__).parameters
        if self.caller_mask:
            self.attn = MultiheadAttention(n_dim, head_num, dropout_rate=0.0)
        else:
            self.attn = MultiheadAttention(n_dim, head_num, masking=True, dropout_rate=0.0)

    def forward(self, x):
        if self.caller_mask:
            return self.attn(x, x, attn_mask=MultiheadAttention._subsequent_mask(x.shape[1]).to(x.device))
        return self.attn(x, x)'''),
}

# beyond-nanogpt: the MoE training script imports Hugging Face datasets at the top for its
# training loop (not installed here); a permissive stand-in beside the script.
HARNESS["b19_beyond_nanogpt"] = {
    "@/datasets.py": PERMISSIVE,
}

# klei22/nanoGPT: the attention variant takes the repository's GPTConfig (a dataclass with many
# switches) and forward(x, iter_num). The probe sets the sizes, dropout 0, QK-norm with its learned
# scale, and the non-flash (manual) attention path.
HARNESS["b19_klei22"] = {
    "probe_klei22.py": probe('''from gpt_conf import GPTConfig
from variations.attention_variations import CausalSelfAttention


class QKNormAttention(CausalSelfAttention):
    """klei22/nanoGPT CausalSelfAttention with QK-norm and its learned scale, manual attention path"""
    def __init__(self, n_embd, n_head, block_size=16):
        super().__init__(GPTConfig(n_embd=n_embd, n_head=n_head, n_kv_group=n_head, block_size=block_size,
                                   dropout=0.0, bias=False, use_qk_norm=True, use_qk_norm_scale=True,
                                   disable_flash_attention=True))

    def forward(self, x):
        return super().forward(x, None)'''),
}

# coqui-ai-TTS (idiap fork), tortoise layers: arch_utils imports torchaudio (not installed) and
# transformers.LogitsWarper (gone from the installed transformers) for code the attention does not
# use; a permissive torchaudio stand-in beside the probe, and the probe gives the installed
# transformers module an empty LogitsWarper class when it lacks one (the real module may already be
# loaded by another case in the same process, so a file stand-in would not be picked up). The probe
# projects x to q, k, v with a 1x1 convolution and calls QKVAttentionLegacy on a batch whose last
# two frames are padding, passing the mask in the form each version takes (a key mask before the
# fix, a square boolean mask after it).
HARNESS["b19_coqui_tortoise"] = {
    "torchaudio.py": PERMISSIVE,
    "probe_tortoise.py": probe('''import inspect

import torch
import transformers
from torch import nn

if not hasattr(transformers, "LogitsWarper"):
    transformers.LogitsWarper = type("LogitsWarper", (), {})

from TTS.tts.layers.tortoise.arch_utils import QKVAttentionLegacy  # noqa: E402


class PaddedQKVAttention(nn.Module):
    """tortoise QKVAttentionLegacy after a 1x1 qkv projection, last two frames of every sample padded"""
    def __init__(self, channels, n_heads, n_pad=2):
        super().__init__()
        self.qkv = nn.Conv1d(channels, 3 * channels, 1)
        self.attention = QKVAttentionLegacy(n_heads)
        self.n_pad = n_pad
        self.square_mask = "repeat(self.n_heads, 1, 1)" in inspect.getsource(QKVAttentionLegacy.forward)

    def forward(self, x):
        b, _, t = x.shape
        keep = torch.ones(b, t, dtype=torch.bool, device=x.device)
        keep[:, t - self.n_pad:] = False
        mask = keep[:, None, :].expand(b, t, t) if self.square_mask else keep.to(x.dtype)
        return self.attention(self.qkv(x), mask)'''),
}

# pytorch-GAT: GAT.py imports LayerType from utils/constants.py, which imports tensorboard (not
# installed) for its training constants; the stand-in holds just the enum. The probe runs
# implementation #2 of the GAT layer on a ring graph with self-loops (additive 0 / -1e9 mask),
# dropout 0, and returns the node features.
HARNESS["b19_pytorch_gat"] = {
    "models/__init__.py": EMPTY,
    "models/definitions/__init__.py": EMPTY,
    "utils/__init__.py": EMPTY,
    "utils/constants.py": '''"""stand-in for pytorch-GAT utils/constants.py: only the LayerType enum the layers use"""
import enum


class LayerType(enum.Enum):
    IMP1 = 0,
    IMP2 = 1,
    IMP3 = 2
''',
    "probe_gat.py": probe('''import torch

from models.definitions.GAT import GATLayerImp2


class GATImp2Probe(GATLayerImp2):
    """GAT layer implementation #2 on a ring graph with self-loops, dropout 0"""
    def __init__(self, num_in_features, num_out_features, num_of_heads):
        super().__init__(num_in_features, num_out_features, num_of_heads, dropout_prob=0.0)

    def forward(self, x):
        n = x.shape[0]
        eye = torch.eye(n, device=x.device, dtype=x.dtype)
        adj = eye + torch.roll(eye, 1, 0) + torch.roll(eye, -1, 0)
        connectivity_mask = torch.where(adj > 0, 0.0, -1e9).to(x.dtype)
        return super().forward((x, connectivity_mask))[0]'''),
}
