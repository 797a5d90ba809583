"""Harness stubs for the bugs13 corpus (our own code): stand-ins for packages the extracted files
import but that are not installed, and probes that build a class from plain sizes. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# alphafold2: the package __init__ builds the whole model; se3_transformer_pytorch,
# invariant_point_attention, pytorch3d, sidechainnet/Bio (utils.py) are not installed and the
# modules probed here use none of them
_AF2_COMMON = {
    "alphafold2_pytorch/__init__.py": EMPTY,
    "se3_transformer_pytorch.py": PERMISSIVE,
    "invariant_point_attention.py": PERMISSIVE,
    "pytorch3d/__init__.py": EMPTY,
    "pytorch3d/transforms.py": PERMISSIVE,
    "alphafold2_pytorch/utils.py": EMPTY,  # its names (sidechainnet, Bio, mdtraj helpers) are unused here
}
_AF2_CROSS = probe('''from alphafold2_pytorch.alphafold2 import PreNormCross, Attention

class AF2CrossAttention(PreNormCross):
    """alphafold2's pre-norm cross-attention wrapper around its Attention (as the model uses it
    for sequence <-> MSA cross-attention)"""
    def __init__(self, dim, heads, dim_head):
        super().__init__(dim, Attention(dim=dim, heads=heads, dim_head=dim_head))

    def forward(self, x, context):
        return super().forward(x, context)''')
_AF2_TRI = probe('''from alphafold2_pytorch.alphafold2 import TriangleMultiplicativeModule''')
HARNESS["af2_cross"] = dict(_AF2_COMMON, **{"probe_af2.py": _AF2_CROSS})
HARNESS["af2_tri"] = dict(_AF2_COMMON, **{"probe_af2.py": _AF2_TRI})

# snowfall: k2, kaldialign and tensorboard are not installed; the conformer layer only needs
# torch. AcousticModel (the base of the whole-model classes) is a plain nn.Module here.
_SNOWFALL_MODELS_INIT = '''"""stand-in for snowfall.models (its interface imports tensorboard)"""
from torch import nn

class AcousticModel(nn.Module):
    pass
'''
_SNOWFALL_PROBE = probe('''from snowfall.models.conformer import ConformerEncoderLayer, RelPositionalEncoding

class ConformerPostNormLayer(ConformerEncoderLayer):
    """snowfall's conformer encoder layer with normalize_before=False (post-norm), fed the
    relative positional embedding the encoder computes for it; input (T, B, C) as in snowfall"""
    def __init__(self, d_model, nhead):
        super().__init__(d_model, nhead, dim_feedforward=32, dropout=0.0, cnn_module_kernel=3,
                         normalize_before=False)
        self.pos = RelPositionalEncoding(d_model, 0.0)

    def forward(self, src):
        _, pos_emb = self.pos(src.transpose(0, 1))
        return super().forward(src, pos_emb)''')
HARNESS["snowfall"] = {
    "k2.py": PERMISSIVE,
    "snowfall/__init__.py": EMPTY,
    "snowfall/common.py": PERMISSIVE,
    "snowfall/models/__init__.py": _SNOWFALL_MODELS_INIT,
    "probe_snowfall.py": _SNOWFALL_PROBE,
}

# speechbrain: the package __init__ pulls in the whole toolkit (yaml, data loading, soundfile,
# h5py); the transformer layers only use sb.nnet.MultiheadAttention / PositionalwiseFeedForward
_SB_PROBE = probe('''from speechbrain.lobes.models.transformer.Transformer import TransformerDecoderLayer

class SBDecoderLayer(TransformerDecoderLayer):
    """speechbrain's transformer decoder layer (post-norm), dropout off"""
    def __init__(self, d_ffn, nhead, embed_dim):
        super().__init__(d_ffn, nhead, embed_dim, dropout=0.0)

    def forward(self, tgt, memory):
        return super().forward(tgt, memory)[0]''')
HARNESS["speechbrain"] = {
    "speechbrain/__init__.py": '"""stand-in: only the layers the transformer uses"""\nfrom speechbrain import nnet\n',
    "speechbrain/nnet/__init__.py": '"""stand-in: only the layers the transformer uses"""\n'
                                    'from .attention import MultiheadAttention, PositionalwiseFeedForward\n',
    "speechbrain/data_io/__init__.py": EMPTY,
    "speechbrain/data_io/data_io.py": PERMISSIVE,
    "speechbrain/lobes/__init__.py": EMPTY,
    "speechbrain/lobes/models/__init__.py": EMPTY,
    "speechbrain/lobes/models/transformer/__init__.py": EMPTY,
    "probe_sb.py": _SB_PROBE,
}

# ParlAI: modules.py imports the agent framework (torch_generator_agent); the attention layer
# only uses neginf
_PARLAI_TORCH = '''"""stand-in for parlai.utils.torch: the two names modules.py imports"""
import torch

