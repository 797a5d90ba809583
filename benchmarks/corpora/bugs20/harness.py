"""Harness stubs for the bugs20 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for package __init__ files that import heavy dependencies. Runs inside run.py with
probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# reczoo/FuxiCTR: before the fix the multi-head self-attention lives in fuxictr/pytorch/layers/
# attention.py (attention_dim is the per-head size); the fix moves it into models/AutoInt.py
# (attention_dim is the total width). The package __init__ files import the whole library, so the
# probe gets small stand-ins: layers re-exports attention.py, models gives nn.Module as BaseModel.
_FUXI_LAYERS = '''"""stand-in for fuxictr.pytorch.layers: only the attention module is extracted"""
from .attention import *


class _Unused:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("not extracted by the primer harness")


MLP_Layer = EmbeddingLayer = LR_Layer = _Unused
'''
_FUXI_MODELS = '''"""stand-in for fuxictr.pytorch.models: the model base class only"""
from torch.nn import Module as BaseModel
'''
HARNESS["b20_fuxictr"] = {
    "fuxictr/__init__.py": EMPTY,
    "fuxictr/pytorch/__init__.py": EMPTY,
    "fuxictr/pytorch/layers/__init__.py": _FUXI_LAYERS,
    "fuxictr/pytorch/models/__init__.py": _FUXI_MODELS,
    "probe_fuxictr.py": probe('''from torch import nn

from fuxictr.pytorch.models import AutoInt as _autoint
from fuxictr.pytorch.layers import attention as _attention


class FuxiSelfAttention(nn.Module):
    """the multi-head self-attention of either version from plain sizes (no residual projection:
    input width = heads x head size), scaled, dropout 0"""
    def __init__(self, input_dim, num_heads):
        super().__init__()
        head_dim = input_dim // num_heads
        if hasattr(_attention, "MultiHeadSelfAttention"):   # before the fix: per-head size
            self.attn = _attention.MultiHeadSelfAttention(input_dim, attention_dim=head_dim, num_heads=num_heads,
                                                          use_residual=True, use_scale=True, align_to="output")
        else:                                                # the fix: total width
            self.attn = _autoint.MultiHeadSelfAttention(input_dim, attention_dim=input_dim, num_heads=num_heads,
                                                        use_residual=True, use_scale=True)

    def forward(self, X):
        return self.attn(X)'''),
}

# xiangking/ark-nlp: the package __init__ files import the whole library (transformers, ...); the
# GlobalPointer module needs only its sibling position_embedding_block.
HARNESS["b20_ark"] = {
    "ark_nlp/__init__.py": EMPTY,
    "ark_nlp/nn/__init__.py": EMPTY,
    "ark_nlp/nn/layer/__init__.py": EMPTY,
    "probe_ark.py": probe("from ark_nlp.nn.layer.global_pointer_block import GlobalPointer"),
}

# lucidrains/sinkhorn-transformer: the module imports `gcd` from `fractions`, which Python 3.9
# removed; the probe puts math.gcd there first. The package __init__ imports the wrappers.
HARNESS["b20_sinkhorn"] = {
    "sinkhorn_transformer/__init__.py": EMPTY,
    "probe_sinkhorn.py": probe('''import fractions
import math

if not hasattr(fractions, "gcd"):
    fractions.gcd = math.gcd

from sinkhorn_transformer.sinkhorn_transformer import LocalAttention'''),
}

# lucidrains/Mega-pytorch: the module imports scipy.fftpack.next_fast_len (scipy is not installed
# here). The stand-in returns the length asked for, which is all the FFT convolution needs.
HARNESS["b20_mega"] = {
    "@/scipy/__init__.py": '"""stand-in for scipy (not installed): only fftpack.next_fast_len"""\n',
    "@/scipy/fftpack.py": ('"""stand-in for scipy.fftpack"""\n\n\n'
                           'def next_fast_len(target):\n'
                           '    """any length at least target is valid; this returns target itself"""\n'
                           '    return int(target)\n'),
}

# lucidrains/rotary-embedding-torch: the library has no attention module of its own; the probe is a
# plain multi-head self-attention of ours whose queries and keys are rotated with the library's
# RotaryEmbedding and apply_rotary_emb.
HARNESS["b20_rotary"] = {
    "probe_rotary.py": probe('''import torch
from torch import nn

from rotary_embedding_torch.rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb


class RotarySelfAttention(nn.Module):
    """multi-head self-attention with rotary queries and keys (our own wrapper)"""
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.to_out = nn.Linear(dim, dim)
        self.rotary = RotaryEmbedding(dim // heads)

    def forward(self, x):
        b, t, c = x.shape
        h = self.heads
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
        freqs = self.rotary(torch.arange(t, device=x.device))
        q = apply_rotary_emb(freqs, q)
        k = apply_rotary_emb(freqs, k)
        attn = (q @ k.transpose(-2, -1) * (c // h) ** -0.5).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, t, c)
        return self.to_out(out)'''),
}