NEAR_INF = 1e20
NEAR_INF_FP16 = 65504

def neginf(dtype):
    if dtype is torch.float16:
        return -NEAR_INF_FP16
    return -NEAR_INF

class PipelineHelper:
    pass
'''
_PARLAI_PROBE = probe('''import torch
from parlai.agents.transformer.modules import BasicAttention

class ParlAIMaskedAttention(BasicAttention):
    """ParlAI's BasicAttention (scaled dot product, softmax over keys) given a key mask that
    marks the last key of every sample as padding"""
    def __init__(self):
        super().__init__(dim=2, attn='sqrt', get_weights=False)

    def forward(self, xs, ys):
        mask_ys = torch.ones(ys.shape[0], ys.shape[1], dtype=torch.long)
        mask_ys[:, -1] = 0
        return super().forward(xs, ys, mask_ys=mask_ys)''')
HARNESS["parlai"] = {
    "parlai/__init__.py": EMPTY,
    "parlai/agents/__init__.py": EMPTY,
    "parlai/agents/transformer/__init__.py": EMPTY,
    "parlai/core/__init__.py": EMPTY,
    "parlai/core/torch_generator_agent.py": '"""stand-in: the base class of the generator model"""\nfrom torch import nn\n\nclass TorchGeneratorModel(nn.Module):\n    pass\n',
    "parlai/utils/__init__.py": EMPTY,
    "parlai/utils/misc.py": PERMISSIVE,
    "parlai/utils/torch.py": _PARLAI_TORCH,
    "probe_parlai.py": _PARLAI_PROBE,
}

# xformers is not installed. ops: memory-efficient attention on (batch, seq, heads, head_dim)
# done with torch's SDPA; LowerTriangularMask = causal. components.positional_embedding: the
# RotaryEmbedding of xformers as released in 2023, which takes q and k as
# (batch, heads, seq, head_dim): the angle grows along dim -2 (xformers issue #841)
_XOPS = '''"""stand-in for xformers.ops: memory_efficient_attention on (batch, seq, heads, head_dim)"""
import torch
import torch.nn.functional as F


class AttentionBias:
    pass


class LowerTriangularMask(AttentionBias):
    pass


def memory_efficient_attention(query, key, value, attn_bias=None, p=0.0, scale=None):
    q, k, v = (t.transpose(1, 2) for t in (query, key, value))
    causal = isinstance(attn_bias, LowerTriangularMask)
    mask = None if causal or isinstance(attn_bias, AttentionBias) else attn_bias
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)
    return out.transpose(1, 2).contiguous()  # xformers returns a contiguous (batch, seq, heads, head_dim)
'''
_XROTARY = '''"""stand-in for xformers.components.positional_embedding.RotaryEmbedding as released in 2023:
q and k are taken as (batch, heads, seq, head_dim); the rotation angle grows along dim -2"""
import torch


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class RotaryEmbedding(torch.nn.Module):
    def __init__(self, dim_model, *_, **__):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim_model, 2).float() / dim_model)))

    def forward(self, q, k):
        n = k.shape[-2]
        t = torch.arange(n, device=k.device, dtype=torch.float32)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq.to(k.dtype))
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None, :, :].to(k.dtype), emb.sin()[None, None, :, :].to(k.dtype)

        def rot(x):
            c, s = cos[:, :, : x.shape[-2], :], sin[:, :, : x.shape[-2], :]
            return x * c + _rotate_half(x) * s

        return rot(q), rot(k)
'''
_XFORMERS = {
    "xformers/__init__.py": EMPTY,
    "xformers/ops.py": _XOPS,
    "xformers/components/__init__.py": EMPTY,
    "xformers/components/positional_embedding/__init__.py": "from .rotary import RotaryEmbedding\n",
    "xformers/components/positional_embedding/rotary.py": _XROTARY,
}
_OPENLM_PROBE = probe('''from open_lm.model import CustomAttn, Params

class OpenLMAttention(CustomAttn):
    """open_lm's causal self-attention (fused qkv, rotary, xformers attention) with its Params
    built from plain sizes"""
    def __init__(self, dim, n_heads):
        super().__init__(0, Params(dim=dim, n_heads=n_heads, seq_len=64))

    def forward(self, x):
        return super().forward(x, is_causal=True)''')
HARNESS["open_lm"] = dict(_XFORMERS, **{"probe_openlm.py": _OPENLM_PROBE})

# GATr's baseline transformer: the gatr package __init__s build the geometric-algebra layers
# (basis files, opt_einsum); the baseline block only needs the rotary encoding module and the
# SDPA dispatcher, which here calls torch's SDPA (the upstream one does the same unless given an
# xformers bias)
_GATR_ATTN = '''"""stand-in for gatr.primitives.attention: scaled_dot_product_attention on
[batch, head, item, d] through torch (the upstream dispatcher's torch path)"""
from torch.nn.functional import scaled_dot_product_attention as torch_sdpa


def scaled_dot_product_attention(query, key, value, attn_mask=None):
    return torch_sdpa(query, key, value, attn_mask=attn_mask)
'''
_GATR_PROBE = probe('''from gatr.baselines.transformer import BaselineTransformerBlock

class GATrBaselineBlock(BaselineTransformerBlock):
    """GATr's baseline transformer block (pre-norm, multi-query attention), no mask"""
    def forward(self, inputs):
        return super().forward(inputs)''')
HARNESS["gatr"] = {
    "gatr/__init__.py": EMPTY,
    "gatr/baselines/__init__.py": EMPTY,
    "gatr/layers/__init__.py": "from .attention.positional_encoding import ApplyRotaryPositionalEncoding\n",
    "gatr/layers/attention/__init__.py": EMPTY,
    "gatr/primitives/__init__.py": EMPTY,
    "gatr/primitives/attention.py": _GATR_ATTN,
    "gatr/utils/__init__.py": EMPTY,
    "probe_gatr.py": _GATR_PROBE,
}

_AF2_ATTN = probe('''from alphafold2_pytorch.alphafold2 import Attention

class AF2GatedAttention(Attention):
    """alphafold2's (gated) self-attention, no mask"""
    def forward(self, x):
        return super().forward(x)''')
HARNESS["af2_attn"] = dict(_AF2_COMMON, **{"probe_af2.py": _AF2_ATTN})

# EGG: egg/core/__init__ pulls in the whole game framework (trainers, callbacks, interaction
# logging); the transformer module only imports find_lengths from egg.core.util, which the
# base encoder does not call
_EGG_PROBE = probe('''from egg.core.transformer import TransformerBaseEncoder''')
HARNESS["egg"] = {
    "egg/__init__.py": EMPTY,
    "egg/core/__init__.py": EMPTY,
    "egg/core/util.py": PERMISSIVE,
    "probe_egg.py": _EGG_PROBE,
}

# MONAI GenerativeModels: the UNet file imports MONAI's Convolution and Pool factories (MONAI is
# not installed); the transformer blocks do not use them
_MONAI_PROBE = probe('''from generative.networks.nets.diffusion_model_unet import BasicTransformerBlock

class MonaiTransformerBlock(BasicTransformerBlock):
    """the diffusion UNet's transformer block (self-attention, cross-attention to a context, GEGLU
    feed-forward), context of the same width as the channels"""
    def __init__(self, num_channels, num_attention_heads, num_head_channels):
        super().__init__(num_channels, num_attention_heads, num_head_channels, cross_attention_dim=num_channels)''')
HARNESS["monai_gen"] = {
    "monai/__init__.py": EMPTY,
    "monai/networks/__init__.py": EMPTY,
    "monai/networks/blocks.py": PERMISSIVE,
    "monai/networks/layers/__init__.py": EMPTY,
    "monai/networks/layers/factories.py": PERMISSIVE,
    "generative/__init__.py": EMPTY,
    "generative/networks/__init__.py": EMPTY,
    "generative/networks/nets/__init__.py": EMPTY,
    "probe_monai_gen.py": _MONAI_PROBE,
}
